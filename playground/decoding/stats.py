"""Running statistics of a run, named as the serving engines name them."""

from collections import Counter

from .speed.speed_account import SpeedAccount
from .step import ORIGINS, Step

# PyramidSD's first stage, from its steps' extras: the draft's tokens the qualifier checked and
# those it accepted. The acceptance rate is the second stage's (the target checking the block the
# qualifier passed on), which may read 100% while the qualifier replaced draft tokens.
STAGE_ONE = ("qualifier_drafted", "qualifier_accepted")


class Stats:
    """Counts of a run's rounds; its seconds and every speed figure are its `account`
    (speed_account.py)."""

    def __init__(self, target_role: str = "target", draft_role: str = "draft"):
        self.target_role, self.draft_role = target_role, draft_role
        self.account = SpeedAccount(target_role, draft_role)
        # The decoder's own clock at the end of each step: seconds since the start, less the time
        # it waited (its consumer held it paused, other visitors' rounds) or timed T(1). What a
        # race replays.
        self.step_clock: list[float] = []
        self.first_step_cpu = 0.0  # the decoding thread's CPU seconds in the first step (the prompt's pass)
        self.steps = self.drafted = self.accepted = self.tokens = 0
        self.block_tokens = 0  # tokens of the steps that drafted
        self.block_draft_forwards = 0  # draft forwards of those steps (a tree verifies more nodes than that)
        self.position_drafted: Counter = Counter()
        self.position_accepted: Counter = Counter()
        self.acceptance_lengths: Counter = Counter()
        self.block_sizes: Counter = Counter()
        self.forwards: Counter = Counter()
        self.origins: Counter = Counter()
        self.stage_one: Counter = Counter()
        self.max_block = 0

    def add(self, step: Step, waited: float = 0.0, cpu: float = 0.0) -> None:
        """Count one step; `waited` is how long the run has waited so far, `cpu` the decoding
        thread's CPU seconds for this step."""
        self.account.add_round(step, cpu, waited)
        self.step_clock.append(self.account.decoder_seconds)
        if not self.steps:
            self.first_step_cpu = cpu
        self.steps += 1
        self.drafted += step.drafted
        self.accepted += step.accepted
        self.tokens += len(step.tokens)
        self.forwards.update(step.forwards)
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
        """On the run's own clock (its waiting and the timing of T(1) excluded)."""
        seconds = self.account.decoder_seconds
        return self.tokens / seconds if seconds else None

    @property
    def decoder_seconds(self) -> float:
        return self.account.decoder_seconds

    @property
    def origin_shares(self) -> dict[str, float]:
        return {origin: self.origins[origin] / self.tokens if self.tokens else 0.0 for origin in ORIGINS}

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
            "seconds": self.account.clock,
            "tokens_per_second": self.tokens_per_second,
            "draft_seconds": self.account.drafting,
            "verify_seconds": self.account.passes + self.account.checks,
            "forwards": dict(self.forwards),
            "origin_counts": {origin: self.origins[origin] for origin in ORIGINS},
            "origin_shares": self.origin_shares,
            "cost_ratio": self.account.cost_ratio(),
            "verify_cost": self.account.verify_cost(),
            "single_step_seconds": self.account.single_step(),
            "expected_speedup": self.account.predicted_speedup(),
            "speedup": self.account.speedup(),
            "account": self.account.to_dict(),
            **{key: self.stage_one[key] for key in STAGE_ONE if self.stage_one},
        }


def _leading_accepted(flags: list[bool]) -> int:
    count = 0
    for flag in flags:
        if not flag:
            break
        count += 1
    return count
