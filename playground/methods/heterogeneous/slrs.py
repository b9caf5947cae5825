"""String-level rejection sampling (SLRS, seed 004 Algorithm 3, Sections 3.3-3.4).

The drafter samples draft tokens until the first target token of their text is settled (the
lookahead rule below); that first token t is the proposal. Its exact probability psi(t) is found
by enumerating the draft-token sequences whose text can start with t (one draft forward per tree
node, pruned to strings compatible with t). Accept t with min(1, p(t) / psi(t)); otherwise draw
from norm(max(0, p - psi)) by drawing t ~ p and keeping it with probability 1 - psi(t) / p(t),
which needs psi only for the tokens actually drawn. When MAX_RESIDUAL_DRAWS draws all fail (the
residual carries little mass Z; this happens with probability Z (1 - Z)^1000 <= 3.7e-4 per step),
the residual is computed outright from psi of every token p can emit: slow with a large target
vocabulary, but exact, so the method stays exactly lossless.

The lookahead rule: stop after a draft token whose text re-tokenizes to two or more target tokens,
after a draft token without text (end of text, a special token, half a character), or after
`lookahead` draft tokens. Any stopping rule keeps the method lossless as long as psi enumerates
the same rule, which it does.

Enumeration is capped at ENUMERATION_CAP tree nodes per psi(t). When the cap is hit, t is treated
as a token the drafter never proposes (psi(t) = 0: a proposal of t is rejected and t stays in the
residual). Whether the cap is hit depends only on the context and t, never on the random draws,
so this fallback is still exactly lossless; the step record counts the cap hits.

One target token per step: after the first token, the rest of the drafted text need not split
into draft tokens the way it was sampled (Section 3.3, "Block verification is non-trivial").
"""

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from ...decoding.sampling import raw_probs, residual
from ...decoding.step import Evidence, Step, TokenRecord
from ...decoding.vocabulary import max_token_chars, token_strings
from ...errors import PlaygroundError
from ..acceptance import StringRatio
from ..base import Decoding, Method
from ..evidence import evidence
from .common import draft_probs, pair_figures
from .context import DraftContext

MAX_DRAFT_TOKEN_CHARS = 4  # psi's enumeration grows exponentially with the drafter's token length
MAX_LOOKAHEAD = 12
ENUMERATION_CAP = 256
MAX_RESIDUAL_DRAWS = 1000


class TargetSplitter:
    """The first target token of each text, and how many target tokens the text has.

    A first token that is not a prefix of the text (the tokenizer normalized or dropped
    characters) is reported as None, no proposal: psi's enumeration prunes by that same prefix
    rule, so proposal and psi stay consistent and the method stays lossless."""

    def __init__(self, tokenizer):
        self.tokenizer, self.strings = tokenizer, token_strings(tokenizer)

    def __call__(self, texts: list[str]) -> list[tuple[int | None, int]]:
        encoded = self.tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
        return [(self._prefix_token(text, ids), len(ids)) for text, ids in zip(texts, encoded)]

    def _prefix_token(self, text: str, ids: list[int]) -> int | None:
        first = ids[0] if ids else None
        prefix = first is not None and self.strings[first] is not None and text.startswith(self.strings[first])
        return first if prefix else None


