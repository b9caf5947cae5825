"""Standard speculative decoding's rule (Leviathan et al. 2023, Chen et al. 2023; seed 001) as a
check of one candidate, and the draft-then-verify loop that fsd and tli run it in, each with its
own rule (sd itself verifies a token tree: token_trees.py).

Names follow the papers: `p` is the target distribution, `q` the draft's.
"""

import time
from dataclasses import dataclass, field

import torch

from ..divergence import divergence
from ..sampling import raw_probs, residual
from ..step import Evidence, Step, TokenRecord
from .acceptance import Ratio
from .base import Decoding
from .drafting import draft
from .evidence import Pending, evidence_of


@dataclass
class Drafted:
    tokens: list[int]
    q: torch.Tensor  # [k, vocab] the distributions the tokens were actually sampled from
    q_raw: torch.Tensor  # [k, vocab] temperature-1 softmax, for divergences


@dataclass
class Candidate:
    """One drafted token at block position `index`, with everything a rule may look at."""

    index: int
    token: int
    p: torch.Tensor
    q: torch.Tensor
    p_raw: torch.Tensor
    q_raw: torch.Tensor
    divergence: float


@dataclass
class Verdict:
    accepted: bool
    origin: str = "draft"  # for an accepted token: "draft", or "rescued" (CSD)
    replacement: int | None = None  # for a rejection: the token emitted instead
    diagnostics: dict = field(default_factory=dict)
    test: object = None  # the rule's acceptance test (acceptance.py): its numbers, whether it held, its words
    drawn_from: str = "verifier"  # what a correction is drawn from: the verifier's own distribution, or "residual"
    distributions: dict = field(default_factory=dict)  # name -> row: any other distribution the rule used


# Distribution names by role, as in the papers.
SYMBOLS = {"target": "p", "draft": "q", "qualifier": "r"}


def draft_block(ctx: Decoding, runner, k: int) -> Drafted:
    """Draft k tokens autoregressively (drafting.py), keeping each q the token was drawn from."""
    block = draft(ctx, runner, k)
    return Drafted(block.tokens, block.q, block.q_raw)


@dataclass
class Verified:
    """What verifying a block produced: the emitted records (with the correction, without a bonus
    token), whether each checked candidate was accepted, and the evidence of each check."""

    records: list[TokenRecord]
    flags: list[bool]
    evidence: list[Evidence]


def verify_block(ctx: Decoding, drafted: Drafted, p: torch.Tensor, p_raw: torch.Tensor, check,
                 verifier: str = "target", proposer: str = "draft") -> Verified:
    """Run `check(candidate) -> Verdict` over the drafted tokens in order, stopping at the first
    rejection. `p`/`p_raw` have one more row than there are candidates. Both sides are cut to the
    smaller vocabulary: ids past it are padding (models.py masks them to probability 0)."""
    vocab = min(p.shape[-1], drafted.q.shape[-1])
    divergences = divergence(ctx.config.divergence, p_raw[:len(drafted.tokens), :vocab],
                             drafted.q_raw[:, :vocab]).tolist()
    verified, pending = Verified([], [], []), []
    for i, token in enumerate(drafted.tokens):
        candidate = Candidate(i, token, p[i, :vocab], drafted.q[i, :vocab], p_raw[i, :vocab],
                              drafted.q_raw[i, :vocab], divergences[i])
        verdict = check(candidate)
        diagnostics = _diagnostics(candidate, verdict)
        verified.flags.append(verdict.accepted)
        pending.append(_evidence(candidate, verdict, verifier, proposer))
        if verdict.accepted:
            verified.records.append(TokenRecord(token, verdict.origin, diagnostics=diagnostics))
            continue
        diagnostics["rejected_candidate"] = token
        diagnostics[f"p_{verifier}"] = float(p[i, verdict.replacement])
        verified.records.append(TokenRecord(verdict.replacement, verifier, diagnostics=diagnostics))
        break
    verified.evidence = evidence_of(pending)
    for record, e in zip(verified.records, verified.evidence):  # the candidate's probabilities, read once
        v, d = SYMBOLS[verifier], SYMBOLS[proposer]
        record.diagnostics = {"p_target": e.at_candidate[v], "p_target_raw": e.at_candidate[f"{v}_raw"],
                              "p_draft": e.at_candidate[d], **record.diagnostics}
    return verified


