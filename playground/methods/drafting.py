"""A round's proposal, the one draft record every method's walk verifies (walk.py): a token tree,
a chain being a tree of width 1 and a prompt lookup's proposal one more branch.

Drafting with a model keeps its samples on the device: each drafted token goes back into the
draft as a tensor, so the loop never waits for a value on the host (on a GPU, a sync point: the
host idles until the device catches up). With `draft_confidence` set it reads once per drafted
token, since stopping after a doubted token is the host's decision; without it the block is read
once, at its end.

A token tree asks for `width - 1` siblings beside each token the draft doubts (at every depth
when that lever is off): drawn from q without the tokens already taken while q has mass left,
else (a greedy draft) the draft's next most likely tokens, deterministically (a one-hot q). They
are drawn with the token, on the device, and read with it.
"""

from dataclasses import dataclass, field

import torch

from ..decoding.ngram import proposal
from ..decoding.sampling import one_hot_argmax, raw_probs
from ..decoding.token_tree import TokenTree
from .base import Decoding


@dataclass
class Drafted:
    """Per node i of `tree`: `q[i]` the distribution its token was drawn from (one-hot for a token
    picked deterministically); `q_raw[i]` the proposer's raw (T = 1) distribution it was drawn
    from, without the tokens of its earlier siblings (None: the proposer has no distribution in
    the verifier's vocabulary, so no divergence); `origins[i]` what the node is when kept;
    `notes[i]` what its record adds (where its text came from, an earlier stage's check);
    `from_lookup[i]` whether the prompt lookup's branch put it there.
    `draft_forwards`: what drafting cost (siblings and the lookup branch cost none)."""

    tree: TokenTree = field(default_factory=TokenTree)
    q: list[torch.Tensor] = field(default_factory=list)
    q_raw: list[torch.Tensor | None] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)
    from_lookup: list[bool] = field(default_factory=list)
    draft_forwards: int = 0

    def add(self, token: int, parent: int, q: torch.Tensor, q_raw: torch.Tensor | None, origin: str = "draft",
            note: dict | None = None, lookup: bool = False) -> int:
        self.q.append(q)
        self.q_raw.append(q_raw)
        self.origins.append(origin)
        self.notes.append(note or {})
        self.from_lookup.append(lookup)
        return self.tree.add(token, parent)

    def __len__(self) -> int:
        return len(self.tree)


def chain(tokens: list[int], q, q_raw, origins=None, notes=None, forwards: int | None = None) -> Drafted:
    """Tokens as a chain: node i the child of node i - 1."""
    drafted = Drafted(draft_forwards=len(tokens) if forwards is None else forwards)
    for depth, token in enumerate(tokens):
        drafted.add(token, depth - 1, q[depth], None if q_raw is None else q_raw[depth],
                    origins[depth] if origins else "draft", notes[depth] if notes else None)
    return drafted


def draft_tree(ctx: Decoding, runner, k: int) -> Drafted:
    """The draft's chain of up to k tokens after ctx.ids; in a tree (tree_width > 1), siblings
    beside each token the draft doubts (everywhere when draft_confidence is off) and the prompt
    lookup's proposal as one more branch."""
    block = _draft(ctx, runner, k, ctx.config.tree_width)
    drafted = chain(block.tokens, block.q, block.q_raw)
    for depth, siblings in enumerate(block.siblings):
        if not ctx.config.draft_confidence or block.doubted[depth]:
            taken = [block.tokens[depth]]
            for sibling, q_sibling in siblings:
                drafted.add(sibling, depth - 1, q_sibling, _without(block.q_raw[depth], taken))
                taken.append(sibling)
    if ctx.config.tree_width > 1:
        add_lookup_branch(drafted, proposal(ctx.ids, k)[0], block.q_raw.shape[-1], runner.device)
    return drafted


def _without(row: torch.Tensor, tokens: list[int]) -> torch.Tensor:
    """`row` with `tokens` taken out, renormalized: what a sibling drawn after them was drawn from."""
    left = row.clone()
    left[tokens] = 0.0
    return left / left.sum().clamp_min(torch.finfo(left.dtype).tiny)


def lookup_chain(ctx: Decoding, k: int) -> Drafted:
    """A prompt-lookup draft (`ctx.lookup`) in the draft's place: a chain at no draft cost."""
    tokens = ctx.lookup.propose(ctx.ids, k)
    one_hot = one_hots(tokens, ctx.target.vocab_size, ctx.target.device)
    return chain(tokens, one_hot, one_hot, forwards=0)


def add_lookup_branch(drafted: Drafted, tokens: list[int], vocab: int, device) -> None:
    """A prompt lookup's proposal merged into the tree: it follows the nodes that already hold its
    tokens and branches off where they differ, each new node one-hot on its token (its record
    says it came from the lookup)."""
    node, tree = -1, drafted.tree
    for token, one_hot in zip(tokens, one_hots(tokens, vocab, device)):
        same = next((child for child in tree.children(node) if tree.tokens[child] == token), None)
        node = drafted.add(token, node, one_hot, one_hot, lookup=True) if same is None else same


