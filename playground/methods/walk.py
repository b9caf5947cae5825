"""The one verification walk: how every method that verifies drafted tokens checks them
(docs/rules.md, "One walk"). A chain is a tree of width 1, a prompt lookup one more branch.

The verifier scores every node of the round's tree in one forward with tree attention (cache.py,
token_tree.py). Every node's test (rules.py), every uniform draw and every node's final draw are
made on the device before the walk and read at once: the round waits for the device here once.
Then the walk goes down from the root, at each node taking the first child, in draft order,
whose test held. Where none held it emits the rule's correction: the draw from what was left at
that node (the residual after every child for a stochastic rule, the verifier's p otherwise),
unless csd's rescue puts the draft's own token back. After an accepted leaf the verifier's draw
there is the bonus token.

A stochastic rule's child i meets p_i, which depends only on its place among its siblings, so
its ratio can be computed before the walk; every draw is independent of the others and used
only in the event it was made for, so the walk is exact (docs/rules.md, "Token trees").
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import torch

from ..decoding.divergence import divergence
from ..decoding.feature_runner import FeatureRunner
from ..decoding.sampling import raw_probs, residual
from ..decoding.step import Step, TokenRecord
from .base import Decoding
from .drafting import Drafted, draft_tree, lookup_chain
from .evidence import LazyEvidence, Pending
from .rules import NodeNumbers

SYMBOLS = {"target": "p", "draft": "q", "qualifier": "r"}  # distributions by role, as in the papers


@dataclass
class Checks:
    """A round's checks as read: per node i its `numbers` and the rule's `tests[i]`, the
    verifier's `p_at[i]` and `p_raw_at[i]` of its token; per row r (0 the root, 1 + i node i) the
    final `draw[r]` with its `p_draw[r]` and `p_raw_draw[r]`. `rows(i)` and `p_raw` stay on the
    device, for the evidence and csd's rescue; so is `final[r]`, what row r's draw was made from."""

    numbers: list[NodeNumbers]
    tests: list
    p_at: list[float]
    p_raw_at: list[float]
    draw: list[int]
    p_draw: list[float]
    p_raw_draw: list[float]
    p_raw: torch.Tensor
    final: list[torch.Tensor]
    rows: object


def check_nodes(ctx: Decoding, rule, drafted: Drafted, p: torch.Tensor, p_raw: torch.Tensor,
                roles: tuple[str, str]) -> Checks:
    """`p`/`p_raw`: the verifier's rows, 0 for the root and 1 + i for node i. Both sides are cut
    to the smaller vocabulary (ids past it are padding, never drawn)."""
    tree, n = drafted.tree, len(drafted)
    vocab = min(p.shape[-1], drafted.q[0].shape[-1]) if n else p.shape[-1]
    p, p_raw = p[:, :vocab], p_raw[:, :vocab]
    q = [row[:vocab] for row in drafted.q]
    tried, left_after, final = [None] * n, [None] * n, []
    for row in range(1 + n):
        p_i = p[row]
        for child in tree.children(row - 1):
            tried[child] = p_i
            if rule.keeps_residual:
                p_i = left_after[child] = residual(p_i, q[child])
        final.append(p_i)
    draw = ctx.sampler.draw_rows(torch.stack(final))
    parts = [draw, p.gather(1, draw[:, None])[:, 0], p_raw.gather(1, draw[:, None])[:, 0]]
    with_raw = [i for i in range(n) if drafted.q_raw[i] is not None]
    if n:
        parts += _node_parts(ctx, rule, drafted, p, p_raw, q, tried, with_raw, vocab)
    read = torch.cat([part.double() for part in parts]).tolist()  # the round's one wait for the device
    draw, p_draw, p_raw_draw, p_at, p_raw_at, q_at, tried_at, divergences, u = _split(
        read, [1 + n] * 3 + [n] * 4 + [len(with_raw), n if n and rule.needs_uniform else 0])
    divergence_of = dict(zip(with_raw, divergences))
    draw = [int(token) for token in draw]
    numbers = [NodeNumbers(tree.tokens[i], tried_at[i], q_at[i], divergence_of.get(i), u[i] if u else 0.0,
                           draw[1 + tree.parents[i]]) for i in range(n)]
    v, d = (SYMBOLS[role] for role in roles)

    def rows(i: int) -> dict:
        """The distributions node i's test used (only the verifier's draws for a proposer without
        a distribution in its vocabulary)."""
        raw = drafted.q_raw[i]
        if raw is None:
            return {v: tried[i]}
        return {v: tried[i], d: q[i], f"{v}_raw": p_raw[1 + tree.parents[i]], f"{d}_raw": raw[:vocab],
                **({} if left_after[i] is None else {"residual": left_after[i]})}
    return Checks(numbers, [rule.test(node) for node in numbers], p_at, p_raw_at, draw, p_draw, p_raw_draw,
                  p_raw, final, rows)


def _node_parts(ctx, rule, drafted: Drafted, p, p_raw, q, tried, with_raw, vocab) -> list[torch.Tensor]:
    """Per node, on the device: its token's p and raw p at its parent, q_i and p_i of it, the
    divergences of the nodes with a raw row, and the uniform draws a rule needs."""
    tree = drafted.tree
    tokens = torch.tensor(tree.tokens, device=p.device)[:, None]
    at_parents = [1 + parent for parent in tree.parents]
    parts = [p[at_parents].gather(1, tokens)[:, 0], p_raw[at_parents].gather(1, tokens)[:, 0],
             torch.stack(q).gather(1, tokens)[:, 0], torch.stack(tried).gather(1, tokens)[:, 0]]
    raws = [drafted.q_raw[i][:vocab] for i in with_raw]
    parts.append(divergence(ctx.config.divergence, p_raw[[at_parents[i] for i in with_raw]], torch.stack(raws))
                 if raws else p.new_empty(0))
    if rule.needs_uniform:
        parts.append(ctx.sampler.uniforms(len(tree)).to(p.device))
    return parts


def _split(numbers: list, sizes: list[int]) -> list[list]:
    parts, start = [], 0
    for size in sizes:
        parts.append(numbers[start:start + size])
        start += size
    return parts


@dataclass
class Trial:
    """One child tried at a node: its branch (0: the chain's own token) and the rule's test."""

    node: int
    branch: int
    test: object


@dataclass
class Walk:
    """What verifying a round produced: emitted records, the accepted nodes, every check, and per
    record the verifier's rows at its position (on the device): what it was drawn from, and raw."""

    records: list[TokenRecord] = field(default_factory=list)
    path: list[int] = field(default_factory=list)
    evidence: list[Pending] = field(default_factory=list)
    rows: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)
    check_seconds: float = 0.0  # the checks and the walk, after the verifier's pass

    @property
    def rejected(self) -> bool:
        """Whether the round ended on a correction (else on the bonus token)."""
        return not self.records[-1].bonus

    def step(self, drafted: Drafted, **figures) -> Step:
        """The round as a Step (`figures`: its seconds, forwards and extra)."""
        tree = drafted.tree
        extra = {"tree": {"tokens": list(tree.tokens), "parents": list(tree.parents), "path": list(self.path)},
                 "check_seconds": self.check_seconds, **figures.pop("extra", {})}
        return Step(self.records, drafted=len(drafted), accepted=len(self.path),
                    accepted_flags=[True] * len(self.path) + [False] * self.rejected, extra=extra,
                    evidence=LazyEvidence(self.evidence), **figures)


