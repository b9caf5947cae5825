"""Running statistics of a run, named as the serving engines name them."""

import statistics
import time
from collections import Counter

from .cost_model import round_costs
from .step import ORIGINS, Step

# PyramidSD's first stage, from its steps' extras: the draft's tokens the qualifier checked and
# those it accepted. The acceptance rate is the second stage's (the target checking the block the
# qualifier passed on), which may read 100% while the qualifier replaced draft tokens.
STAGE_ONE = ("qualifier_drafted", "qualifier_accepted")


class Stats:
    """`single_step_seconds` is the target's one-token step T(1) (from `forward_costs`): with it, c
    and the verification cost are in units of T(1), the step that decoding without a draft takes."""

    def __init__(self, target_role: str = "target", draft_role: str = "draft",
                 single_step_seconds: float | None = None):
        self.target_role, self.draft_role = target_role, draft_role
        self.single_step_seconds = single_step_seconds
        self.started = time.perf_counter()
        self.elapsed = 0.0
        # The decoder's own clock at the end of each step: seconds since the start, less the time
        # its consumer (a page being updated, say) kept it waiting. What a race replays.
        self.step_clock: list[float] = []
        self.steps = self.drafted = self.accepted = self.tokens = 0
        self.block_tokens = 0  # tokens of the steps that drafted
        self.block_draft_forwards = 0  # draft forwards of those steps (a tree verifies more nodes than that)
        self.draft_seconds = self.verify_seconds = 0.0
        self.check_seconds = 0.0  # of verify_seconds: the checks and the walk after the pass
        # Seconds per forward within each step, by role: c and the verification cost are their
        # medians, so a step the machine held up (a page redrawing beside the run) does not pass
        # for the model's cost. The totals above stay the wall-clock truth.
        self.step_costs: dict[str, list[float]] = {target_role: [], draft_role: []}
        self.position_drafted: Counter = Counter()
        self.position_accepted: Counter = Counter()
        self.acceptance_lengths: Counter = Counter()
        self.block_sizes: Counter = Counter()
        self.forwards: Counter = Counter()
        self.origins: Counter = Counter()
        self.stage_one: Counter = Counter()
        self.max_block = 0

    def add(self, step: Step, waited: float = 0.0) -> None:
        """Count one step; `waited` is how long the run's consumer has held it paused so far."""
        self.elapsed = time.perf_counter() - self.started
        self.step_clock.append(self.elapsed - waited)
        self.steps += 1
        self.drafted += step.drafted
        self.accepted += step.accepted
        self.tokens += len(step.tokens)
        self.draft_seconds += step.draft_seconds
        self.verify_seconds += step.verify_seconds
        self.check_seconds += step.extra.get("check_seconds", 0.0)
        self.forwards.update(step.forwards)
        for role, seconds in ((self.draft_role, step.draft_seconds), (self.target_role, step.verify_seconds)):
            if seconds and step.forwards.get(role):
                self.step_costs[role].append(seconds / step.forwards[role])
        self.origins.update(t.origin for t in step.tokens)
        self.stage_one.update({key: step.extra[key] for key in STAGE_ONE if key in step.extra})
        for position, accepted in enumerate(step.accepted_flags):
            self.position_drafted[position] += 1
            self.position_accepted[position] += accepted
        if step.drafted:
            self.block_tokens += len(step.tokens)
            self.block_draft_forwards += step.forwards.get(self.draft_role, 0)
            self.max_block = max(self.max_block, step.drafted)
            self.block_sizes[step.drafted] += 1
            self.acceptance_lengths[_leading_accepted(step.accepted_flags)] += 1

    @property
    def acceptance_rate(self) -> float | None:
        return self.accepted / self.drafted if self.drafted else None

    @property
    def candidate_acceptance(self) -> float | None:
        """Accepted / examined candidates. The acceptance rate divides by all drafted candidates, and
        those after a block's first rejection are never examined; a per-candidate acceptance
        probability (the bench's fsd-random control) must be matched to this one."""
        if not self.steps or not self.drafted:
            return None
        full_blocks = self.acceptance_lengths[len(self.position_drafted)]
        examined = self.accepted + self.steps - full_blocks
        return self.accepted / examined if examined else None

    @property
    def mean_acceptance_length(self) -> float | None:
        """Tokens per target forward, the target's own token included."""
        target_forwards = self.forwards[self.target_role]
        return self.tokens / target_forwards if target_forwards else None

    @property
    def drafted_per_pass(self) -> float | None:
        """Candidates (a tree's nodes) the target verified per forward."""
        target_forwards = self.forwards[self.target_role]
        return self.drafted / target_forwards if target_forwards else None

    @property
    def per_position_acceptance_rate(self) -> list[float]:
        return [self.position_accepted[i] / self.position_drafted[i] for i in sorted(self.position_drafted)]

    @property
    def tokens_per_second(self) -> float | None:
        return self.tokens / self.elapsed if self.elapsed else None

    @property
    def decoder_seconds(self) -> float:
        """The decoder's own clock at its last step: the run's seconds less the time its consumer
        held it paused (a page being updated, other runs' turns on a shared model)."""
        return self.step_clock[-1] if self.step_clock else self.elapsed

    @property
    def origin_shares(self) -> dict[str, float]:
        return {origin: self.origins[origin] / self.tokens if self.tokens else 0.0 for origin in ORIGINS}

    def _seconds_per_forward(self, role: str) -> float | None:
        """The typical step's seconds per forward of `role` (the median over the steps)."""
        costs = self.step_costs[role]
        return statistics.median(costs) if costs else None

    def target_step(self) -> float | None:
        """T(1), at most a typical verification pass (a pass over more tokens never costs less:
        a T(1) above it was measured while the machine was busy, and read 0.05x passes and a
        17.6x prediction at 2% acceptance); a verification pass when T(1) is unknown."""
        verify = self._seconds_per_forward(self.target_role)
        if self.single_step_seconds and verify:
            return min(self.single_step_seconds, verify)
        return self.single_step_seconds or verify

    def cost_ratio(self) -> float | None:
        """Seconds per draft forward over the target's one-token step (Leviathan's c)."""
        draft, unit = self._seconds_per_forward(self.draft_role), self.target_step()
        return draft / unit if draft and unit else None

    def verify_cost(self) -> float | None:
        """Seconds per verification pass over T(1): what Leviathan's formula takes to be 1."""
        verify = self._seconds_per_forward(self.target_role)
        return verify / self.target_step() if verify and self.single_step_seconds else None

    def predicted_speedup(self) -> float | None:
        """Theorem 3.8 with what this run measured: the tokens its drafted blocks yielded over what
        they cost in target steps (each draft forward c, each verification pass `verify_cost`, which
        for a tree is the pass over all its nodes), against
        one target step per token without a draft. Eq. 1 would predict the tokens from acceptance
        rates, but blocks that end when the draft doubts are not of a fixed K: the long ones are
        those the draft was sure of, and rates pooled over blocks under-predicted their tokens
        (4% on the embedded family). So this checks the cost model, which on a CPU is the hard part."""
        cost, verify_cost = self.cost_ratio(), self.verify_cost() or 1.0
        blocks = sum(self.block_sizes.values())
        if not blocks or cost is None:
            return None
        return self.block_tokens / sum(round_costs(self.block_draft_forwards, blocks, 0, cost, verify_cost).values())

    def budget(self) -> dict[str, dict[str, float]] | None:
        """Where the run's seconds went, on the decoder's own clock (what a page held it paused is
        not counted): drafting (PyramidSD's qualifier included), the target's passes, the checks
        and the walk, and the host's time between them (the rest). Beside it, the cost model's
        prediction of the same rounds (each draft forward c, each pass `verify_cost`, in T(1)) and
        `ar`'s time for the same tokens (tokens x T(1)): estimates, from the measured T(1)."""
        if not self.step_clock:
            return None
        passes = self.verify_seconds - self.check_seconds
        measured = {"drafting": self.draft_seconds, "target passes": passes, "checks and walk": self.check_seconds}
        measured["host, between them"] = self.step_clock[-1] - sum(measured.values())
        out = {"this run (measured)": measured}
        unit, cost, verify_cost = self.target_step(), self.cost_ratio(), self.verify_cost() or 1.0
        if unit:
            undrafted = self.steps - sum(self.block_sizes.values())
            if cost is not None:
                blocks = sum(self.block_sizes.values())
                predicted = round_costs(self.block_draft_forwards, blocks, undrafted, cost, verify_cost)
                out["cost model (predicted)"] = {part: steps * unit for part, steps in predicted.items()}
            out["ar, same tokens (tokens x T(1))"] = {"target passes": self.tokens * unit}
        return out

    def to_dict(self) -> dict:
        """CONTRACT: the statistics as the CLI's JSON and the UI's stats panel show them."""
        return {
            "steps": self.steps,
            "tokens": self.tokens,
            "drafted": self.drafted,
            "accepted": self.accepted,
            "rejected": self.drafted - self.accepted,
            "acceptance_rate": self.acceptance_rate,
            "mean_acceptance_length": self.mean_acceptance_length,
            "drafted_per_pass": self.drafted_per_pass,
            "per_position_acceptance_rate": self.per_position_acceptance_rate,
            "acceptance_length_histogram": {str(k): v for k, v in sorted(self.acceptance_lengths.items())},
            "seconds": self.elapsed,
            "tokens_per_second": self.tokens_per_second,
            "draft_seconds": self.draft_seconds,
            "verify_seconds": self.verify_seconds,
            "forwards": dict(self.forwards),
            "origin_counts": {origin: self.origins[origin] for origin in ORIGINS},
            "origin_shares": self.origin_shares,
            "cost_ratio": self.cost_ratio(),
            "verify_cost": self.verify_cost(),
            "single_step_seconds": self.single_step_seconds,
            "expected_speedup": self.predicted_speedup(),
            **{key: self.stage_one[key] for key in STAGE_ONE if self.stage_one},
        }


def _leading_accepted(flags: list[bool]) -> int:
    count = 0
    for flag in flags:
        if not flag:
            break
        count += 1
    return count
