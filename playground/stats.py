"""Running statistics of a run, named as the serving engines name them."""

import time
from collections import Counter

from .step import ORIGINS, Step


def expected_tokens_per_step(alpha: float, k: int) -> float:
    """Leviathan et al. (2023), Eq. 1: (1 - a^(K+1)) / (1 - a)."""
    return k + 1.0 if alpha >= 1 else (1 - alpha ** (k + 1)) / (1 - alpha)


def expected_speedup(alpha: float, k: int, cost_ratio: float) -> float:
    """Leviathan et al. (2023), Theorem 3.8: walltime improvement with draft/target cost c."""
    return expected_tokens_per_step(alpha, k) / (k * cost_ratio + 1)


class Stats:
    def __init__(self, target_role: str = "target", draft_role: str = "draft"):
        self.target_role, self.draft_role = target_role, draft_role
        self.started = time.perf_counter()
        self.elapsed = 0.0
        self.steps = self.drafted = self.accepted = self.tokens = 0
        self.draft_seconds = self.verify_seconds = 0.0
        self.position_drafted: Counter = Counter()
        self.position_accepted: Counter = Counter()
        self.acceptance_lengths: Counter = Counter()
        self.forwards: Counter = Counter()
        self.origins: Counter = Counter()
        self.max_block = 0

    def add(self, step: Step) -> None:
        self.elapsed = time.perf_counter() - self.started
        self.steps += 1
        self.drafted += step.drafted
        self.accepted += step.accepted
        self.tokens += len(step.tokens)
        self.draft_seconds += step.draft_seconds
        self.verify_seconds += step.verify_seconds
        self.forwards.update(step.forwards)
        self.origins.update(t.origin for t in step.tokens)
        for position, accepted in enumerate(step.accepted_flags):
            self.position_drafted[position] += 1
            self.position_accepted[position] += accepted
        if step.drafted:
            self.max_block = max(self.max_block, step.drafted)
            self.acceptance_lengths[_leading_accepted(step.accepted_flags)] += 1

    @property
    def acceptance_rate(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None

    def cost_ratio(self) -> float | None:
        """Seconds per draft forward over seconds per target forward (Leviathan's c)."""
        draft_forwards, target_forwards = self.forwards[self.draft_role], self.forwards[self.target_role]
        if not (draft_forwards and target_forwards and self.verify_seconds):
            return None
        return (self.draft_seconds / draft_forwards) / (self.verify_seconds / target_forwards)

    def to_dict(self) -> dict:
        target_forwards = self.forwards[self.target_role]
        alpha, cost = self.acceptance_rate, self.cost_ratio()
        predicted = None
        if alpha is not None and cost is not None and self.max_block:
            predicted = expected_speedup(alpha, self.max_block, cost)
        return {
            "steps": self.steps,
            "tokens": self.tokens,
            "drafted": self.drafted,
            "accepted": self.accepted,
            "rejected": self.drafted - self.accepted,
            "acceptance_rate": alpha,
            "mean_acceptance_length": self.tokens / target_forwards if target_forwards else None,
            "per_position_acceptance_rate": [
                self.position_accepted[i] / self.position_drafted[i] for i in sorted(self.position_drafted)],
            "acceptance_length_histogram": {str(k): v for k, v in sorted(self.acceptance_lengths.items())},
            "seconds": self.elapsed,
            "tokens_per_second": self.tokens / self.elapsed if self.elapsed else None,
            "draft_seconds": self.draft_seconds,
            "verify_seconds": self.verify_seconds,
            "forwards": dict(self.forwards),
            "origin_counts": {origin: self.origins[origin] for origin in ORIGINS},
            "origin_shares": {origin: self.origins[origin] / self.tokens if self.tokens else 0.0
                              for origin in ORIGINS},
            "cost_ratio": cost,
            "expected_speedup": predicted,
        }


def _leading_accepted(flags: list[bool]) -> int:
    count = 0
    for flag in flags:
        if not flag:
            break
        count += 1
    return count