def verify(ctx: Decoding, drafted: Drafted, rule, context: list[int], roles=("target", "draft"),
           rescue=None) -> Walk:
    """The verifier (`roles[0]`) scores `drafted` after `context` in one pass, the walk decides,
    and the verifier's cache keeps the accepted path. `rescue(x~, t*, p_raw(x~), p_raw(t*),
    test) -> (rescued, figures, test)`: csd's second chance for the draft's own token (branch 0) of a node
    whose children were all rejected (calibrated.py)."""
    runner = getattr(ctx, roles[0])
    logits = runner.tree_logits(context, drafted.tree)
    scored = time.perf_counter()
    walk = decide(ctx, drafted, rule, ctx.sampler.probs(logits), raw_probs(logits), roles, rescue)
    runner.keep_path(walk.path)
    walk.check_seconds = time.perf_counter() - scored
    return walk


def decide(ctx: Decoding, drafted: Drafted, rule, p: torch.Tensor, p_raw: torch.Tensor, roles=("target", "draft"),
           rescue=None) -> Walk:
    """The walk over the verifier's rows `p`, `p_raw` (0 the root, 1 + i node i)."""
    return _walk(drafted, check_nodes(ctx, rule, drafted, p, p_raw, roles), rule, roles, rescue)


def _walk(drafted: Drafted, checks: Checks, rule, roles: tuple[str, str], rescue) -> Walk:
    walk, node, tree = Walk(), -1, drafted.tree
    verifier = roles[0]
    while children := tree.children(node):
        trials = _first_passing(checks, children)
        chosen = trials[-1] if trials[-1].test.held else None
        origin, rescued = chosen and drafted.origins[chosen.node], {}
        if chosen is None and rescue is not None:
            first = trials[0]
            kept, rescued, first.test = rescue(tree.tokens[first.node], checks.draw[1 + node],
                                               checks.p_raw_at[first.node], checks.p_raw_draw[1 + node], first.test)
            chosen, origin = (first, "rescued") if kept else (None, None)
        emitted = checks.draw[1 + node] if chosen is None else tree.tokens[chosen.node]
        walk.evidence += [_evidence(tree, checks, rule, trial, emitted, trial is chosen and origin, chosen is None,
                                    verifier, rescued if trial.branch == 0 else {}) for trial in trials]
        if chosen is None:
            walk.records.append(_correction(drafted, checks, rule, trials, node, roles, rescued))
            walk.rows.append((checks.final[1 + node], checks.p_raw[1 + node]))
            return walk
        walk.path.append(chosen.node)
        walk.records.append(_kept(drafted, checks, chosen, [t for t in trials if t is not chosen], origin, roles,
                                  rescued))
        walk.rows.append((checks.rows(chosen.node)[SYMBOLS[verifier]], checks.p_raw[1 + node]))
        node = chosen.node
    walk.rows.append((checks.final[1 + node], checks.p_raw[1 + node]))
    walk.records.append(TokenRecord.bonus_token(checks.draw[1 + node], verifier,
                                                _verifier_figures(checks, node, verifier),
                                                0 if node < 0 else tree.depths[node]))
    return walk


