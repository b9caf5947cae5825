"""The cost model, in one place: how many tokens a round of drafting and verifying yields, and
what it costs in the target's one-token steps T(1). The run statistics (stats.py), PyramidSD's
throughput prediction (methods/pyramid.py) and the UI's predictions all read it.

Costs are in units of T(1): a draft forward costs c (Leviathan's cost ratio), a verification
pass over a block or tree costs `verify_cost` (1 in the paper; on a CPU a pass over a few tokens
costs more than one, see docs/rules.md), and a round with no draft costs one step.

A what-if replays a run's rounds (how many draft forwards, how large a pass, how many tokens
each) on another machine's or pair's costs (`CostProfile`): a projection from the run's own
acceptance, not a measurement.
"""

from dataclasses import dataclass


def expected_tokens_per_step(alpha: float, k: int) -> float:
    """Leviathan et al. (2023), Eq. 1: (1 - a^(K+1)) / (1 - a)."""
    return k + 1.0 if alpha >= 1 else (1 - alpha ** (k + 1)) / (1 - alpha)


def round_costs(draft_forwards: int, verify_passes: int, plain_passes: int, cost_ratio: float,
                verify_cost: float) -> dict[str, float]:
    """The cost of some rounds in T(1): their draft forwards at c each, their verification passes
    at `verify_cost` each, and the passes that verified no draft (a target-only round) at 1."""
    return {"drafting": draft_forwards * cost_ratio, "target passes": verify_passes * verify_cost + plain_passes}


def predicted_throughput(beta: float, length: int, v_proposer: float, v_verifier: float,
                         expectation: str = "paper") -> float:
    """Section 3.3 (after Leviathan et al.): V = beta * (l + 1) / (l / V_proposer + 1 / V_verifier).
    V_SD is (beta_TD, l_D, V_D, V_T); V_FSD_QD is (beta_QD, l_D, V_D, V_Q); V_PSD is
    (beta_TQ, l_Q, V_FSD_QD, V_T). Speeds in tokens/s, beta an acceptance rate in [0, 1].
    `expectation="leviathan"` replaces the paper's beta * (l + 1) tokens per verification by
    Leviathan's (1 - beta^(l+1)) / (1 - beta), which counts the verifier's own token (the paper's
    numerator predicts 0 tokens at beta = 0, where every step still yields one). A zero speed
    (V_FSD_QD = 0) predicts 0."""
    if v_proposer <= 0 or v_verifier <= 0:
        return 0.0
    tokens = beta * (length + 1) if expectation == "paper" else expected_tokens_per_step(beta, length)
    return tokens / (length / v_proposer + 1 / v_verifier)


@dataclass(frozen=True)
class Round:
    """What a replay needs of one verification round."""

    draft_forwards: int
    pass_tokens: int  # new tokens the target's pass took: the drafted nodes and its own position
    tokens: int  # tokens the round emitted


@dataclass(frozen=True)
class CostProfile:
    """The costs of a machine and model pair, in T(1): a draft forward (c), a target pass over n new
    tokens (T(n)/T(1), piecewise linear between the measured points, on along the last segment's
    slope past them), and the host's time per round. `source` says where the numbers come from."""

    name: str
    source: str
    cost_ratio: float
    verify_curve: tuple[tuple[int, float], ...] = ((1, 1.0),)
    host_per_round: float = 0.0
    # The prompt's pass, where measured (a run's own profile): the first round's pass costs it,
    # and `ar`, which takes the same pass, is charged it too. 0: every pass on the curve.
    prompt_pass: float = 0.0
    ar_host_per_token: float = 0.0  # what `ar` spends per token besides its pass, where measured

    def pass_cost(self, tokens: int) -> float:
        points = sorted(self.verify_curve)
        if len(points) == 1 or tokens <= points[0][0]:
            return points[0][1]
        for (n0, t0), (n1, t1) in zip(points, points[1:]):
            if tokens <= n1:
                return t0 + (t1 - t0) * (tokens - n0) / (n1 - n0)
        (n0, t0), (n1, t1) = points[-2:]
        return t1 + (t1 - t0) * (tokens - n1) / (n1 - n0)


def replay(rounds: list[Round], profile: CostProfile) -> dict[str, float]:
    """The rounds' cost on `profile`, in T(1), by part."""
    passes = [profile.pass_cost(r.pass_tokens) for r in rounds]
    if profile.prompt_pass and passes:
        passes[0] = profile.prompt_pass
    return {"drafting": sum(r.draft_forwards for r in rounds) * profile.cost_ratio,
            "target passes": sum(passes), "host": len(rounds) * profile.host_per_round}


def ar_cost(rounds: list[Round], profile: CostProfile) -> float:
    """`ar`'s cost for the rounds' tokens in T(1): one step a token, and its host time per token
    where the profile has it (after the prompt's pass, where the profile has one)."""
    tokens, each = sum(r.tokens for r in rounds), 1.0 + profile.ar_host_per_token
    return profile.prompt_pass + (tokens - 1) * each if profile.prompt_pass and tokens else tokens * each


def projected_speedup(rounds: list[Round], profile: CostProfile) -> float | None:
    """`ar`'s cost for these rounds' tokens on `profile` over the rounds' own."""
    cost = sum(replay(rounds, profile).values())
    return ar_cost(rounds, profile) / cost if rounds and cost > 0 else None


def break_even_cost_ratio(rounds: list[Round], profile: CostProfile) -> float | None:
    """The draft cost c at which these rounds, on `profile`'s other costs, run as fast as `ar`
    (None when they draft nothing, or lose to `ar` even with a free draft)."""
    forwards = sum(r.draft_forwards for r in rounds)
    rest = sum(replay(rounds, profile).values()) - forwards * profile.cost_ratio
    spare = ar_cost(rounds, profile) - rest
    return spare / forwards if forwards and spare > 0 else None
