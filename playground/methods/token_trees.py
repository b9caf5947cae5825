"""Lossless speculative decoding over a token tree (SpecInfer, Miao et al. 2024), as an option of sd.

The draft drafts its chain as sd does; where it doubts a token (it gave it less than
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
"""

import time
from dataclasses import dataclass, field

import torch

from ..ngram import lookup
from ..sampling import one_hot_argmax, raw_probs, residual
from ..step import Step, TokenRecord
from ..token_tree import TokenTree
from .acceptance import Ratio
from .base import Decoding
from .evidence import Pending, evidence_of
from .speculative import draft_block

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
    """sd's chain of up to k tokens, with siblings beside each token the draft doubts, and the
    prompt lookup's proposal as one more branch."""
    chain = draft_block(ctx, ctx.draft, k)
    drafted = DraftedTree(TokenTree(), draft_forwards=len(chain.tokens))
    for depth, token in enumerate(chain.tokens):
        drafted.add(token, depth - 1, chain.q[depth], chain.q_raw[depth])
    for depth, token in enumerate(chain.tokens):
        if branches_at(ctx, chain.q_raw[depth], token):
            for sibling, q_sibling in siblings(ctx, chain.q[depth], chain.q_raw[depth], token):
                drafted.add(sibling, depth - 1, q_sibling, chain.q_raw[depth])
    add_lookup_branch(ctx, drafted, k)
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


def branches_at(ctx: Decoding, q_raw_row: torch.Tensor, token: int) -> bool:
    """Siblings go where the draft doubts its token, or everywhere when no confidence is set."""
    return not ctx.config.draft_confidence or ctx.doubts(q_raw_row, token)


def siblings(ctx: Decoding, q: torch.Tensor, q_raw: torch.Tensor, drawn: int) -> list[tuple[int, torch.Tensor]]:
    """Up to tree_width - 1 more candidates after `drawn`, each with the distribution it was drawn
    from: from q without the tokens already taken while q has mass left, else (a greedy draft) the
    draft's next most likely token, deterministically (a one-hot q)."""
    left, ranked, found = q.clone(), q_raw.clone(), []
    left[drawn], ranked[drawn] = 0.0, -1.0
    for _ in range(ctx.config.tree_width - 1):
        mass = float(left.sum())
        if mass > 0:
            q_i = left / mass
            token = ctx.sampler.draw(q_i)
        else:
            token = int(ranked.argmax())
            if ranked[token] <= 0:
                break
            q_i = one_hot_argmax(ranked)
        left[token], ranked[token] = 0.0, -1.0
        found.append((token, q_i))
    return found


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
    """One candidate tried at a node: its branch (0: the chain's own token) and the rule's numbers."""

    node: int
    branch: int
    test: object  # the SD ratio (acceptance.Ratio), or csd's Rescue around it
    rows: dict  # p_i, q_i and the raw rows at the node, and the residual left after it


def verify_tree(ctx: Decoding, drafted: DraftedTree, p: torch.Tensor, p_raw: torch.Tensor, rescue=None) -> Walk:
    """Walk from the root (row 0 of p) down the accepted children; rows 1 + i are node i's.
    `rescue(x~, t*, p_raw, ratio_test) -> (rescued, diagnostics, test)`: csd's second chance for the
    draft's own token (branch 0) of a node whose children were all rejected (calibrated.py)."""
    walk, node, tree = Walk(), -1, drafted.tree
    while children := tree.children(node):
        trials, p_left = _try_children(ctx, drafted, children, p[1 + node], p_raw[1 + node])
        chosen = trials[-1] if trials[-1].test.held else None
        origin, extra = "draft", {}
        if chosen is None:
            correction = ctx.sampler.draw(p_left)
            if rescue is not None:
                rescued, extra, trials[0].test = rescue(tree.tokens[trials[0].node], correction, p_raw[1 + node],
                                                        trials[0].test)
                chosen, origin = (trials[0], "rescued") if rescued else (None, origin)
        emitted = correction if chosen is None else tree.tokens[chosen.node]
        walk.evidence += [_evidence(tree, trial, emitted, trial is chosen and origin) for trial in trials]
        if chosen is None:
            walk.records.append(TokenRecord(emitted, "target", diagnostics={
                "p_target": float(p[1 + node, emitted]), "position_in_block": tree.depths[children[0]] - 1,
                "rejected_candidates": [tree.tokens[child] for child in children], **extra}))
            return walk
        walk.path.append(chosen.node)
        walk.records.append(_accepted_record(tree, chosen, p[1 + node], origin, extra))
        node = chosen.node
    walk.records.append(_bonus(ctx, p[1 + node], p_raw[1 + node], 0 if node < 0 else tree.depths[node]))
    return walk