def _first_passing(checks: Checks, children: list[int]) -> list[Trial]:
    trials = []
    for branch, child in enumerate(children):
        trials.append(Trial(child, branch, checks.tests[child]))
        if trials[-1].test.held:
            break
    return trials


def _verifier_figures(checks: Checks, row_node: int, verifier: str) -> dict:
    """The verifier's probabilities of the token it drew at a node (-1: the root)."""
    return {f"p_{verifier}": checks.p_draw[1 + row_node], f"p_{verifier}_raw": checks.p_raw_draw[1 + row_node]}


def _candidate_figures(checks: Checks, node: int, proposer: str, test) -> dict:
    """A candidate's own check: the proposer's probability of it (as drawn), the divergence at its
    position, and the rule's numbers."""
    numbers = checks.numbers[node]
    if numbers.divergence is None:  # the proposer has no distribution in the verifier's vocabulary
        return test.figures()
    return {f"p_{proposer}": numbers.q, **_check_figures(numbers, test)}


def _check_figures(numbers: NodeNumbers, test) -> dict:
    """The divergence at a node (where the proposer has a distribution) and the rule's numbers."""
    return {**({} if numbers.divergence is None else {"divergence": numbers.divergence}), **test.figures()}


def _kept(drafted: Drafted, checks: Checks, trial: Trial, rejected: list[Trial], origin: str, roles,
          rescued: dict) -> TokenRecord:
    """The candidate kept at a node, with its siblings that were checked and rejected there."""
    verifier, proposer = roles
    before = _replaced(drafted, checks, rejected, roles, {})
    figures = {f"p_{verifier}": checks.p_at[trial.node], f"p_{verifier}_raw": checks.p_raw_at[trial.node],
               **_candidate_figures(checks, trial.node, proposer, trial.test),
               **(rescued if origin == "rescued" else {}), **drafted.notes[trial.node]}
    return TokenRecord.kept(drafted.tree.tokens[trial.node], origin, figures, drafted.tree.depths[trial.node] - 1,
                            trial.branch, before, lookup=drafted.from_lookup[trial.node])


def _correction(drafted: Drafted, checks: Checks, rule, trials: list[Trial], node: int, roles,
                rescued: dict) -> TokenRecord:
    """The verifier's token in place of every child of `node`, each named with its own check."""
    verifier, proposer = roles
    tree = drafted.tree
    replaced = _replaced(drafted, checks, trials, roles, rescued)
    return TokenRecord.correction(checks.draw[1 + node], verifier, _verifier_figures(checks, node, verifier),
                                  tree.depths[trials[0].node] - 1, _drawn_from(rule, verifier), replaced)


