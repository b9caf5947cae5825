"""A verified position's `Evidence`, from the distributions the rule used there.

A rule collects its checks as `Pending` (rows still tensors) and turns a whole round's into
Evidence at once: one read of their numbers from the device, not one per probability.
"""

from dataclasses import dataclass

import torch

from ..step import Evidence

TOP_K = 8  # tokens kept per distribution


def top_tokens(row: torch.Tensor, k: int = TOP_K) -> list[tuple[int, float]]:
    values, ids = row.topk(min(k, row.shape[-1]))
    return [(i, v) for i, v in zip(ids.tolist(), values.tolist()) if v > 0]


@dataclass
class Pending:
    """One check as the rule saw it. `rows`: distribution name -> its 1-D probabilities at this
    position (all of one length); `test`: the rule's acceptance test (acceptance.py)."""

    stage: str
    position: int
    candidate: int
    verdict: str
    emitted: int
    checks: dict
    rows: dict[str, torch.Tensor]
    drawn_from: str | None = None
    test: object = None


def evidence(*fields, **named) -> Evidence:
    """One check's Evidence (Pending's fields)."""
    return evidence_of([Pending(*fields, **named)])[0]


def evidence_of(pending: list[Pending]) -> list[Evidence]:
    """Every check of a round as Evidence, its numbers read from the device in one go."""
    parts = []
    for check in pending:
        rows = torch.stack(list(check.rows.values()))
        values, ids = rows.topk(min(TOP_K, rows.shape[-1]), dim=-1)
        parts += [rows[:, check.candidate], values.flatten(), ids.flatten()]
    numbers = iter(torch.cat([part.double() for part in parts]).tolist() if parts else [])
    return [_read(check, numbers) for check in pending]


def _read(check: Pending, numbers) -> Evidence:
    names, k = list(check.rows), min(TOP_K, next(iter(check.rows.values())).shape[-1])
    at_candidate = {name: next(numbers) for name in names}
    values = {name: [next(numbers) for _ in range(k)] for name in names}
    ids = {name: [int(next(numbers)) for _ in range(k)] for name in names}
    top = {name: [(i, v) for i, v in zip(ids[name], values[name]) if v > 0] for name in names}
    return Evidence(check.stage, check.position, check.candidate, check.verdict, check.emitted, dict(check.checks),
                    at_candidate, top, check.drawn_from, check.test)
