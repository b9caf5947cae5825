"""The most a run's speedup over `ar` can be, from its own measured costs: what a screen checks a
measured or estimated speedup against before showing it plain.

A run of N tokens made D draft forwards and P target passes. `ar` makes the same N tokens in N
target steps T(1). A draft forward costs c T(1) (the run's measured cost ratio, Stats.cost_ratio)
and a target pass at least T(1) (a pass over several tokens never costs less than one token's:
Stats.verify_cost >= 1), so the run took at least D c + P target steps, and its speedup is at most
N / (D c + P): Theorem 3.8's prediction (cost_model.round_costs) with every pass at its cheapest.
At best every round keeps all K drafts, N = R (K + 1) for D = R K and P = R: (K + 1) / (K c + 1),
below 1/c however long the block. A figure above it was measured while something else slowed the
`ar` side (or T(1) was timed while the machine was busy).
"""

from dataclasses import dataclass

from .cost_model import round_costs

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

    def flag(self, speedup: float) -> str:
        """Why `speedup` cannot be right, in one line."""
        return f"{self.bound:.2f}x at most from this run's costs ({self.inputs()}); the machine was busy"


def speedup_bound(stats) -> SpeedBound | None:
    """The bound of a run's Stats, or None where it cannot be told (a run that drafted without a
    measured c, made no target pass, or ran without the target: draft-only's speed is its own)."""
    if stats.target_role != "target":
        return None
    drafts = stats.forwards.get(stats.draft_role, 0)
    passes = stats.forwards.get(stats.target_role, 0)
    cost = stats.cost_ratio() if drafts else None
    if not stats.tokens or not passes or (drafts and cost is None):
        return None
    least = sum(round_costs(drafts, passes, 0, cost or 0.0, 1.0).values())
    return SpeedBound(stats.tokens / least, stats.tokens, drafts, passes, cost)