def _replaced(drafted: Drafted, checks: Checks, trials: list[Trial], roles, rescued: dict) -> list[dict]:
    """Rejected candidates, each with the verifier's probability of it as tested, its own check
    (and csd's rescue figures on the first), and what its drafter noted (PyramidSD: the qualifier's
    stage-one record of it, so the draft tokens the qualifier rejected before it stay on record)."""
    verifier, proposer = roles
    return [{"id": drafted.tree.tokens[t.node], f"p_{verifier}": checks.numbers[t.node].tried,
             **_candidate_figures(checks, t.node, proposer, t.test), **(rescued if t.branch == 0 else {}),
             "branch": t.branch, **({"lookup": True} if drafted.from_lookup[t.node] else {}),
             **({"origin": drafted.origins[t.node]} if drafted.origins[t.node] != "draft" else {}),
             **drafted.notes[t.node]}
            for t in trials]


def _evidence(tree, checks: Checks, rule, trial: Trial, emitted: int, kept_as, corrected: bool, verifier: str,
              rescued: dict) -> Pending:
    """`kept_as`: the origin of the candidate kept at this node, else False; `corrected`: no
    candidate was kept there, so `emitted` is the correction; `rescued`: csd's figures
    (correction, memory count, gate) where its rescue was tried on this candidate."""
    verdict = "rescued" if kept_as == "rescued" else "accepted" if kept_as else "rejected"
    figures = {**_check_figures(checks.numbers[trial.node], trial.test), "branch": trial.branch, **rescued}
    drawn_from = _drawn_from(rule, verifier) if corrected else None
    return Pending(verifier, tree.depths[trial.node] - 1, tree.tokens[trial.node], verdict, emitted, figures,
                   checks.rows(trial.node), drawn_from, trial.test)


def _drawn_from(rule, verifier: str) -> str:
    """Where a correction is drawn from: the residual where the rule keeps one, else the verifier's p."""
    return "residual" if rule.keeps_residual else SYMBOLS[verifier]


def lookup_figures(ctx: Decoding) -> dict:
    """A prompt-lookup round's figure: the n of the n-gram it matched (0: none, the target stepped alone)."""
    return {"ngram_match": ctx.lookup.matched} if ctx.lookup else {}


def feature_figures(ctx: Decoding) -> dict:
    """A feature draft's round: which target layers it read, at how many new positions, and how
    many of its tokens read its own output features instead."""
    return {"feature_draft": dict(ctx.draft.read)} if isinstance(ctx.draft, FeatureRunner) else {}


D = TypeVar("D")  # what a round's draft returns


@dataclass
class TimedRound(Generic[D]):
    """One draft and its verification, each timed: the round every method's loop runs."""

    drafted: D  # what the draft returned: a Drafted (slem: its text with it)
    walk: Walk
    draft_seconds: float
    verify_seconds: float


def timed_round(draft: Callable[[], D], check: Callable[[D], Walk]) -> TimedRound[D]:
    """`draft()`, then `check(drafted)`, the seconds of each measured apart."""
    start = time.perf_counter()
    drafted = draft()
    drafted_at = time.perf_counter()
    walk = check(drafted)
    return TimedRound(drafted, walk, drafted_at - start, time.perf_counter() - drafted_at)


def model_drafter(ctx: Decoding, k: int) -> Drafted:
    return draft_tree(ctx, ctx.draft, k)


def rounds(ctx: Decoding, rule, drafter=None, rescue=None):
    """Draft, verify, walk, until the budget is spent: the loop of sd, csd, fsd and tli.
    `drafter(ctx, k) -> Drafted` replaces the draft model's tree (tli drafts in another
    vocabulary); a prompt lookup (ctx.lookup) drafts a chain with no model."""
    drafter = drafter or (lookup_chain if ctx.lookup else model_drafter)
    while ctx.remaining() > 0:
        reading = time.perf_counter()
        read = isinstance(ctx.draft, FeatureRunner) and ctx.draft.read_context(ctx.ids)
        read_seconds = time.perf_counter() - reading
        done = timed_round(lambda: drafter(ctx, ctx.block_size(ctx.config.candidates)),
                           lambda drafted: verify(ctx, drafted, rule, ctx.ids, rescue=rescue))
        # A feature draft's first round has the target read the prompt first: a target pass, not drafting
        yield done.walk.step(done.drafted, draft_seconds=done.draft_seconds,
                             verify_seconds=done.verify_seconds + read_seconds,
                             forwards={**({ctx.draft.name: done.drafted.draft_forwards} if ctx.draft else {}),
                                       ctx.target.name: 1 + read},
                             extra={**lookup_figures(ctx), **feature_figures(ctx)})
