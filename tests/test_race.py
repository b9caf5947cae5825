"""Race replay: each run's recorded step clock, the schedule built from it, and the Race tab's
handlers on tiny in-code models."""

import re
import time

import pytest

from playground.decoding.speed.speed_bound import SpeedBound
from playground.engine import stream
from playground.errors import PlaygroundError
from playground.ui.handlers import Handlers
from playground.ui.options import all_controls
from playground.ui.tabs.family_panel import Preset
from playground.ui.tabs.race import Race, flagged_lines, ranking, replay_repeat, spread_text
from playground.ui.views.paired_speedups import Timed
from playground.ui.views.race_replay import KEPT_RUNS, History, Lane, lane_of, race_html

KEY = "session-1"
PROMPT = "hello there"


def decode_with(tokenizer):
    return lambda token_id: tokenizer.decode([token_id])


def tiny_run(family, method="sd", pause=0.0, **options):
    """A finished run on the tiny family; the consumer sleeps `pause` seconds at every step."""
    roles = {"ar": ("target",), "sd": ("target", "draft")}[method]
    run = None
    for _, run in stream(PROMPT, method=method, max_new_tokens=24, **{r: family[r] for r in roles}, **options):
        time.sleep(pause)
    return run


def test_the_step_clock_leaves_out_the_time_its_consumer_held_the_run(family):
    run = tiny_run(family, pause=0.05)
    clock = run.stats.step_clock
    assert len(clock) == len(run.steps) and clock == sorted(clock) and clock[0] > 0
    slept = 0.05 * (len(run.steps) - 1)  # the pauses before the last step was produced
    assert clock[-1] <= run.stats.account.clock - 0.9 * slept


def test_a_lane_shows_each_steps_tokens_at_its_recorded_second(family):
    run = tiny_run(family)
    lane = lane_of(run, decode_with(family["target"].tokenizer), "#1 sd")
    with_tokens = [(t, step) for t, step in zip(run.stats.step_clock, run.steps) if step.tokens]
    assert [seconds for seconds, _ in lane.reveals] == [t for t, _ in with_tokens]
    assert [spans.count('class="tok ') for _, spans in lane.reveals] == [len(s.tokens) for _, s in with_tokens]
    assert lane.seconds == run.stats.step_clock[-1] and lane.tokens == len(run.tokens) == 24
    # the settings it ran with, levers included, print with the lane
    assert "candidates 4" in lane.settings and "draft int8 True" in lane.settings and "tau" not in lane.settings
    assert lane.settings in race_html([lane])


def lane(label: str, *times: float, prompt: str = PROMPT) -> Lane:
    reveals = tuple((t, f'<span class="tok tok-target">{label}{i}</span>') for i, t in enumerate(times))
    return Lane(label, prompt, reveals, len(times), times[-1])


def test_the_race_ranks_lanes_by_their_recorded_speed_not_their_order():
    html = race_html([lane("slow", 0.5, 1.0, 2.0), lane("fast", 0.2, 0.4, 1.0)])
    finishes = re.findall(r'class="race-finish" data-t="([\d.]+)">(\w+):', html)
    assert finishes == [("2.0000", "2nd"), ("1.0000", "1st")]
    assert re.findall(r'<span data-t="([\d.]+)">', html) == ["0.5000", "1.0000", "2.0000", "0.2000", "0.4000",
                                                                "1.0000"]
    assert 'class="race" data-end="2.0000"' in html
    assert "fast was fastest, 3.0 tokens/s (3 tokens in 1.00 s); slow 1.5 (0.50x)" in html
    assert "different lengths" not in html


def test_a_run_that_stops_early_does_not_win_by_finishing_first():
    """sd stopped at 2 tokens, fsd ran on to 4: fsd's rate is higher, so it ranks first, and the
    page says why the earlier finish did not win."""
    html = race_html([lane("sd", 0.5, 1.0), lane("fsd", 0.3, 0.6, 0.9, 1.2)])
    assert re.findall(r'class="race-finish" data-t="[\d.]+">(\w+):', html) == ["2nd", "1st"]
    assert "fsd was fastest" in html and "different lengths (2, 4 tokens)" in html


def test_a_race_of_different_prompts_says_it_is_not_fair():
    assert "different prompts" in race_html([lane("a", 1.0), lane("b", 1.0, prompt="other")])
    assert "different prompts" not in race_html([lane("a", 1.0), lane("b", 1.0)])