def one_hots(tokens: list[int], vocab: int, device) -> torch.Tensor:
    rows = torch.zeros(len(tokens), vocab, device=device)
    if tokens:
        rows[torch.arange(len(tokens)), torch.tensor(tokens)] = 1.0
    return rows


@dataclass
class _Block:
    """`q[i]`: the distribution token i was drawn from; `q_raw[i]`: the draft's raw distribution
    there; `doubted[i]`: the draft gave token i less than draft_confidence; `siblings[i]`: the
    (token, q it was drawn from) beside token i."""

    tokens: list[int]
    q: torch.Tensor
    q_raw: torch.Tensor
    doubted: list[bool] = field(default_factory=list)
    siblings: list[list[tuple[int, torch.Tensor]]] = field(default_factory=list)


@dataclass
class _OnDevice:
    """One drafted position before the host reads it: `numbers` = token, doubted, then per
    sibling its token and whether it exists."""

    token: torch.Tensor
    q: torch.Tensor
    q_raw: torch.Tensor
    sibling_qs: list[torch.Tensor]
    numbers: torch.Tensor


def _draft(ctx: Decoding, runner, k: int, width: int) -> _Block:
    """Up to k tokens from `runner` after ctx.ids, ending after a token the draft doubts."""
    stops = ctx.config.draft_confidence > 0
    drafted, read = [], []
    logits = runner.next_logits(ctx.ids)[-1] if k else None
    support = getattr(runner, "support", None)
    for depth in range(k):
        drafted.append(_draft_position(ctx, logits, width, support))
        if stops:
            read.append(drafted[-1].numbers.tolist())
            if read[-1][1]:
                break
        if depth < k - 1:
            logits = runner.logits_after(drafted[-1].token)
    if not stops and drafted:
        read = torch.stack([position.numbers for position in drafted]).tolist()
    block = _block(runner, drafted, read)
    runner.settle(ctx.ids + block.tokens)
    return block


def _draft_position(ctx: Decoding, logits: torch.Tensor, width: int, support: torch.Tensor | None) -> _OnDevice:
    """A drafted token and its siblings. A draft that scores only `support` (a pruned head, a
    feature draft's own vocabulary) is sampled there: over the whole vocabulary the softmaxes and
    the draw cost a feature draft as much as its layer; q is spread back over the vocabulary after."""
    vocab = len(logits)
    if support is not None:
        logits = logits[support]
    q = ctx.sampler.probs(logits)
    if ctx.config.draft_sampling == "greedy":
        q = one_hot_argmax(q)
    q_raw = raw_probs(logits)
    token = ctx.sampler.draw_rows(q[None])
    doubted = ctx.doubts(q_raw, token)
    sibling_tokens, sibling_qs, exists = _siblings(ctx, q, q_raw, token, width - 1)
    if support is not None:
        token, sibling_tokens = support[token], [support[t] for t in sibling_tokens]
        q, q_raw, *sibling_qs = (_spread(row, support, vocab) for row in (q, q_raw, *sibling_qs))
    numbers = torch.cat([token, doubted.long(), *(torch.cat([t, e.long()]) for t, e in zip(sibling_tokens, exists))])
    return _OnDevice(token, q, q_raw, sibling_qs, numbers)


def _spread(row: torch.Tensor, support: torch.Tensor, vocab: int) -> torch.Tensor:
    """A distribution over `support` as one over the vocabulary (0 elsewhere)."""
    return row.new_zeros(vocab).index_copy_(0, support, row)


def _siblings(ctx: Decoding, q: torch.Tensor, q_raw: torch.Tensor, drawn: torch.Tensor, n: int):
    """n more candidates beside `drawn`, as 1-element tensors (an index that is a tensor of one
    element stays on the device; a 0-d one can be read as a Python number)."""
    left, ranked = q.clone(), q_raw.clone()
    left[drawn], ranked[drawn] = 0.0, -1.0
    tokens, qs, exists = [], [], []
    for _ in range(n):
        mass = left.sum().reshape(1)
        from_mass = left / mass.clamp_min(torch.finfo(left.dtype).tiny)
        by_mass = mass > 0  # decided on the device, as torch.where below
        best = ranked.argmax().reshape(1)
        token = torch.where(by_mass, ctx.sampler.draw_rows(from_mass[None]), best)
        qs.append(torch.where(by_mass, from_mass, one_hot_argmax(ranked)))
        exists.append(by_mass | (ranked[best] > 0))
        tokens.append(token)
        left[token], ranked[token] = 0.0, -1.0
    return tokens, qs, exists


def _block(runner, drafted: list[_OnDevice], read: list[list[int]]) -> _Block:
    if not drafted:
        empty = torch.empty(0, runner.vocab_size, device=runner.device)
        return _Block([], empty, empty)
    block = _Block([numbers[0] for numbers in read], torch.stack([d.q for d in drafted]),
                         torch.stack([d.q_raw for d in drafted]), [bool(numbers[1]) for numbers in read])
    for numbers, position in zip(read, drafted):
        pairs = zip(numbers[2::2], numbers[3::2], position.sibling_qs)
        block.siblings.append([(token, q) for token, exists, q in pairs if exists])
    return block