def _try_children(ctx: Decoding, drafted: DraftedTree, children: list[int], p_node: torch.Tensor,
                  p_raw_node: torch.Tensor) -> tuple[list[Trial], torch.Tensor]:
    """Recursive rejection sampling over one node's children, stopping at the first accepted one:
    the trials, and the distribution left for a correction when every child was rejected."""
    vocab = min(p_node.shape[-1], drafted.q[children[0]].shape[-1])
    p_i, trials = p_node[:vocab], []
    for branch, child in enumerate(children):
        token, q_i = drafted.tree.tokens[child], drafted.q[child][:vocab]
        test = Ratio(min(1.0, float(p_i[token] / q_i[token])), ctx.sampler.uniform())
        p_next = residual(p_i, q_i)
        trials.append(Trial(child, branch, test, {"p": p_i, "q": q_i, "p_raw": p_raw_node[:vocab],
                                                  "q_raw": drafted.q_raw[child][:vocab], "residual": p_next}))
        if test.held:
            break
        p_i = p_next
    return trials, p_i


def _evidence(tree: TokenTree, trial: Trial, emitted: int, kept_as: str | bool) -> Pending:
    """`kept_as`: "draft" or "rescued" for the candidate kept at this node, else False."""
    verdict = "rescued" if kept_as == "rescued" else "accepted" if kept_as else "rejected"
    return Pending("target", tree.depths[trial.node] - 1, tree.tokens[trial.node], verdict, emitted,
                   {"accept_prob": _ratio(trial).accept_prob, "branch": trial.branch}, trial.rows,
                   None if kept_as else "residual", trial.test)


def _ratio(trial: Trial) -> Ratio:
    """The SD ratio test of a trial (a csd rescue wraps it)."""
    return getattr(trial.test, "ratio", trial.test)


def _accepted_record(tree: TokenTree, trial: Trial, p_node: torch.Tensor, origin: str, extra: dict) -> TokenRecord:
    token = tree.tokens[trial.node]
    return TokenRecord(token, origin, diagnostics={
        "p_target": float(p_node[token]), "p_draft": float(trial.rows["q"][token]),
        "accept_prob": _ratio(trial).accept_prob, "position_in_block": tree.depths[trial.node] - 1,
        "branch": trial.branch, **extra})


def _bonus(ctx: Decoding, p_row: torch.Tensor, p_raw_row: torch.Tensor, depth: int) -> TokenRecord:
    token = ctx.sampler.draw(p_row)
    return TokenRecord(token, "target", diagnostics={"p_target": float(p_row[token]),
                                                     "p_target_raw": float(p_raw_row[token]),
                                                     "bonus": True, "position_in_block": depth})


def tree_steps(ctx: Decoding, rescue=None):
    """sd's loop with a token tree in the chain's place: one target forward per round (csd's
    `rescue`: see verify_tree)."""
    while ctx.remaining() > 0:
        start = time.perf_counter()
        drafted = draft_tree(ctx, ctx.block_size(ctx.config.candidates))
        drafted_at = time.perf_counter()
        logits = ctx.target.tree_logits(ctx.ids, drafted.tree)
        walk = verify_tree(ctx, drafted, ctx.sampler.probs(logits), raw_probs(logits), rescue)
        ctx.target.keep_path(walk.path)
        yield Step(walk.records, drafted=len(drafted.tree), accepted=len(walk.path),
                   accepted_flags=[True] * len(walk.path) + [False] * walk.rejected,
                   draft_seconds=drafted_at - start, verify_seconds=time.perf_counter() - drafted_at,
                   forwards={ctx.draft.name: drafted.draft_forwards, ctx.target.name: 1},
                   extra={"tree": _tree_figures(drafted.tree, walk)}, evidence=evidence_of(walk.evidence))


def _tree_figures(tree: TokenTree, walk: Walk) -> dict:
    """What step mode draws and the stats count: every node, its parent, and the accepted path."""
    return {"tokens": list(tree.tokens), "parents": list(tree.parents), "path": list(walk.path)}
