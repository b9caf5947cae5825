"""A verified position's `Evidence`, from the distributions the rule used there."""

import torch

from ..step import Evidence

TOP_K = 8  # tokens kept per distribution


def top_tokens(row: torch.Tensor, k: int = TOP_K) -> list[tuple[int, float]]:
    values, ids = row.topk(min(k, row.shape[-1]))
    return [(i, v) for i, v in zip(ids.tolist(), values.tolist()) if v > 0]


def evidence(stage: str, position: int, candidate: int, verdict: str, emitted: int, checks: dict,
             rows: dict[str, torch.Tensor], drawn_from: str | None = None, test=None) -> Evidence:
    """`rows`: distribution name -> its 1-D probabilities at this position; `test`: the rule's
    acceptance test (acceptance.py)."""
    return Evidence(stage, position, candidate, verdict, emitted, dict(checks),
                    {name: float(row[candidate]) for name, row in rows.items()},
                    {name: top_tokens(row) for name, row in rows.items()}, drawn_from, test)