def test_history_keeps_the_last_runs_numbered_and_refuses_an_empty_race(family):
    history, run = History(), tiny_run(family, "ar")
    for _ in range(KEPT_RUNS + 2):
        history.add(run, decode_with(family["target"].tokenizer))
    assert history.labels() == [f"#{n} ar temperature=0" for n in range(3, KEPT_RUNS + 3)]
    assert [lane.label for lane in history.chosen(["#4 ar temperature=0", "#3 ar temperature=0"])] == \
        ["#3 ar temperature=0", "#4 ar temperature=0"]  # in the order they ran
    with pytest.raises(PlaygroundError, match="pick 1 to 4 finished runs"):
        history.chosen(["#1 ar temperature=0"])  # no longer kept
    with pytest.raises(PlaygroundError, match="pick 1 to 4 finished runs"):
        history.chosen(history.labels())


@pytest.fixture
def race(family):
    by_spec = {m.spec: m for m in family.values()}
    preset = Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", "tiny test family")
    return Race(Handlers(loader=lambda spec: by_spec[spec], presets=[preset]))


def values(**overrides) -> list:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 24} | overrides
    return [chosen[c.name] for c in all_controls()]


def test_run_and_race_warms_up_repeats_alternating_then_replays_each_median_run(race):
    *progress, (view, choices) = list(race.run_methods(KEY, PROMPT, ["ar", "sd", "fsd"], *values()))
    order = ["ar", "sd", "fsd"] * 2 + ["fsd", "sd", "ar"] + ["ar", "sd", "fsd"]  # warm-ups, then 3 alternating repeats
    whats = ["warm-up"] * 3 + [f"repeat {r} of 3" for r in (1, 1, 1, 2, 2, 2, 3, 3, 3)]
    starting, *progress = [status for status, _ in progress]
    assert starting.startswith('<div class="status status-info">Starting: 12 runs')  # its expected time, if known
    assert [re.sub(r"(, about [\d a-z]+ left)?(; expected as it started: about [\d a-z]+)?</div>", "</div>", status)
            for status in progress] == [
        f'<div class="status status-info">run {n} of 12 done ({m}: {what}, alone)</div>'
        for n, (m, what) in enumerate(zip(order, whats, strict=True), start=1)]
    assert re.search(r"run 4 of 12 done \(ar: repeat 1 of 3, alone\), about \d+ s left", progress[3])
    assert re.search(r'<p class="race-about">Each lane replays repeat [123] of 3 \(after a warm-up', view)
    # The same prompt and length in every lane: no unfairness to warn of (a speedup past its cost
    # bound, which a busy machine can measure, is a warning of another kind: see the impossible-speedup test).
    assert "not a fair race" not in view and "different lengths" not in view
    # A busy machine's timings may leave a speedup not settled: then no figure, a pointer to the line why.
    # Where the median speeds' ratio is far from the paired figure, it is said beside it, with why.
    speedup = r"([\d.]+x \([\d.]+-[\d.]+\) vs ar(, the median speeds are [\d.]+x apart \([^)]+\))?|" \
              r"vs ar not settled \(see above\))"
    assert re.search(r"Speeds of the runs: ar [\d.]+ \([\d.]+-[\d.]+, 3 runs\) tokens/s; "
                     rf"sd [\d.]+ \([\d.]+-[\d.]+, 3 runs\) tokens/s, {speedup}; fsd ", view)
    assert view.count('class="race-lane"') == 3 and view.count('class="race-finish"') == 3
    assert view.count("where the seconds went: drafting") >= 2  # each lane that drafted says where its time went
    assert view.count('class="tok ') == 3 * 24
    assert choices["choices"] == choices["value"] and len(choices["value"]) == 3  # this race's runs, chosen
    assert race.race_chosen(KEY, choices["value"][:2]).count('class="race-lane"') == 2


def test_a_generate_run_joins_the_races_choices(race):
    list(race.handlers.generate(KEY, PROMPT, "sd", False, *values()))
    assert race.choices(KEY)["choices"] == ["#1 sd candidates=4"]


