"""Speedups that respect physics: the most a run's speedup over ar can be from its own measured
costs (decoding/speed_bound.py), and the screens that flag a figure above it instead of showing
it plain (the issue's Fuzzy SD sweep read 8.94x over ar with a draft 3.16x faster than the target)."""

import re

from playground.decoding.speed_bound import speedup_bound
from playground.decoding.stats import Stats
from playground.decoding.step import Step, TokenRecord
from playground.engine import generate
from playground.ui import render
from playground.ui.repeats import Speedup, Timed


def full_rounds(rounds: int, k: int, draft_step: float, target_step: float) -> Stats:
    """Stats of `rounds` rounds that each kept all `k` drafts and a bonus token: k draft forwards of
    `draft_step` seconds and one target pass of `target_step` seconds, T(1) = target_step."""
    stats = Stats(single_step_seconds=target_step)
    for _ in range(rounds):
        tokens = [TokenRecord(1, "draft") for _ in range(k)] + [TokenRecord(2, "target")]
        stats.add(Step(tokens, drafted=k, accepted=k, accepted_flags=[True] * k, draft_seconds=k * draft_step,
                       verify_seconds=target_step, forwards={"draft": k, "target": 1}))
    return stats


def test_the_bound_is_k_plus_one_over_k_c_plus_one_at_full_acceptance():
    bound = speedup_bound(full_rounds(10, k=5, draft_step=0.003, target_step=0.01))  # c = 0.3
    assert abs(bound.bound - 6 / (5 * 0.3 + 1)) < 1e-9  # 2.4x, below 1/c = 3.33x
    assert (bound.tokens, bound.draft_forwards, bound.target_passes) == (60, 50, 10)
    assert abs(bound.cost_ratio - 0.3) < 1e-9
    assert not bound.exceeded_by(2.5) and bound.exceeded_by(8.94)  # within the 10% noise, and the figure


def test_a_sweep_column_above_its_bound_is_flagged_with_the_bound_and_its_inputs():
    bound = speedup_bound(full_rounds(10, k=5, draft_step=0.003, target_step=0.01))
    reference = Timed({0: 10.0, 1: 10.0, 2: 10.0})
    impossible = Timed({0: 89.4, 1: 91.5, 2: 88.0}, {0: bound, 1: bound, 2: bound})
    shown = impossible.speedup(reference)
    assert shown.text == "8.94x (8.80-9.15)" and shown.flag
    assert "2.40x at most" in shown.flag and "50 draft steps at c = 0.300" in shown.flag
    assert "10 target passes" in shown.flag
    html = render.compare_html([{"label": "fsd tau=0.6", "html": "", "metrics": {"speedup vs ar": shown}}])
    assert re.search(r'<span class="flagged"><s>8.94x \(8.80-9.15\)</s> impossible: 2.40x at most from', html)
    possible = Timed({0: 20.0, 1: 21.0, 2: 19.0}, {0: bound, 1: bound, 2: bound}).speedup(reference)
    assert not possible.flag and render.compare_html(
        [{"label": "sd", "html": "", "metrics": {"speedup vs ar": possible}}]).count("flagged") == 0
    assert str(shown).startswith("8.94x (8.80-9.15) [impossible: 2.40x at most")  # the race's note, in words
    assert Speedup("1.00x (the reference)").flag == ""


def test_real_runs_bound_their_own_prediction_and_ar_is_bounded_by_one(family):
    sd = generate("hello there", method="sd", max_new_tokens=24, target=family["target"], draft=family["draft"])
    bound = speedup_bound(sd.stats)
    assert bound is not None and bound.draft_forwards == sd.stats.forwards["draft"]
    assert bound.bound >= (sd.stats.predicted_speedup() or 0.0) - 1e-9  # every pass at its cheapest, T(1)
    ar = generate("hello there", method="ar", max_new_tokens=24, target=family["target"])
    assert speedup_bound(ar.stats).bound == 1.0
    draft_only = generate("hello there", method="draft-only", max_new_tokens=8, draft=family["draft"])
    assert speedup_bound(draft_only.stats) is None  # its speed is its own: no target pass to bound it by


def test_a_possible_median_whose_range_passes_the_bound_is_noted():
    """The walkthrough's fsd tau=0.6 column read 1.56x (0.40-4.93): a plain median, with a range
    reaching past what its costs allow, in the repeat where the machine slowed its ar run."""
    bound = speedup_bound(full_rounds(10, k=5, draft_step=0.003, target_step=0.01))  # 2.4x at most
    shown = Timed({0: 15.6, 1: 4.0, 2: 49.3}, {0: bound, 1: bound, 2: bound}).speedup(Timed({0: 10.0, 1: 10.0,
                                                                                              2: 10.0}))
    assert shown.text == "1.56x (0.40-4.93)" and not shown.flag
    assert "its range passes what the measured costs allow (2.40x at most)" in shown.range_flag
    html = render.compare_html([{"label": "fsd tau=0.6", "html": "", "metrics": {"speedup vs ar": shown}}])
    assert '1.56x (0.40-4.93) <span class="flagged">its range passes' in html
