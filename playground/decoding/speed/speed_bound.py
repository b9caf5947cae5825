"""The most a run's speedup over `ar` can be, from its own measured costs: what a screen checks a
measured speedup against before showing it plain.

A run of N tokens made D draft forwards and P target passes, the first over the prompt (F, as
measured). `ar` makes the same N tokens in F + (N - 1) (T(1) + H), H its host time per token
(docs/speed.md). A draft forward costs c T(1) and a
later target pass at least T(1) (a pass over several tokens never costs less than one token's),
so the run took at least D c T(1) + F + (P - 1) T(1), and its speedup is at most
(F + (N - 1) (1 + H)) / (D c + F + P - 1) in T(1) (SpeedAccount.bound). At best every round keeps all K
drafts: below 1/c however long the block. A figure above it was measured while something else
slowed the `ar` side.
"""

from dataclasses import dataclass

TOLERANCE = 1.1  # a figure past the bound by less than this is timing noise, not a contradiction


@dataclass(frozen=True)
class SpeedBound:
    """The bound and its inputs, to show beside a flagged figure."""

    bound: float
    tokens: int
    draft_forwards: int
    target_passes: int
    cost_ratio: float | None

    def inputs(self) -> str:
        drafting = f"{self.draft_forwards} draft steps at c = {self.cost_ratio:.3f}" if self.draft_forwards else \
            "no draft steps"
        return f"{self.tokens} tokens, {drafting}, {self.target_passes} target passes of ≥ 1 step"

    def exceeded_by(self, speedup: float | None) -> bool:
        return speedup is not None and speedup > self.bound * TOLERANCE


def speedup_bound(stats) -> SpeedBound | None:
    """The bound of a run's Stats, or None where it cannot be told (no T(1) timed, no target pass,
    or a run without the target: draft-only's speed is its own)."""
    account = stats.account
    bound = account.bound() if stats.target_role == "target" else None
    if bound is None:
        return None
    return SpeedBound(bound, account.tokens, account.draft_forwards, account.target_passes, account.cost_ratio())
