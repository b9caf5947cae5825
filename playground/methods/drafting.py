"""Drafting a block with the draft model, its samples kept on the device.

Each drafted token goes back into the draft as a tensor, so the loop never waits for a value on
the host (on a GPU, a sync point: the host idles until the device catches up). With
`draft_confidence` set it reads once per drafted token, since stopping after a doubted token is
the host's decision; without it the block is read once, at its end.

A token tree (token_trees.py) asks for `width - 1` siblings beside each token: drawn from q
without the tokens already taken while q has mass left, else (a greedy draft) the draft's next
most likely tokens, deterministically (a one-hot q). They are drawn with the token, on the
device, and read with it.
"""

from dataclasses import dataclass, field

import torch

from ..sampling import one_hot_argmax, raw_probs
from .base import Decoding


@dataclass
class DraftedBlock:
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


def draft(ctx: Decoding, runner, k: int, width: int = 1) -> DraftedBlock:
    """Up to k tokens from `runner` after ctx.ids, ending after a token the draft doubts."""
    stops = ctx.config.draft_confidence > 0
    drafted, read = [], []
    logits = runner.next_logits(ctx.ids)[-1] if k else None
    for depth in range(k):
        drafted.append(_draft_position(ctx, logits, width))
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


def _draft_position(ctx: Decoding, logits: torch.Tensor, width: int) -> _OnDevice:
    q = ctx.sampler.probs(logits)
    if ctx.config.draft_sampling == "greedy":
        q = one_hot_argmax(q)
    q_raw = raw_probs(logits)
    token = ctx.sampler.draw_rows(q[None])
    doubted = ctx.doubts(q_raw, token)
    sibling_tokens, sibling_qs, exists = _siblings(ctx, q, q_raw, token, width - 1)
    numbers = torch.cat([token, doubted.long(), *(torch.cat([t, e.long()]) for t, e in zip(sibling_tokens, exists))])
    return _OnDevice(token, q, q_raw, sibling_qs, numbers)


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


def _block(runner, drafted: list[_OnDevice], read: list[list[int]]) -> DraftedBlock:
    if not drafted:
        empty = torch.empty(0, runner.model.config.vocab_size, device=runner.device)
        return DraftedBlock([], empty, empty)
    block = DraftedBlock([numbers[0] for numbers in read], torch.stack([d.q for d in drafted]),
                         torch.stack([d.q_raw for d in drafted]), [bool(numbers[1]) for numbers in read])
    for numbers, position in zip(read, drafted):
        pairs = zip(numbers[2::2], numbers[3::2], position.sibling_qs)
        block.siblings.append([(token, q) for token, exists, q in pairs if exists])
    return block
