"""String-level exact match (SLEM, seed 004 Algorithm 2): the drafter writes text in its own
vocabulary, the text is re-tokenized for the target (with the look-behind realignment of Section
3.2), and the target keeps the candidates that equal its own samples, plus one sample of its own:
the one walk (walk.py) over that chain with the draw-match rule (docs/rules.md, "SLEM").

K (candidates) counts TARGET tokens: the drafter drafts until its text re-tokenizes to more than
K target tokens, so that the last kept candidate is complete, or until it has spent
DRAFT_TOKENS_PER_CANDIDATE * K tokens.
"""

from dataclasses import dataclass

from ...decoding.vocabulary import Continuation, tokenize_continuation
from ..base import Decoding, Method
from ..drafting import Drafted, chain, one_hots
from ..rules import OwnDrawMatch
from ..walk import timed_round, verify
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
    kept = Continuation(candidates.tokens[:budget], candidates.spans[:budget], candidates.realigned)
    return DraftText(ids, pieces, kept)


def drafted_text(ctx: Decoding, context: DraftContext) -> tuple[DraftText, Drafted]:
    """A round's draft text and its candidates, the text cut into target tokens, as a chain."""
    text = draft_text(ctx, context, ctx.block_size(ctx.config.candidates))
    candidates = text.candidates.tokens
    return text, chain(candidates, one_hots(candidates, ctx.target.vocab_size, ctx.target.device), None,
                       notes=[text.provenance(i) for i in range(len(candidates))], forwards=len(text.ids))


def slem_steps(ctx: Decoding):
    context, proposed, pair = DraftContext(ctx), [], pair_figures(ctx)
    while ctx.remaining() > 0:
        resynced = context.sync(ctx.ids, proposed)
        done = timed_round(lambda: drafted_text(ctx, context),
                           lambda drafted: verify(ctx, drafted[1], OwnDrawMatch(), ctx.ids))
        (text, drafted), walk = done.drafted, done.walk
        accepted = len(walk.path)
        step = walk.step(drafted, draft_seconds=done.draft_seconds, verify_seconds=done.verify_seconds,
                         forwards={ctx.draft.name: len(text.ids), ctx.target.name: 1},
                         extra={"draft_tokens": len(text.ids), "draft_pieces": list(text.pieces),
                                "draft_chars": len(text.text),
                                "chars_accepted": text.candidates.spans[accepted - 1][1] if accepted else 0,
                                "realignments": int(text.candidates.realigned), "draft_resync_chars": resynced})
        step.pair, pair = pair, None  # on the first step only
        yield step
        proposed = [([token], piece) for token, piece in zip(text.ids, text.pieces)]


# The confidence stop ends a block after a draft token the draft doubts; a draft token here may
# be a byte of a target token, so the stop would end blocks inside target tokens (a byte draft
# stopped after 'T' of 'The'). SLEM's drafts take only the levers of the draft model itself.
SLEM = Method("slem", slem_steps, "heterogeneous vocabularies: draft text re-tokenized for the target, "
              "exact-match verification (seed 004, Alg. 2)", vocabulary="any",
              options=("candidates", "draft_sampling"), levers=("draft_int8", "draft_vocab"))
