"""The cost model, in one place: how many tokens a round of drafting and verifying yields, and
what it costs in the target's one-token steps T(1). The run statistics (stats.py), PyramidSD's
throughput prediction (methods/pyramid.py) and the UI's predictions all read it.

Costs are in units of T(1): a draft forward costs c (Leviathan's cost ratio), a verification
pass over a block or tree costs `verify_cost` (1 in the paper; on a CPU a pass over a few tokens
costs more than one, see docs/rules.md), and a round with no draft costs one step.
"""


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