def test_race_errors_are_one_line_and_run_nothing(race):
    with pytest.warns(UserWarning, match="pick 1 to 4 methods"):  # the toast: gr.Warning outside a request
        (view, _), = list(race.run_methods(KEY, PROMPT, [], *values()))
    assert "status-error" in view and "pick 1 to 4 methods" in view
    with pytest.warns(UserWarning, match="empty prompt"):
        *_, (view, _) = list(race.run_methods(KEY, "   ", ["ar"], *values()))
    assert "status-error" in view and "empty prompt" in view
    assert race.handlers.sessions.get(KEY).race.labels() == []
    with pytest.warns(UserWarning, match="pick 1 to 4 finished runs"):
        assert "pick 1 to 4 finished runs" in race.race_chosen(KEY, [])


def test_the_fastest_line_and_the_headline_read_one_figure():
    """The issue's race: sd's paired speedup over ar was 1.21x (0.24-1.65) while its median speed was
    below ar's, and the page said both "sd 1.21x vs ar" and "ar was fastest ... sd 0.80x". Now the
    ranking is the paired medians', the lanes replay a repeat that finished in that order, and a
    speedup whose repeats fall on both sides of ar is said not settled, with no figure."""
    ar, sd = Timed({0: 10.0, 1: 10.0, 2: 4.0}), Timed({0: 12.1, 1: 2.4, 2: 6.6})
    ranked = ranking(["ar", "sd"], [ar, sd])
    assert ranked == [(1, "not settled vs ar: see above"), (0, "the reference")]
    assert replay_repeat([ar, sd], [1, 0]) == (0, True)  # repeat 1 ran sd ahead, closest to the medians
    assert replay_repeat([ar, sd], [0, 1]) == (1, True)
    assert "sd 6.60 (2.40-12.10, 3 runs) tokens/s, vs ar not settled (see above)" in spread_text(["ar", "sd"], [ar, sd])
    assert flagged_lines(["ar", "sd"], [ar, sd]) == [
        "sd's speedup over ar is not settled: its repeats gave 0.24-1.65x ar: no 2 of its 3 within 1.3x of each "
        "other; run it again on a quieter machine (close other programs and tabs)."]
    settled_sd = Timed({0: 12.1, 1: 12.4, 2: 4.6})
    assert ranking(["ar", "sd"], [ar, settled_sd]) == [(1, "1.21x ar"), (0, "the reference")]
    lanes = [lane("#1 ar", 0.1, 0.2), lane("#2 sd", 0.2, 0.4)]  # replayed: ar's run the faster one
    html = race_html(lanes, "", [(lanes[side], figure) for side, figure in ranking(["ar", "sd"], [ar, settled_sd])])
    assert "Fastest by the medians of the repeats: #2 sd (1.21x ar), then #1 ar (the reference)." in html
    assert re.findall(r'class="race-finish" data-t="[\d.]+">(\w+):', html) == ["2nd", "1st"]
    assert "was fastest" not in html


def test_an_impossible_race_speedup_is_a_warning_line_not_a_figure():
    """The walkthrough's race: ar at 0.7 tokens/s beside an sd run at 37: sd 3.35x over ar, where
    its own costs allow 1.87x at most. The note points to a red line that says why, in words."""
    bound = SpeedBound(1.87, 32, 20, 15, 0.105)
    ar, sd = Timed({0: 0.6, 1: 0.7, 2: 1.1}), Timed({0: 2.1, 1: 37.0, 2: 1.5}, {0: bound, 1: bound, 2: bound})
    lines = flagged_lines(["ar", "sd"], [ar, sd])
    assert lines == ["sd's speedup over ar is not settled: the runs gave 1.36-52.86x, more than this setting's "
                     "measured costs allow (1.87x at most: 32 tokens, 20 draft steps at c = 0.105, 15 target passes "
                     "of ≥ 1 step), so something slowed an ar run; run it again on a quieter machine (close other "
                     "programs and tabs)."]
    assert "vs ar not settled (see above)" in spread_text(["ar", "sd"], [ar, sd])
    assert "3.50x" not in spread_text(["ar", "sd"], [ar, sd])
    lanes = [lane("#1 ar", 0.5, 1.0), lane("#2 sd", 0.2, 0.4)]
    html = race_html(lanes, "note", [(lanes[side], figure) for side, figure in ranking(["ar", "sd"], [ar, sd])],
                     lines)
    assert '<p class="race-note">sd&#x27;s speedup over ar is not settled: the runs gave' in html
