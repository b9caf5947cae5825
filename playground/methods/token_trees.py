"""Lossless speculative decoding over a token tree (SpecInfer, Miao et al. 2024): how sd and csd
verify every draft shape, a chain being a tree of width 1 and a prompt lookup's proposal a chain.

The draft drafts its chain (drafting.py); in a tree (`tree_width` > 1), where it doubts a token (it gave it less than
`draft_confidence`; at every depth when that lever is off) the node gets `tree_width - 1` more
candidates beside it, as leaves; and where the context's last tokens occurred before, what
followed them there (a prompt lookup, ngram.py) is one more branch, for free. The target scores
every node in one forward with tree attention (cache.py, token_tree.py) and the walk goes down
from the root:

- at a node, its children are tried in order by recursive rejection sampling (Jeon et al. 2024):
  candidate i is accepted with probability min(1, p_i(x_i) / q_i(x_i)), where q_i is the
  distribution x_i was drawn from (q without the earlier siblings, renormalized; one-hot for a
  token the draft picked deterministically) and p_1 = p, p_(i+1) = norm(max(0, p_i - q_i));
- if all are rejected the target's token is drawn from the last p_i; after an accepted leaf the
  target's token at that leaf is the bonus. At temperature 0 this is: follow the target's argmax.

Each q_i is the distribution its candidate was really drawn from given everything drawn before,
so every step is an exact rejection step and the output follows the target (methods.md, token trees).
Every check of a round is made on the device before the walk and read at once (tree_checks.py).
"""

import time
from dataclasses import dataclass, field

import torch

from ..ngram import lookup
from ..sampling import raw_probs
from ..step import Step, TokenRecord
from ..token_tree import TokenTree
from .acceptance import Ratio
from .base import Decoding
from .drafting import draft
from .speculative import lookup_figures
from .evidence import LazyEvidence, Pending
from .tree_checks import TreeChecks, check_tree

MIN_LOOKUP_MATCH = 2  # a lookup of the last token alone matches often and proposes noise


@dataclass
class DraftedTree:
    tree: TokenTree
    q: list[torch.Tensor] = field(default_factory=list)  # per node: the distribution its token was drawn from
    q_raw: list[torch.Tensor] = field(default_factory=list)  # per node: the draft's raw distribution there
    draft_forwards: int = 0  # the chain's; siblings and the lookup branch cost none

    def add(self, token: int, parent: int, q: torch.Tensor, q_raw: torch.Tensor) -> int:
        self.q.append(q)
        self.q_raw.append(q_raw)
        return self.tree.add(token, parent)


def draft_tree(ctx: Decoding, k: int) -> DraftedTree:
    """sd's chain of up to k tokens; in a tree (tree_width > 1), siblings beside each token the
    draft doubts (everywhere when draft_confidence is off) and the prompt lookup's proposal as one
    more branch."""
    block = draft(ctx, ctx.draft, k, ctx.config.tree_width)
    drafted = _chain(block.tokens, block.q, block.q_raw)
    for depth, siblings in enumerate(block.siblings):
        if not ctx.config.draft_confidence or block.doubted[depth]:
            for sibling, q_sibling in siblings:
                drafted.add(sibling, depth - 1, q_sibling, block.q_raw[depth])
    if ctx.config.tree_width > 1:
        add_lookup_branch(ctx, drafted, k)
    return drafted


def lookup_chain(ctx: Decoding, k: int) -> DraftedTree:
    """A prompt-lookup draft (`ctx.lookup`, ngram.py) in the draft's place: a chain at no draft cost."""
    proposal = ctx.lookup(ctx, k)
    return _chain(proposal.tokens, proposal.q, proposal.q_raw, forwards=0)


def _chain(tokens: list[int], q: torch.Tensor, q_raw: torch.Tensor, forwards: int | None = None) -> DraftedTree:
    drafted = DraftedTree(TokenTree(), draft_forwards=len(tokens) if forwards is None else forwards)
    for depth, token in enumerate(tokens):
        drafted.add(token, depth - 1, q[depth], q_raw[depth])
    return drafted


def add_lookup_branch(ctx: Decoding, drafted: DraftedTree, k: int) -> None:
    """What followed the latest earlier occurrence of the context's last MIN_LOOKUP_MATCH or more
    tokens (ngram.py), merged into the tree: it follows the nodes that already hold its tokens and
    branches off where they differ. Its tokens are picked deterministically, so each new node's q
    is one-hot on it (methods.md, one-hot drafts)."""
    tokens, matched = lookup(ctx.ids, k)
    if matched < MIN_LOOKUP_MATCH:
        return
    node, tree = -1, drafted.tree
    for token in tokens:
        same = next((child for child in tree.children(node) if tree.tokens[child] == token), None)
        if same is None:
            one_hot = torch.zeros_like(drafted.q[0])
            one_hot[token] = 1.0
            same = drafted.add(token, node, one_hot, one_hot)
        node = same


@dataclass
class Walk:
    """The verification walk down the tree: emitted records, the accepted nodes, the evidence."""

    records: list[TokenRecord] = field(default_factory=list)
    path: list[int] = field(default_factory=list)
    evidence: list[Pending] = field(default_factory=list)

    @property
    def rejected(self) -> bool:
        """Whether the round ended on a correction (else on the bonus token)."""
        return not self.records[-1].diagnostics.get("bonus")


@dataclass
class Trial:
    """One candidate tried at a node: its branch (0: the chain's own token) and the rule's test."""

    node: int
    branch: int
    test: object  # the SD ratio (acceptance.Ratio), or csd's Rescue around it


