"""Every check of a token tree's round, computed on the device before the walk and read at once.

Recursive rejection sampling (token_trees.py) tries a node's children in order against p_1 = p,
p_(i+1) = norm(max(0, p_i - q_i)). Which p_i a child meets depends only on its place among its
siblings, so every child's ratio min(1, p_i(x) / q_i(x)) and uniform draw can be made before the
walk; so can each node's final draw: from the residual left after all its children (the
correction, if every child is rejected), or from p itself at a leaf (the bonus). The draws are
independent and each is used only in the event it is made for, so the walk is exact; and the host
waits for the device once a round, not once per check.
"""

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..divergence import divergence
from ..sampling import residual
from ..token_tree import TokenTree
from .base import Decoding


@dataclass
class TreeChecks:
    """Per node i (as children): `ratio[i]`, `u[i]`, `p_at[i]` = p(x_i) at its parent, `q_at[i]`
    = q_i(x_i), `divergence[i]` between the raw p at its parent and the draft's raw q; per row r (0 the root, 1 + i node i): `draw[r]` from its final distribution and
    `p_draw[r]`, `p_raw_draw[r]` (the drawn token's p and raw p there). `rows(i)`: the
    distributions node i's check used, still on the device (for the evidence)."""

    ratio: list[float]
    u: list[float]
    p_at: list[float]
    q_at: list[float]
    divergence: list[float]
    draw: list[int]
    p_draw: list[float]
    p_raw_draw: list[float]
    rows: Callable[[int], dict]


def check_tree(ctx: Decoding, tree: TokenTree, q: list[torch.Tensor], q_raw: list[torch.Tensor],
               p: torch.Tensor, p_raw: torch.Tensor) -> TreeChecks:
    """`p`/`p_raw`: the target's rows, 0 for the root and 1 + i for node i; `q[i]`: what node i
    was drawn from. Both sides are cut to the smaller vocabulary (ids past it are padding)."""
    n, vocab = len(tree), min(p.shape[-1], q[0].shape[-1] if q else p.shape[-1])
    p, p_raw = p[:, :vocab], p_raw[:, :vocab]
    tried, left_after, final = [None] * n, [None] * n, []
    for row in range(1 + n):
        p_i = p[row]
        for child in tree.children(row - 1):
            tried[child] = p_i
            p_i = left_after[child] = residual(p_i, q[child][:vocab])
        final.append(p_i)
    draw = ctx.sampler.draw_rows(torch.stack(final))
    ratio = u = p_at = q_at = divergences = p.new_empty(0)
    if n:
        tokens = torch.tensor(tree.tokens, device=p.device)[:, None]
        at_parents = [1 + parent for parent in tree.parents]
        p_at = p[at_parents].gather(1, tokens)[:, 0]
        divergences = divergence(ctx.config.divergence, p_raw[at_parents], torch.stack([row[:vocab] for row in q_raw]))
        q_at = torch.stack([row[:vocab] for row in q]).gather(1, tokens)[:, 0]
        ratio = (torch.stack(tried).gather(1, tokens)[:, 0] / q_at).clamp(max=1.0)
        u = ctx.sampler.uniforms(n).to(p.device)
    parts = [draw, p.gather(1, draw[:, None])[:, 0], p_raw.gather(1, draw[:, None])[:, 0], ratio, u, p_at, q_at,
             divergences]
    read = torch.cat([part.double() for part in parts]).tolist()  # the round's one wait for the device
    draw, p_draw, p_raw_draw, ratio, u, p_at, q_at, divergences = _split(read, [len(part) for part in parts])

    def rows(i: int) -> dict:
        return {"p": tried[i], "q": q[i][:vocab], "p_raw": p_raw[1 + tree.parents[i]], "q_raw": q_raw[i][:vocab],
                "residual": left_after[i]}
    return TreeChecks(ratio, u, p_at, q_at, divergences, [int(token) for token in draw], p_draw, p_raw_draw, rows)


def _split(numbers: list, sizes: list[int]) -> list[list]:
    parts, start = [], 0
    for size in sizes:
        parts.append(numbers[start:start + size])
        start += size
    return parts
