"""A verified position's `Evidence`, from the distributions the rule used there.

A rule collects its checks as `Pending` (rows still tensors) and turns a whole round's into
Evidence at once: one read of their numbers from the device, not one per probability.
"""

from collections.abc import Sequence
from copy import deepcopy
from dataclasses import dataclass, replace

import torch

from ..decoding.step import Evidence

TOP_K = 8  # tokens kept per distribution


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
    return list(LazyEvidence(pending))


class LazyEvidence(Sequence):
    """A round's checks as Evidence whose numbers are read from the device only when someone looks
    (step mode, the JSON export): a generation nobody inspects never waits for them. What it keeps
    until then is small: each distribution's top tokens and the candidate's probability, not the rows."""

    def __init__(self, pending: list[Pending]):
        self._checks = [replace(check, rows=dict.fromkeys(check.rows)) for check in pending]
        self._k = [min(TOP_K, next(iter(check.rows.values())).shape[-1]) for check in pending]
        self._numbers = _numbers(pending)
        self._read: list[Evidence] | None = None

    def _evidence(self) -> list[Evidence]:
        if self._read is None:
            numbers = iter(self._numbers.tolist())
            self._read = [_read(check, k, numbers) for check, k in zip(self._checks, self._k)]
            self._numbers = None
        return self._read

    def __len__(self) -> int:
        return len(self._checks)

    def __getitem__(self, index):
        return self._evidence()[index]

    def __eq__(self, other) -> bool:
        return list(self) == list(other)

    def __deepcopy__(self, memo) -> list[Evidence]:  # dataclasses.asdict copies a Step's fields
        return deepcopy(self._evidence(), memo)


def _numbers(pending: list[Pending]) -> torch.Tensor:
    """Per check: each row's probability of the candidate, then each row's top values and ids."""
    parts = []
    for check in pending:
        rows = torch.stack(list(check.rows.values()))
        values, ids = rows.topk(min(TOP_K, rows.shape[-1]), dim=-1)
        parts += [rows[:, check.candidate], values.flatten(), ids.flatten()]
    return torch.cat([part.double() for part in parts]) if parts else torch.empty(0, dtype=torch.float64)


def _read(check: Pending, k: int, numbers) -> Evidence:
    names = list(check.rows)
    at_candidate = {name: next(numbers) for name in names}
    values = {name: [next(numbers) for _ in range(k)] for name in names}
    ids = {name: [int(next(numbers)) for _ in range(k)] for name in names}
    top = {name: [(i, v) for i, v in zip(ids[name], values[name]) if v > 0] for name in names}
    return Evidence(check.stage, check.position, check.candidate, check.verdict, check.emitted, dict(check.checks),
                    at_candidate, top, check.drawn_from, check.test)
