"""String-level exact match (SLEM, seed 004 Algorithm 2): the drafter writes text in its own
vocabulary, the text is re-tokenized for the target (with the look-behind realignment of Section
3.2), and the target keeps the candidates that equal its own samples, plus one sample of its own.

K (candidates) counts TARGET tokens: the drafter drafts until its text re-tokenizes to more than
K target tokens, so that the last kept candidate is complete, or until it has spent
DRAFT_TOKENS_PER_CANDIDATE * K tokens.
"""

import time
from dataclasses import dataclass

from ...sampling import raw_probs
from ...step import Step, TokenRecord
from ...vocabulary import Continuation, tokenize_continuation
from ..acceptance import DrawMatch
from ..base import Decoding, Method
from ..evidence import evidence
from ..speculative import Verified, bonus_record
from .common import draft_probs, pair_figures
from .context import DraftContext

DRAFT_TOKENS_PER_CANDIDATE = 8


@dataclass
class DraftText:
    ids: list[int]  # the drafter's tokens
    pieces: list[str]  # the text each of them adds
    candidates: Continuation  # that text in target tokens

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def provenance(self, index: int) -> dict:
        """Which draft tokens produced target candidate `index`, and its text."""
        start, end = self.candidates.spans[index]
        produced, offset = [], 0
        for token, piece in zip(self.ids, self.pieces):
            if offset < end and offset + len(piece) > start:
                produced.append(token)
            offset += len(piece)
        return {"draft_tokens": produced, "draft_text": self.text[start:end]}


def draft_text(ctx: Decoding, context: DraftContext, budget: int) -> DraftText:
    ids, pieces = [], []
    detokenizer = context.detokenizer()
    candidates = Continuation([], [], False)
    stop_ids = {ctx.draft_tokenizer.eos_token_id}
    for _ in range(budget * DRAFT_TOKENS_PER_CANDIDATE):
        logits = ctx.draft.next_logits(context.ids + ids)[-1]
        token = ctx.sampler.draw(draft_probs(ctx, logits))
        ids.append(token)
        pieces.append(detokenizer.push(token))
        if token in stop_ids:
            break
        if pieces[-1]:
            candidates = tokenize_continuation(ctx.target_tokenizer, ctx.ids, "".join(pieces))
            if len(candidates.tokens) > budget:
                break
        if candidates.tokens and ctx.doubts(raw_probs(logits), token):
            break  # only once there is something to verify: a draft token may be part of one
    kept = Continuation(candidates.tokens[:budget], candidates.spans[:budget], candidates.realigned)
    return DraftText(ids, pieces, kept)


def exact_match(ctx: Decoding, drafted: DraftText, p) -> Verified:
    """Algorithm 2, lines 9-11: keep candidates while they equal the target's own samples."""
    verified = Verified([], [], [])
    for i, candidate in enumerate(drafted.candidates.tokens):
        sample = ctx.sampler.draw(p[i])
        diagnostics = {"p_target": float(p[i, sample]), "position_in_block": i}
        matched = sample == candidate
        verified.flags.append(matched)
        verified.evidence.append(evidence("target", i, candidate, "accepted" if matched else "rejected", sample,
                                          {"verifier_draw": sample}, {"p": p[i]}, None if matched else "p",
                                          DrawMatch(sample, candidate)))
        if matched:
            verified.records.append(TokenRecord(sample, "draft", diagnostics={**diagnostics, **drafted.provenance(i)}))
            continue
        verified.records.append(TokenRecord(sample, "target",
                                            diagnostics={**diagnostics, "rejected_candidate": candidate}))
        return verified
    n = len(drafted.candidates.tokens)
    verified.records.append(bonus_record(ctx, p[n], n))
    return verified


def slem_steps(ctx: Decoding):
    context, proposed, pair = DraftContext(ctx), [], pair_figures(ctx)
    while ctx.remaining() > 0:
        resynced = context.sync(ctx.ids, proposed)
        budget = ctx.block_size(ctx.config.candidates)
        start = time.perf_counter()
        drafted = draft_text(ctx, context, budget)
        drafted_at = time.perf_counter()
        n = len(drafted.candidates.tokens)
        p = ctx.sampler.probs(ctx.target.next_logits(ctx.ids + drafted.candidates.tokens, positions=n + 1))
        verified = exact_match(ctx, drafted, p)
        accepted = sum(verified.flags)
        yield Step(verified.records, drafted=n, accepted=accepted, accepted_flags=verified.flags,
                   evidence=verified.evidence,
                   draft_seconds=drafted_at - start, verify_seconds=time.perf_counter() - drafted_at,
                   forwards={ctx.draft.name: len(drafted.ids), ctx.target.name: 1}, pair=pair,
                   extra={"draft_tokens": len(drafted.ids), "draft_pieces": list(drafted.pieces),
                          "draft_chars": len(drafted.text),
                          "chars_accepted": drafted.candidates.spans[accepted - 1][1] if accepted else 0,
                          "realignments": int(drafted.candidates.realigned), "draft_resync_chars": resynced})
        proposed, pair = [([token], piece) for token, piece in zip(drafted.ids, drafted.pieces)], None


SLEM = Method("slem", slem_steps, "heterogeneous vocabularies: draft text re-tokenized for the target, "
              "exact-match verification (seed 004, Alg. 2)", vocabulary="any",
              options=("candidates", "draft_sampling"))