def _evidence(c: Candidate, verdict: Verdict, verifier: str, proposer: str) -> Pending:
    v, d = SYMBOLS[verifier], SYMBOLS[proposer]
    rows = {v: c.p, d: c.q, f"{v}_raw": c.p_raw, f"{d}_raw": c.q_raw, **verdict.distributions}
    outcome = verdict.origin if verdict.origin == "rescued" else "accepted" if verdict.accepted else "rejected"
    emitted = c.token if verdict.accepted else verdict.replacement
    drawn_from = None if verdict.accepted else v if verdict.drawn_from == "verifier" else verdict.drawn_from
    return Pending(verifier, c.index, c.token, outcome, emitted, {"divergence": c.divergence, **verdict.diagnostics},
                   rows, drawn_from, verdict.test)


def _diagnostics(c: Candidate, verdict: Verdict) -> dict:
    """What a record says of its check beside the candidate's probabilities (added from its evidence)."""
    return {"divergence": c.divergence, "position_in_block": c.index, **verdict.diagnostics}


def bonus_record(ctx: Decoding, p_last: torch.Tensor, index: int, origin: str = "target",
                 p_raw_last: torch.Tensor | None = None) -> TokenRecord:
    token = ctx.sampler.draw(p_last)
    raw = {} if p_raw_last is None else {"p_target_raw": float(p_raw_last[token])}
    return TokenRecord(token, origin, diagnostics={"p_target": float(p_last[token]), **raw, "bonus": True,
                                                   "position_in_block": index})


def speculative_steps(ctx: Decoding, check, drafter=None):
    """The draft-then-verify loop of fsd and tli (sd and csd verify a token tree, token_trees.py):
    draft K, one target forward over them, apply `check` to each candidate in turn, add the bonus
    token if all were kept. `drafter(ctx, k)
    -> Drafted` replaces drafting with ctx.draft on ctx.ids (tli drafts in another vocabulary; a
    prompt lookup, ctx.lookup, drafts with no model)."""
    drafter = drafter or ctx.lookup or (lambda ctx, k: draft_block(ctx, ctx.draft, k))
    while ctx.remaining() > 0:
        start = time.perf_counter()
        drafted = drafter(ctx, ctx.block_size(ctx.config.candidates))
        drafted_at = time.perf_counter()
        k = len(drafted.tokens)
        logits = ctx.target.next_logits(ctx.ids + drafted.tokens, positions=k + 1)
        p, p_raw = ctx.sampler.probs(logits), raw_probs(logits)
        verified = verify_block(ctx, drafted, p, p_raw, check)
        records, flags = verified.records, verified.flags
        if all(flags):
            records.append(bonus_record(ctx, p[k], k, p_raw_last=p_raw[k]))
        yield Step(records, drafted=k, accepted=sum(flags), accepted_flags=flags,
                   draft_seconds=drafted_at - start, verify_seconds=time.perf_counter() - drafted_at,
                   forwards={**({ctx.draft.name: k} if ctx.draft else {}), ctx.target.name: 1},
                   extra=lookup_figures(ctx), evidence=verified.evidence)


def lookup_figures(ctx: Decoding) -> dict:
    """A prompt-lookup round's figure: the n of the n-gram it matched (0: none, the target stepped alone)."""
    return {"ngram_match": ctx.lookup.matched} if ctx.lookup else {}


def sd_check(ctx: Decoding):
    """Accept x with probability min(1, p(x)/q(x)); on rejection draw from norm(max(0, p - q))."""
    def check(c: Candidate) -> Verdict:
        accept_prob = min(1.0, float(c.p[c.token] / c.q[c.token]))
        correction_from = {"residual": residual(c.p, c.q)}
        test = Ratio(accept_prob, ctx.sampler.uniform())
        if test.held:
            return Verdict(True, diagnostics={"accept_prob": accept_prob}, test=test, distributions=correction_from)
        correction = ctx.sampler.draw(correction_from["residual"])
        return Verdict(False, replacement=correction, diagnostics={"accept_prob": accept_prob}, test=test,
                       drawn_from="residual", distributions=correction_from)
    return check