@dataclass
class StringProposer:
    """Algorithm 3's proposal and its exact probability psi, for one context."""

    draft_q: Callable[[tuple[int, ...]], torch.Tensor]  # the drafter's q after a path of draft tokens
    draft_strings: tuple[str | None, ...]
    split: Callable[[list[str]], list[tuple[int | None, int]]]
    target_strings: tuple[str | None, ...]
    lookahead: int
    cap: int = ENUMERATION_CAP
    cap_hits: int = 0
    enumerated: list[int] = field(default_factory=list)  # tree nodes visited per psi computed
    _q: dict = field(default_factory=dict)
    _psi: dict = field(default_factory=dict)

    def q(self, path: tuple[int, ...]) -> torch.Tensor:
        if path not in self._q:
            self._q[path] = self.draft_q(path)
        return self._q[path]

    def _stops(self, path: tuple[int, ...], token: int, target_tokens: int) -> bool:
        return self.draft_strings[token] is None or len(path) + 1 >= self.lookahead or target_tokens >= 2

    def _text(self, text: str, token: int) -> str:
        return text + (self.draft_strings[token] or "")

    def sample(self, draw: Callable[[torch.Tensor], int]) -> tuple[tuple[int, ...], float, int | None]:
        """Draft until the lookahead rule stops; return the path, its probability and the proposal."""
        path, text, probability = (), "", 1.0
        while True:
            q = self.q(path)
            token = draw(q)
            text, probability = self._text(text, token), probability * float(q[token])
            first, count = self.split([text])[0] if text else (None, 0)
            if self._stops(path, token, count):
                return path + (token,), probability, first
            path += (token,)

    def psi(self, token: int) -> float | None:
        """P(proposal = token), or None when the enumeration hit the cap. Memoized per context."""
        if token not in self._psi:
            self._psi[token] = self._enumerate(token)
        return self._psi[token]

    def _enumerate(self, token: int) -> float | None:
        goal = self.target_strings[token]
        if goal is None:
            return 0.0
        total, visited, stack = 0.0, 0, [((), "", 1.0)]
        while stack:
            path, text, probability = stack.pop()
            visited += 1
            if visited > self.cap:
                self.cap_hits += 1
                self.enumerated.append(visited - 1)
                return None
            q = self.q(path)
            children = self._towards(goal, text, q)
            texts = [self._text(text, d) for d in children]
            for d, child_text, (first, count) in zip(children, texts, self.split(texts)):
                child_probability = probability * float(q[d])
                if not self._stops(path, d, count):
                    stack.append((path + (d,), child_text, child_probability))
                elif first == token:
                    total += child_probability
        self.enumerated.append(visited)
        return total

    def _towards(self, goal: str, text: str, q: torch.Tensor) -> list[int]:
        """Draft tokens with q > 0 after which the text can still start with `goal`."""
        children = []
        for d in q.nonzero().flatten().tolist():
            piece = self.draft_strings[d]
            if piece is None:
                if text.startswith(goal):
                    children.append(d)
                continue
            child = text + piece
            if child.startswith(goal) or goal.startswith(child):
                children.append(d)
        return children


@dataclass
class Outcome:
    token: int
    accepted: bool
    proposal: int | None
    path: tuple[int, ...]
    psi: float | None
    accept_prob: float | None  # None: rejected without a ratio (no proposal, psi skipped or capped)
    residual_draws: int = 0


def string_rejection_sample(p: torch.Tensor, proposer: StringProposer, sampler) -> Outcome:
    """Algorithm 3, lines 4-8, for one target token. The drafted path is one of the sequences psi
    sums over, so psi(proposal) >= its probability: when u >= p(proposal) / P(path) the proposal
    is rejected without enumerating psi (the capped psi would reject it too)."""
    path, path_probability, proposal = proposer.sample(sampler.draw)
    u = sampler.uniform()
    psi = None
    if proposal is not None and u * path_probability < float(p[proposal]):
        psi = proposer.psi(proposal)
    accept_prob = min(1.0, float(p[proposal]) / psi) if psi else None
    if accept_prob is not None and u < accept_prob:
        return Outcome(proposal, True, proposal, path, psi, accept_prob)
    token, draws = residual_draw(p, proposer, sampler)
    return Outcome(token, False, proposal, path, psi, accept_prob, draws)


def residual_draw(p: torch.Tensor, proposer: StringProposer, sampler) -> tuple[int, int]:
    """An exact draw from norm(max(0, p - psi)): draw t ~ p, keep it with probability
    1 - psi(t)/p(t). Each failed try is independent of the token a later one keeps, so if every
    try fails, a draw from the enumerated residual is just as exact (residual_draws then exceeds
    MAX_RESIDUAL_DRAWS in the step record)."""
    support = p.nonzero().flatten()
    if len(support) == 1:
        return int(support[0]), 0
    for draws in range(1, MAX_RESIDUAL_DRAWS + 1):
        token = sampler.draw(p)
        if sampler.uniform() < 1.0 - (proposer.psi(token) or 0.0) / float(p[token]):
            return token, draws
    return sampler.draw(enumerated_residual(p, proposer, support.tolist())), MAX_RESIDUAL_DRAWS + 1


def enumerated_residual(p: torch.Tensor, proposer: StringProposer, support: list[int]) -> torch.Tensor:
    """norm(max(0, p - psi)) with psi of every token p can emit (a capped psi counts as 0, as in
    the proposal)."""
    psi = torch.zeros_like(p)
    for token in support:
        psi[token] = proposer.psi(token) or 0.0
    return residual(p, psi)


def lookahead_for(draft_strings, target_strings) -> int:
    """Seed 004, Section 3.3: n_max draft tokens settle any first target token, bounded."""
    longest_target = max((len(s) for s in target_strings if s), default=1)
    shortest_draft = min((len(s) for s in draft_strings if s), default=1)
    return min(math.ceil(longest_target / shortest_draft) + 1, MAX_LOOKAHEAD)