def verify_tree(ctx: Decoding, drafted: DraftedTree, p: torch.Tensor, p_raw: torch.Tensor, rescue=None) -> Walk:
    """Walk from the root (row 0 of p) down the accepted children; rows 1 + i are node i's.
    `rescue(x~, t*, p_raw, ratio_test) -> (rescued, diagnostics, test)`: csd's second chance for the
    draft's own token (branch 0) of a node whose children were all rejected (calibrated.py)."""
    walk, node, tree = Walk(), -1, drafted.tree
    checks = check_tree(ctx, tree, drafted.q, drafted.q_raw, p, p_raw)
    while children := tree.children(node):
        trials = _try_children(checks, children)
        chosen = trials[-1] if trials[-1].test.held else None
        origin, extra = "draft", {}
        if chosen is None and rescue is not None:
            rescued, extra, trials[0].test = rescue(tree.tokens[children[0]], checks.draw[1 + node], p_raw[1 + node],
                                                    trials[0].test)
            chosen, origin = (trials[0], "rescued") if rescued else (None, origin)
        emitted = checks.draw[1 + node] if chosen is None else tree.tokens[chosen.node]
        walk.evidence += [_evidence(tree, checks, trial, emitted, trial is chosen and origin,
                                    extra if trial.branch == 0 else {}) for trial in trials]
        if chosen is None:
            walk.records.append(TokenRecord(emitted, "target", diagnostics={
                **_about_candidate(checks, children[0]), "p_target": checks.p_draw[1 + node],
                "position_in_block": tree.depths[children[0]] - 1,
                "rejected_candidates": [tree.tokens[child] for child in children], **extra}))
            return walk
        walk.path.append(chosen.node)
        walk.records.append(_accepted_record(tree, checks, chosen, origin, extra))
        node = chosen.node
    walk.records.append(TokenRecord(checks.draw[1 + node], "target", diagnostics={
        "p_target": checks.p_draw[1 + node], "p_target_raw": checks.p_raw_draw[1 + node], "bonus": True,
        "position_in_block": 0 if node < 0 else tree.depths[node]}))
    return walk


def _try_children(checks: TreeChecks, children: list[int]) -> list[Trial]:
    """Recursive rejection sampling over one node's children, up to the first accepted one."""
    trials = []
    for branch, child in enumerate(children):
        trials.append(Trial(child, branch, Ratio(checks.ratio[child], checks.u[child])))
        if trials[-1].test.held:
            break
    return trials


def _evidence(tree: TokenTree, checks: TreeChecks, trial: Trial, emitted: int, kept_as: str | bool,
              rescue: dict) -> Pending:
    """`kept_as`: "draft" or "rescued" for the candidate kept at this node, else False; `rescue`:
    csd's figures (correction, memory count, gate) where its rescue was tried on this candidate."""
    verdict = "rescued" if kept_as == "rescued" else "accepted" if kept_as else "rejected"
    return Pending("target", tree.depths[trial.node] - 1, tree.tokens[trial.node], verdict, emitted,
                   {"accept_prob": checks.ratio[trial.node], "branch": trial.branch, **rescue},
                   checks.rows(trial.node), None if kept_as else "residual", trial.test)


def _accepted_record(tree: TokenTree, checks: TreeChecks, trial: Trial, origin: str, extra: dict) -> TokenRecord:
    return TokenRecord(tree.tokens[trial.node], origin, diagnostics={
        "p_target": checks.p_at[trial.node], **_about_candidate(checks, trial.node),
        "position_in_block": tree.depths[trial.node] - 1, "branch": trial.branch, **extra})


def _about_candidate(checks: TreeChecks, node: int) -> dict:
    """A node's check as its record (or the correction that replaced it) shows it."""
    return {"p_draft": checks.q_at[node], "accept_prob": checks.ratio[node], "divergence": checks.divergence[node]}


def tree_steps(ctx: Decoding, rescue=None):
    """sd's loop: draft a tree (a chain is a tree of width 1; a prompt lookup drafts a chain), one
    target forward over it, the walk (csd's `rescue`: see verify_tree)."""
    drafter = lookup_chain if ctx.lookup else draft_tree
    while ctx.remaining() > 0:
        start = time.perf_counter()
        drafted = drafter(ctx, ctx.block_size(ctx.config.candidates))
        drafted_at = time.perf_counter()
        logits = ctx.target.tree_logits(ctx.ids, drafted.tree)
        walk = verify_tree(ctx, drafted, ctx.sampler.probs(logits), raw_probs(logits), rescue)
        ctx.target.keep_path(walk.path)
        yield Step(walk.records, drafted=len(drafted.tree), accepted=len(walk.path),
                   accepted_flags=[True] * len(walk.path) + [False] * walk.rejected,
                   draft_seconds=drafted_at - start, verify_seconds=time.perf_counter() - drafted_at,
                   forwards={**({ctx.draft.name: drafted.draft_forwards} if ctx.draft else {}), ctx.target.name: 1},
                   extra={"tree": _tree_figures(drafted.tree, walk), **lookup_figures(ctx)},
                   evidence=LazyEvidence(walk.evidence))


def _tree_figures(tree: TokenTree, walk: Walk) -> dict:
    """What step mode draws and the stats count: every node, its parent, and the accepted path."""
    return {"tokens": list(tree.tokens), "parents": list(tree.parents), "path": list(walk.path)}