def check_drafter(ctx: Decoding) -> None:
    longest = max_token_chars(ctx.draft_tokenizer)
    if longest > MAX_DRAFT_TOKEN_CHARS:
        raise PlaygroundError(
            f"slrs: the drafter has tokens of up to {longest} characters; psi enumerates sequences of "
            f"draft tokens and is tractable only up to {MAX_DRAFT_TOKEN_CHARS} (a byte- or "
            "character-level drafter such as byte-draft): use slem or tli with this drafter")


def _record(outcome: Outcome, p: torch.Tensor, p_raw: torch.Tensor, proposer: StringProposer) -> TokenRecord:
    """Through the record's own writers, as the walk writes: a kept proposal with its check, or the
    residual's draw with the proposal it replaced and that proposal's check."""
    figures = {"p_target": float(p[outcome.token]), "p_target_raw": float(p_raw[outcome.token])}
    check = {"psi": outcome.psi, "accept_prob": outcome.accept_prob}
    if outcome.accepted:
        token_text = proposer.target_strings[outcome.token]
        return TokenRecord.kept(outcome.token, "draft", {
            **figures, **check, "draft_tokens": _covering(outcome.path, proposer.draft_strings, token_text),
            "draft_text": token_text}, position=0, branch=0, replaced=[])
    replaced = [] if outcome.proposal is None else [{"id": outcome.proposal, **check}]
    return TokenRecord.correction(outcome.token, "target", figures, 0, "residual", replaced)


def _evidence(outcome: Outcome, p: torch.Tensor) -> list[Evidence]:
    """The check of the proposal t against p (none when the draft proposed no target token)."""
    if outcome.proposal is None:
        return []
    verdict = "accepted" if outcome.accepted else "rejected"
    return [evidence("target", 0, outcome.proposal, verdict, outcome.token,
                     {"psi": outcome.psi, "accept_prob": outcome.accept_prob}, {"p": p},
                     None if outcome.accepted else "residual",
                     StringRatio(outcome.psi, outcome.accept_prob, outcome.accepted))]


def _covering(path: tuple[int, ...], draft_strings, token_text: str) -> list[int]:
    """The drafted tokens that wrote the accepted token's text."""
    covering, offset = [], 0
    for d in path:
        if offset >= len(token_text):
            break
        covering.append(d)
        offset += len(draft_strings[d] or "")
    return covering


def slrs_steps(ctx: Decoding):
    check_drafter(ctx)
    draft_strings, split = token_strings(ctx.draft_tokenizer), TargetSplitter(ctx.target_tokenizer)
    lookahead = lookahead_for(draft_strings, split.strings)
    context, proposed, pair = DraftContext(ctx), [], pair_figures(ctx, lookahead=lookahead)
    while ctx.remaining() > 0:
        resynced = context.sync(ctx.ids, proposed)
        start, forwards = time.perf_counter(), ctx.draft.forwards
        logits = ctx.target.next_logits(ctx.ids)[-1]
        p = ctx.sampler.probs(logits)
        verified_at = time.perf_counter()
        proposer = StringProposer(
            lambda path: draft_probs(ctx, ctx.draft.next_logits(context.ids + list(path))[-1]),
            draft_strings, split, split.strings, lookahead)
        outcome = string_rejection_sample(p, proposer, ctx.sampler)
        yield Step([_record(outcome, p, raw_probs(logits), proposer)], drafted=1, accepted=int(outcome.accepted),
                   evidence=_evidence(outcome, p),
                   accepted_flags=[outcome.accepted], draft_seconds=time.perf_counter() - verified_at,
                   verify_seconds=verified_at - start,
                   forwards={ctx.draft.name: ctx.draft.forwards - forwards, ctx.target.name: 1}, pair=pair,
                   extra={"psi_enumerated": proposer.enumerated, "psi_cap_hits": proposer.cap_hits,
                          "draft_pieces": [draft_strings[d] for d in outcome.path],
                          "residual_draws": outcome.residual_draws, "draft_resync_chars": resynced,
                          "chars_accepted": len(split.strings[outcome.token]) if outcome.accepted else 0})
        proposed, pair = [([d], draft_strings[d]) for d in outcome.path if draft_strings[d]], None


SLRS = Method("slrs", slrs_steps, "heterogeneous vocabularies: string-level rejection sampling with "
              "enumerated psi, for short-token drafters (seed 004, Alg. 3)", vocabulary="any",
              options=("draft_sampling",), levers=("draft_int8", "draft_vocab"))
