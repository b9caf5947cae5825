"""One estimate of seconds per token on this machine (ui/sharing/eta.py), read by Compare's and Race's
expected durations and their progress lines."""

import dataclasses
import html
import itertools
import re
import time
from collections import deque
from types import SimpleNamespace

import gradio as gr
import pytest

from playground.decoding.speed import forward_costs, other_programs
from playground.engine import generate
from playground.ui.handlers import Handlers
from playground.ui.options import all_controls
from playground.ui.sharing import eta
from playground.ui.tabs.compare import SLOWEST_SIDE, SLOWEST_SIDE_CONTENDED, rise_text, time_left_text
from playground.ui.tabs.family_panel import Preset
from playground.ui.tabs.race import Race
from playground.ui.views.paired_speedups import WARM_UP_TOKENS

KEY = "session-1"
REAL_OTHERS_LOAD = eta.others_load  # conftest makes the load unknown in every test
PROMPT = "hello there"


@pytest.fixture
def handlers(family):
    eta.clear()
    forward_costs.clear()
    by_spec = {m.spec: m for m in family.values()}
    return Handlers(loader=lambda spec: by_spec[spec], presets=[Preset("tiny", "tiny-target", "tiny-draft",
                                                                      "tiny-qualifier", "tiny test family")])


def values(**overrides) -> list:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 24} | overrides
    return [chosen[c.name] for c in all_controls()]


def test_seconds_per_token_come_from_recent_runs_of_the_method_else_ar_else_nothing(family):
    eta.clear()
    forward_costs.clear()
    specs = {"target": "tiny-target", "draft": "tiny-draft"}
    assert eta.seconds_per_token("sd", specs) is None
    ar = generate(PROMPT, method="ar", max_new_tokens=24, target=family["target"])
    eta.record(ar)
    ar_rate = eta.seconds_per_token("ar", {"target": "tiny-target"}).seconds
    # The run's own time per token after its first step (its prefill), its waits for a page left out
    assert ar_rate == pytest.approx((ar.stats.decoder_seconds - ar.stats.step_clock[0]) / 23)
    taken = eta.seconds_per_token("sd", specs)
    assert taken.seconds == ar_rate and "taken as ar's" in taken.basis
    eta.record(generate(PROMPT, method="ar", max_new_tokens=4, target=family["target"]))  # a warm-up: not counted
    # (its T(1) is the machine's speed now, which the estimate follows: see the test below)
    ar_step = [ar.stats.account.own_step()]
    assert eta.seconds_per_token("ar", {"target": "tiny-target"}).seconds == pytest.approx(
        ar_rate * eta.machine_now("tiny-target", ar_step)[0])
    sd = generate(PROMPT, method="sd", max_new_tokens=24, target=family["target"], draft=family["draft"])
    eta.record(sd)
    own = eta.seconds_per_token("sd", specs)
    after_first = sd.stats.tokens - len(sd.steps[0].tokens)
    now = eta.machine_now("tiny-target", [sd.stats.account.own_step()])[0]
    assert own.seconds == pytest.approx((sd.stats.decoder_seconds - sd.stats.step_clock[0]) / after_first * now)
    assert "recent runs" in own.basis
    assert (eta.remaining_seconds(sd) == 0) == (sd.stats.tokens == 24)


# The machine's speed now against its runs', where T(1) moved (a busy test machine moves it)
NOW = (r"(, x[\d.]+: the machine runs (slower|faster) now, T\(1\) \d+ ms (in the last runs|timed just now) "
       r"against \d+ ms in those)?")


def test_durations_read_as_a_person_plans():
    assert eta.duration_text(0.2) == "about 1 s" and eta.duration_text(40.4) == "about 40 s"
    assert eta.duration_text(190) == "about 3 min 10 s" and eta.duration_text(3601) == "about 60 min"


def test_compare_shows_its_expected_duration_before_it_starts_and_the_time_left_while_it_runs(handlers):
    before = handlers.compare_estimate(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values())
    assert "As set now: 12 runs; no run on this machine lately" in before  # nothing ran yet: it says so
    views = list(handlers.compare(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values()))
    assert views[0].startswith('<div class="status status-info">Starting: 12 runs')
    lines = [view for view in views[1:-1]]
    assert all(re.search(rf"run {n} of 12 done", line) for n, line in enumerate(lines, start=1))
    assert re.search(r"run 4 of 12 done \(ar: repeat 1\), about \d+ s left", lines[3])  # ar's pace is known by then
    after = html.unescape(handlers.compare_estimate(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values()))
    assert re.search(r"As set now: 12 runs, about \d+ s if each writes its max new tokens at the recent pace \(one "
                     rf"that stops sooner takes less, a busier machine more; from ar [\d.]+ s/token "
                     rf"\(recent runs{NOW}\); fsd [\d.]+ s/token \(recent runs{NOW}\); and [\d.]+ s a run besides "
                     r"\(its prompt's pass, timing ar's step: the last jobs' runs\)\)", after)
    refused = handlers.compare_estimate(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 7", [], *values())
    assert "status-error" in refused and "Compare cannot start as set: tau must be between 0 and 1" in refused


def test_a_sweeps_estimate_says_how_long_it_takes_where_its_drafts_mostly_fail(handlers, monkeypatch):
    """fsd at tau 0.1 ran 1.8x ar's seconds where the estimate, paced on fsd's runs at its default
    tau, had it at 0.7x: a sweep told 44 s took 54 s. The line gives the slower end too."""
    rates = {"ar": 0.1, "fsd": 0.05}
    monkeypatch.setattr(eta, "seconds_per_token", lambda method, _: eta.Rate(rates[method], f"{method} recent"))
    monkeypatch.setattr(eta, "seen_contended", lambda: False)
    line = html.unescape(handlers.compare_estimate(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values()))
    warm_up, tokens = WARM_UP_TOKENS, 24  # values()' max new tokens
    expected = 0.1 * (warm_up + 3 * tokens) + 0.05 * (2 * warm_up + 6 * tokens)
    slowest = 0.1 * (warm_up + 3 * tokens) + SLOWEST_SIDE * 0.1 * (2 * warm_up + 6 * tokens)
    assert f"As set now: 12 runs, {eta.duration_text(expected)} if each" in line
    assert (f"; up to {eta.duration_text(slowest)} where a swept setting's drafts mostly fail (it then pays drafting "
            "and a wider pass for about one token a round)") in line
    # Walk 26: beside two burners tau 0.1 ran 3.2x ar's seconds per token; told up to 2 min 30 s, it took 2 min 59 s
    monkeypatch.setattr(eta, "seen_contended", lambda: True)
    busy = html.unescape(handlers.compare_estimate(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values()))
    slowest = 0.1 * (warm_up + 3 * tokens) + SLOWEST_SIDE_CONTENDED * 0.1 * (2 * warm_up + 6 * tokens)
    assert (f"; up to {eta.duration_text(slowest)} where a swept setting's drafts mostly fail (it then pays drafting "
            "and a wider pass for about one token a round, and beside other programs wanting most of the cores a "
            "draft's many small passes lose more than the target's step)") in busy
    monkeypatch.setattr(eta, "seen_contended", lambda: False)
    rates["sd"] = 0.05
    swept_sd = handlers.compare_estimate(KEY, PROMPT, "sd", "sweep", "candidates", "2, 6", [], *values())
    assert "up to" in swept_sd and "fsd" not in swept_sd, "a reviewer's sd sweep read fsd's tau as its example"
    side_by_side = handlers.compare_estimate(KEY, PROMPT, "fsd", "methods", "tau", "", ["ar", "fsd"], *values())
    assert "As set now: 8 runs" in side_by_side and "up to" not in side_by_side, "methods run at their own paces"


def test_a_method_with_no_run_yet_is_taken_at_the_others_pace(family):
    eta.clear()
    forward_costs.clear()
    sd = generate(PROMPT, method="sd", max_new_tokens=24, target=family["target"], draft=family["draft"])
    eta.record(sd)
    specs = {"ar": {"target": "tiny-target"}, "sd": {"target": "tiny-target", "draft": "tiny-draft"}}
    seconds, bases = eta.plan_seconds([("ar", 10), ("sd", 10)], specs.__getitem__)
    pace = eta.seconds_per_token("sd", specs["sd"]).seconds
    assert seconds == [10 * pace, 10 * pace] and bases[0].startswith("ar taken as") and "recent runs" in bases[1]


def test_a_target_with_only_other_methods_runs_is_taken_at_their_pace(family):
    eta.clear()
    forward_costs.clear()
    sd = generate(PROMPT, method="sd", max_new_tokens=24, target=family["target"], draft=family["draft"])
    eta.record(sd)
    rate = eta.seconds_per_token("fsd", {"target": "tiny-target", "draft": "tiny-draft"})
    assert rate.seconds == eta.seconds_per_token("sd", {"target": "tiny-target", "draft": "tiny-draft"}).seconds
    assert "other methods'" in rate.basis
    assert eta.seconds_per_token("fsd", {"target": "other-target", "draft": "tiny-draft"}) is None


def test_a_plan_counts_each_runs_seconds_besides_its_paced_tokens(family):
    """A quiet sweep was told 22-24 s and took 30-37 s: its 16 runs' prompt passes and timings of
    `ar`'s step were paced nowhere. A job's run tells what it took; the rest of its tokens' pace counts once a run."""
    eta.clear()
    run = generate(PROMPT, method="ar", max_new_tokens=24, target=family["target"])
    eta.record(run)
    models_of = lambda method: {"target": family["target"]}  # noqa: E731
    paced, _ = eta.plan_seconds([("ar", 24), ("ar", 4)], models_of)
    decoding = run.stats.decoder_seconds - run.stats.step_clock[0]
    eta.record(run, took=decoding + 0.5)
    besides, bases = eta.plan_seconds([("ar", 24), ("ar", 4)], models_of)
    assert besides == pytest.approx([seconds + 0.5 for seconds in paced], rel=0.05)
    assert "and 0.50 s a run besides (its prompt's pass, timing ar's step: the last jobs' runs)" in bases
    # Put at the T(1) now: a busy sweep's seconds besides told a quiet one after it 36 s for 21.8 s
    step = run.stats.account.own_step()
    eta._steps["tiny-target"].extend([(time.monotonic(), step / 2, None)] * eta.STEPS_NOW)
    assert eta.seconds_besides_decoding("tiny-target") == pytest.approx(0.25, rel=0.05)


def test_a_jobs_first_time_left_is_read_on_the_estimate_it_told_as_it_started(handlers, monkeypatch):
    """A busy sweep was told "about 1 min 30 s", then "about 2 min 10 s left" after its first warm-up,
    unexplained: its yardstick was read again once that warm-up had moved the machine's figures."""
    recorded, record = [], eta.record
    monkeypatch.setattr(eta, "record", lambda run, took=None: (recorded.append(run), record(run, took)))
    # each run recorded makes the machine read busier
    monkeypatch.setattr(eta, "seconds_per_token", lambda method, models: eta.Rate(0.1 * (1 + len(recorded)), "recent"))
    views = list(handlers.compare(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values()))
    told = re.search(r"Starting: 12 runs, (about .+?) if each", html.unescape(views[0]))[1]
    first = re.search(r"run 1 of 12 done \(ar: warm-up\), (about .+?) left", html.unescape(views[1]))[1]
    assert eta.shown_seconds(_seconds(first)) <= eta.shown_seconds(_seconds(told)), (told, first)


def _seconds(said: str) -> float:
    """Seconds of "about 1 min 30 s" or "about 40 s"."""
    minutes = re.search(r"(\d+) min", said)
    return 60 * int(minutes[1] if minutes else 0) + int(re.search(r"(\d+) s", said)[1] if " s" in said else 0)


def test_a_jobs_time_left_follows_its_own_pace():
    """Runs done took twice their estimate (a busy machine): what is left is told at that pace."""
    estimates = [1.0, 1.0, 10.0, 10.0, 10.0, 10.0]  # two warm-ups, then four full runs
    assert eta.job_time_left(estimates, [1.0, 1.0, 20.0], warm_ups=2) == 60.0
    assert eta.job_time_left(estimates, [1.0, 1.0, 5.0], warm_ups=2) == 15.0, "and a quicker pace tells it shorter"
    assert eta.job_time_left(estimates, [1.0] * 6, warm_ups=2) is None, "nothing left"
    assert eta.job_time_left(None, [1.0], warm_ups=1) is None, "no yardstick"


def test_a_busy_jobs_time_left_is_a_range_from_its_fastest_to_its_slowest_runs():
    """Beside two burners a Compare's time left went 2 min 50 s, 6 min 50 s, 6 min 40 s (3.5 min were
    left), 4 min: its runs' pace spread 2.7-9x. Where one setting's runs are that far apart, the
    line gives the least and the most left: each setting at its fastest and slowest run, the
    settings not run yet at the fastest and slowest pace of the reference's runs."""
    estimates = [1.0, 1.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0]  # two warm-ups, then sides 0, 1, 0, 1, 0, 1
    sides = [0, 1] + [0, 1] * 3
    assert eta.job_time_left_range(estimates, [1.0, 1.0, 20.0], 2, sides) is None, "one full run: no spread yet"
    low, high = eta.job_time_left_range(estimates, [1.0, 1.0, 10.0, 50.0, 60.0], 2, sides)
    assert (low, high) == (50.0 + 10.0 + 50.0, 50.0 + 60.0 + 50.0)
    shown = time_left_text(eta.job_time_left(estimates, [1.0, 1.0, 10.0, 50.0, 60.0], 2, sides), None, "sd",
                           paced=True, spread=(low, high), beside="besides this app, the most in one run: chrome 0.29")
    assert shown == (", about 1 min 50 s to 2 min 40 s left (runs of one setting took their seconds this far apart; "
                     "besides this app, the most in one run: chrome 0.29)"), "what ran, not a claim of other work"
    not_run = eta.job_time_left_range([1.0] * 3 + [10.0] * 4, [1.0, 1.0, 1.0, 10.0, 30.0, 20.0], 3,
                                      [0, 1, 2, 0, 1, 0, 2])
    assert not_run == (10.0, 20.0), "side 2, not run yet: the reference's pace, 1x to 2x its estimate"
    steady = eta.job_time_left_range(estimates, [1.0, 1.0, 20.0, 20.0, 21.0], 2, sides)
    assert time_left_text(50.0, None, "sd", paced=True, spread=steady) == ", about 50 s left", "a quiet job: one figure"


def test_a_jobs_time_left_paces_each_setting_on_its_own_runs():
    """A tau sweep's settings run at their own speeds: after a slow one the time left rose 57 s ->
    90 s. Each setting's runs left go at the pace of its own runs done, else at the job's."""
    estimates = [1.0, 1.0, 10.0, 10.0, 10.0, 10.0]  # two warm-ups, then sides 0, 1, 0, 1
    sides = [0, 1, 0, 1, 0, 1]
    assert eta.job_time_left(estimates, [1.0, 1.0, 20.0], 2, sides) == 60.0, "side 1, not run yet: the job's pace"
    assert eta.job_time_left(estimates, [1.0, 1.0, 20.0, 5.0], 2, sides) == 20.0 + 5.0
    assert eta.job_time_left(estimates, [1.0, 1.0, 20.0, 5.0], 2) == 2 * 12.5, "one setting: the job's pace"


def test_settings_not_run_yet_are_paced_on_the_reference_not_on_another_setting():
    """A slow tau (0.56x) paced the taus not run yet as slow too: the time left rose 46 s -> 55 s, then fell."""
    estimates = [1.0] * 3 + [10.0] * 6  # three warm-ups, then sides 0, 1, 2, 0, 1, 2
    sides = [0, 1, 2] * 3
    left = eta.job_time_left(estimates, [1.0, 1.0, 1.0, 10.0, 20.0], 3, sides)
    assert left == pytest.approx(10.0 + 10.0 + 20.0 + 10.0), "side 2 at ar's pace (1x), not at side 1's (2x)"
    assert eta.job_time_left(estimates, [1.0, 1.0, 1.0, 10.0, 20.0], 3) == pytest.approx(4 * 15.0), \
        "one setting: all its runs pace it"


def test_a_time_left_that_grows_says_why():
    assert rise_text(55.0, 46.0, "fsd tau=0.1") == " (up from about 46 s: fsd tau=0.1's run took longer than estimated)"
    assert rise_text(41.0, 38.0, "ar") == " (up from about 38 s: ar's run took longer than estimated)"
    assert rise_text(44.0, 43.0, "fsd tau=0.4") == " (up from about 43 s: fsd tau=0.4's run took longer than estimated)"
    assert rise_text(46.4, 45.6, "fsd tau=0.1") == "", "both read 'about 46 s'"
    assert rise_text(104.0, 97.0, "fsd tau=0.9") == "", "both read 'about 1 min 40 s': no 'up from' the same figure"
    assert rise_text(106.0, 104.0, "ar").startswith(" (up from about 1 min 40 s: ar's run"), "1 min 50 s now"
    assert rise_text(30.0, None, "ar") == rise_text(30.0, 42.0, "ar", took=12.0) == ""
    # a fall much faster than the run just done (a busy sweep: 2 min 10 s, then 1 min left 12 s later)
    assert rise_text(60.0, 130.0, "ar", took=12.0) == (" (down from about 2 min 10 s: the runs so far went faster "
                                                       "than estimated)")


def test_a_time_left_told_during_the_warm_ups_says_it_is_the_recent_runs_pace():
    assert time_left_text(100.0, None, "ar", paced=False) == (", about 1 min 40 s left at the recent runs' pace "
                                                               "(this job's first full runs will pace it)")
    assert time_left_text(100.0, None, "ar", paced=True) == ", about 1 min 40 s left"
    assert time_left_text(None, 90.0, "ar", paced=True) == ""


def test_a_jobs_time_left_is_paced_per_token_not_per_run():
    """A sweep's first full run stopped at an end-of-text token after 2 of its 10 tokens and took
    4 s against its estimate of 10 s at 10 tokens: paced per run, the settings not run yet were
    told at 0.4x (50 s left, then 3 min 40 s); per token the machine ran at 2x, and so are they."""
    estimates = [1.0, 1.0, 10.0, 10.0, 10.0, 10.0]  # two warm-ups, then sides 0, 1, 0, 1
    sides = [0, 1, 0, 1, 0, 1]
    left = eta.job_time_left(estimates, [1.0, 1.0, 4.0], 2, sides, shares=[0.1, 0.1, 0.2])
    assert left == pytest.approx(20.0 + 4.0 + 20.0), "side 1 at 2x its estimate, side 0 at its own 4 s"


def test_a_jobs_time_left_is_not_paced_on_its_warm_ups():
    """A sweep's three warm-ups (a few tokens each: mostly a run's fixed costs) took 8x their
    estimate, and the page told 8 min 10 s left for runs that then took 40 s."""
    estimates = [0.3, 0.3, 0.3, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0]
    assert eta.job_time_left(estimates, [2.4, 2.4, 2.4], warm_ups=3) == pytest.approx(36.0)


def test_an_estimate_paces_on_runs_under_the_load_of_now_or_scales_them_by_how_much_slower_busy_runs_went(
        monkeypatch):
    """Walk 29: 25 s after two burners started, a sweep paced on quiet runs was told "about 29 s, up to
    1 min 20 s" and took 3 min 17 s (its bare step read 1.2-3.4x a quiet one, its runs went 4.5-5.5x
    slower); after them, one paced on the median of quiet and busy runs was told 50 s and took 39.8 s."""
    eta.clear()
    monkeypatch.setattr(eta.os, "cpu_count", lambda: 2)
    load = {"now": 0.2}
    monkeypatch.setattr(eta, "others_load", lambda moment=True: load["now"])
    fsd, sd = {"target": "tiny-target", "draft": "tiny-draft"}, {"target": "tiny-target", "draft": "other-draft"}

    def ran(specs, method, pace, wanted):
        eta._recent.setdefault((method, eta.family_of(specs)), deque()).append((time.monotonic(), pace, 0.05, wanted))

    ran(fsd, "fsd", 0.1, 0.2)
    ran(sd, "sd", 0.08, 0.3)
    assert eta.seconds_per_token("fsd", fsd).seconds == pytest.approx(0.1)
    load["now"] = 2.1
    rate = eta.seconds_per_token("fsd", fsd)
    assert rate.seconds == pytest.approx(0.1 * eta.BUSY_RUNS_SLOWER)
    assert (", x4.5: other programs want 2.1 of its 2 cores now, those runs ran beside less, and none here ran "
            "both ways yet") in rate.basis
    load["now"] = 1.0  # one program wanting a core of two: less
    assert eta.seconds_per_token("fsd", fsd).seconds == pytest.approx(0.1 * (1 + (eta.BUSY_RUNS_SLOWER - 1) / 2))
    load["now"] = 2.1
    ran(fsd, "fsd", 0.5, 2.1)
    ran(fsd, "fsd", 0.5, 2.0)
    assert eta.seconds_per_token("fsd", fsd).seconds == pytest.approx(0.5), "busy runs now: on them alone"
    rate = eta.seconds_per_token("sd", sd)
    assert rate.seconds == pytest.approx(0.08 * 5), "fsd's busy runs went 5x its quiet ones"
    assert "runs here went 5.0x slower beside such programs than beside fewer" in rate.basis
    load["now"] = 0.1  # the burners killed: the quiet runs alone, not the median of both
    assert eta.seconds_per_token("fsd", fsd).seconds == pytest.approx(0.1)
    eta._recent.pop(("sd", eta.family_of(sd)))
    ran(sd, "sd", 0.4, 2.1)
    rate = eta.seconds_per_token("sd", sd)
    assert rate.seconds == pytest.approx(0.4 / 5), "sd ran only beside them: scaled down"
    assert ", x0.2: other programs want 0.1 of its 2 cores now, against 2.1 as those runs ended" in rate.basis
    load["now"] = None  # unknown: every run, unscaled
    assert eta.seconds_per_token("fsd", fsd).seconds == pytest.approx(0.5)
    eta.clear()


def test_a_jobs_seconds_besides_decoding_read_the_load_of_now(monkeypatch):
    """A sweep's runs' prompt passes and timings of ar's step slow beside busy programs as its tokens do."""
    eta.clear()
    monkeypatch.setattr(eta.os, "cpu_count", lambda: 2)
    load = {"now": 2.1}
    monkeypatch.setattr(eta, "others_load", lambda moment=True: load["now"])
    eta._besides_decoding["tiny-target"] = deque([(time.monotonic(), 0.4, None, 0.2)])
    assert eta.seconds_besides_decoding("tiny-target") == pytest.approx(0.4 * eta.BUSY_RUNS_SLOWER)
    eta._besides_decoding["tiny-target"].append((time.monotonic(), 2.0, None, 2.1))
    assert eta.seconds_besides_decoding("tiny-target") == pytest.approx(2.0)
    load["now"] = 0.2
    assert eta.seconds_besides_decoding("tiny-target") == pytest.approx(0.4)
    eta.clear()


def test_the_other_programs_now_are_those_of_the_last_seconds(monkeypatch):
    """After a busy sweep, "the machine is busier now (load besides this app 3.4 against 2.2)" with
    nothing new started: the cores the other programs wanted since the youngest watch a few seconds
    old are read in its place. Not over the half minute: two burners started 3 s before a sweep read
    0.2 of a core over it, and its start told about 1 min for 2 min 20 s."""
    clock, burned = {"now": 1000.0}, {"cpu": 0.0}
    fake_time = SimpleNamespace(perf_counter=lambda: clock["now"], monotonic=lambda: clock["now"],
                                sleep=lambda seconds: clock.update(now=clock["now"] + seconds))
    monkeypatch.setattr(eta, "time", fake_time)
    monkeypatch.setattr(other_programs, "time", fake_time)
    monkeypatch.setattr(other_programs, "demand_by_process", lambda: {(4242, 777): burned["cpu"]})
    meter = eta._OthersNow()
    assert meter.read() == pytest.approx(0.0), "nothing watched yet: a short watch of its own (the burner idle)"
    for _ in range(2):  # a burner on one core for 30 s, read every 15 s as Compare's line is told
        clock["now"] += 15.0
        burned["cpu"] += 15.0
        assert meter.read() == pytest.approx(1.0, rel=0.03)  # its first watch began before the short one
    clock["now"] += 15.0  # it stopped
    assert meter.read() == pytest.approx(0.0)
    for _ in range(6):  # quiet, read every 5 s; then a burner starts, and 6 s later it is read at its core
        clock["now"] += 5.0
        meter.read()
    clock["now"] += 6.0
    burned["cpu"] += 6.0
    assert meter.read() == pytest.approx(1.0), "over the half minute it read 0.2"
    clock["now"] += 600.0  # nobody asked for ten minutes: no watch is recent enough to speak for now
    assert meter.read() == pytest.approx(0.0), "it watches a moment itself: 34 s after burners stopped it kept theirs"
    clock["now"] += 600.0
    monkeypatch.setattr(eta.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(eta.time, "sleep", lambda seconds: (clock.update(now=clock["now"] + seconds),
                                                           burned.update(cpu=burned["cpu"] + 2 * seconds)))
    assert meter.read() is None, "a moment says only that the machine is quiet (one caught a browser starting)"


def test_an_estimate_follows_the_machines_speed_now_read_from_the_last_runs_t1(family, monkeypatch):
    """A sweep paced on quiet runs was told "about 38 s" beside two CPU burners and took 5 min 50 s:
    the method's pace is kept, scaled by the T(1) the last runs timed against that of its runs."""
    eta.clear()
    monkeypatch.setattr(eta, "contended", lambda: True)  # the two burners
    quiet = generate(PROMPT, method="fsd", max_new_tokens=24, target=family["target"], draft=family["draft"])
    eta.record(quiet)
    specs = {"target": "tiny-target", "draft": "tiny-draft"}
    paced = eta.seconds_per_token("fsd", specs).seconds
    step = quiet.stats.account.own_step()
    busy = generate(PROMPT, method="ar", max_new_tokens=4, target=family["target"])  # a short run: no pace, a T(1)
    timed = busy.stats.account.reference  # as two burners beside it made it (a warm-up of the busy machine)
    timed[:] = [dataclasses.replace(timing, wall=4 * step) for timing in timed]
    for _ in range(eta.STEPS_NOW):
        eta.record(busy)
    rate = eta.seconds_per_token("fsd", specs)
    assert rate.seconds == pytest.approx(4 * paced)
    assert f", x4.0: the machine runs slower now, T(1) {4 * step * 1000:.0f} ms in the last runs" in rate.basis
    # Those runs were busy, but the machine is quieter now than as they ended: the factor is not
    # applied (a line said "x1.6: the machine runs slower now" beside "the machine is quieter now").
    monkeypatch.setattr(eta, "load_change", lambda: ("quieter", 0.8, 4.7, 2))
    assert eta.seconds_per_token("fsd", specs).seconds == pytest.approx(paced)
    monkeypatch.setattr(eta, "load_change", lambda: ("busier", 4.7, 0.8, 2))
    assert eta.seconds_per_token("fsd", specs).seconds == pytest.approx(4 * paced), "busier still: applied"
    monkeypatch.setattr(eta, "load_change", lambda: None)
    eta.record(quiet)  # one quiet run in three: the median still busy
    assert eta.seconds_per_token("fsd", specs).seconds > 3 * paced
    eta.record(quiet)
    eta.record(quiet)
    assert "x" not in eta.seconds_per_token("fsd", specs).basis.split("(recent runs")[1]


def test_an_estimate_reads_a_bare_step_timed_just_now_where_the_machine_became_slower_than_its_last_runs(
        handlers, family, monkeypatch):
    """Paced on quiet runs, a sweep was told "about 29 s" beside two CPU burners started since, and
    took 4 min 3 s: no run had timed the busy machine yet, and the load average had not risen."""
    monkeypatch.setattr(eta, "load_change", lambda: None)  # the load average is this machine's, not the test's
    monkeypatch.setattr(eta, "contended", lambda: True)  # the burners
    quiet = generate(PROMPT, method="fsd", max_new_tokens=24, target=family["target"], draft=family["draft"])
    eta.record(quiet)
    specs = {"target": "tiny-target", "draft": "tiny-draft"}
    paced, step = eta.seconds_per_token("fsd", specs).seconds, quiet.stats.account.own_step()
    model, forward = family["target"].model, family["target"].model.forward
    # each pass now waits as long as eight of the quiet run's steps: the burners' share of the cores
    monkeypatch.setattr(model, "forward", lambda *args, **kwargs: (time.sleep(8 * step), forward(*args, **kwargs))[1])
    slower = (r"x[\d.]+: the machine runs slower now, T\(1\) \d+ ms timed just now against \d+ ms in those")
    handlers.load(KEY, "tiny-target", "tiny-draft", "tiny-qualifier")
    # Not for a page on Generate: its method switch tells Compare's hidden line too, and a busy Generate
    # pressed after one waited behind the timing.
    line = html.unescape(handlers.compare_estimate(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values()))
    assert not re.search(slower, line) and not eta._bare_steps, line
    # the line under the button, told on its own tab, times it where the model is idle, once for
    # both lines told at once
    handlers.show_generate(KEY, False)
    line = html.unescape(handlers.compare_estimate(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values()))
    assert re.search(r"As set now: .*" + slower, line), line
    assert not eta.claim_bare_step(family["target"]), "timed just now: not claimed again"
    eta._bare_steps.clear()  # and a job times it as it starts
    views = handlers.compare(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values())
    starting = html.unescape(next(views))
    views.close()
    assert re.search(r"Starting: .*" + slower, starting), starting
    assert eta.seconds_per_token("fsd", specs).seconds >= 8 * paced
    # A bare step has no cache to read and no page to draw: one faster than the runs' T(1) says nothing
    eta._bare_steps["tiny-target"] = [(time.monotonic(), step / 2)]
    assert eta.seconds_per_token("fsd", specs).seconds == pytest.approx(paced)
    # nor one within a quiet machine's noise (one read 1.45x and told a quiet sweep 45 s for 31 s)
    eta._bare_steps["tiny-target"] = [(time.monotonic(), 1.5 * step)]
    assert eta.seconds_per_token("fsd", specs).seconds == pytest.approx(paced)
    eta._bare_steps["tiny-target"] = [(time.monotonic() - eta.BARE_STEP_FRESH - 1, 8 * step)]  # an old one neither
    assert eta.seconds_per_token("fsd", specs).seconds == pytest.approx(paced)
    # Walk 24: beside burners one read 672 ms, the next a quarter of it: the fresh ones' median is the step
    eta._bare_steps["tiny-target"] = [(time.monotonic(), 16 * step), (time.monotonic(), 4 * step),
                                      (time.monotonic(), 8 * step)]
    assert eta.seconds_per_token("fsd", specs).seconds == pytest.approx(8 * paced, rel=0.05)


def test_a_job_takes_the_lines_bare_step_timed_just_now_under_the_same_load(handlers, family, monkeypatch):
    """Walk 26: beside two burners the line timed 199 ms, the job's own step 1.8 s a few seconds later;
    their median, 1007 ms, told 10 min 30 s for a sweep that took 3 min 25 s. Walk 27: a line's timed
    before the burners started told 22 s for 3 min 17 s, so a load changed since still times its own."""
    eta.clear()
    timed, time_bare_step = [], eta.time_bare_step
    monkeypatch.setattr(eta, "time_bare_step", lambda target: (timed.append(target), time_bare_step(target)))
    monkeypatch.setattr(eta, "contended", lambda: True)
    handlers.load(KEY, "tiny-target", "tiny-draft", "tiny-qualifier")
    handlers.show_generate(KEY, False)

    def start_a_sweep():
        views = handlers.compare(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values())
        assert "Starting: " in next(views)
        views.close()

    handlers.compare_estimate(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values())
    assert len(timed) == 1, "the line under the button times one"
    start_a_sweep()
    assert len(timed) == 1, "the job takes it"
    monkeypatch.setattr(eta, "contended", lambda: False)
    start_a_sweep()
    assert len(timed) == 2, "the load changed since: the job times its own"
    monkeypatch.setattr(eta.time, "monotonic", lambda now=time.monotonic(): now + 20)
    start_a_sweep()
    assert len(timed) == 2, "20 s on (walk 28: a job timed its own and told another range than its line)"
    monkeypatch.setattr(eta.time, "monotonic", lambda now=time.monotonic(): now + eta.BARE_STEP_FRESH)
    start_a_sweep()
    assert len(timed) == 3, "but one older than the bare steps the estimates read is old"
    eta.clear()


def test_once_the_machine_is_quieter_a_fast_bare_step_rescales_the_busy_runs_pace(monkeypatch):
    """Walk 25: 20 s after two burners were killed, the line under Compare read "quieter now (0.1 of
    its 2 cores, against 2.1): expect it to take less" beside the busy runs' "about 2 min 40 s" (a
    quiet sweep took 22-27 s): the runs it was paced on and the last three both ran beside the burners."""
    eta.clear()
    busy, specs = 0.177, {"target": "tiny-target", "draft": "tiny-draft"}
    for _ in range(3):
        eta._steps.setdefault("tiny-target", deque()).append((time.monotonic(), busy, None))
        eta._recent.setdefault(("sd", eta.family_of(specs)), deque()).append((time.monotonic(), 0.5, busy, None))
    eta._bare_steps["tiny-target"] = deque([(time.monotonic(), 0.150), (time.monotonic(), 0.052)])
    quieter = ("quieter", 0.1, 2.1, 2)
    monkeypatch.setattr(eta, "load_change", lambda: quieter)
    rate = eta.seconds_per_token("sd", specs)
    assert rate.seconds == pytest.approx(0.5 * 0.052 / busy)
    assert "x0.3: the machine runs faster now, T(1) 52 ms timed just now against 177 ms in those" in rate.basis
    # not the busy bare steps before it, and not where the load did not drop: a page's drawing moves T(1)
    eta._bare_steps["tiny-target"].append((time.monotonic(), 0.150))
    assert eta.seconds_per_token("sd", specs).seconds == pytest.approx(0.5)
    eta._bare_steps["tiny-target"].append((time.monotonic(), 0.052))
    monkeypatch.setattr(eta, "load_change", lambda: None)
    assert eta.seconds_per_token("sd", specs).seconds == pytest.approx(0.5)
    monkeypatch.setattr(eta, "load_change", lambda: quieter)  # nor a bare step within a quiet page's noise
    eta._bare_steps["tiny-target"].append((time.monotonic(), 0.120))
    assert eta.seconds_per_token("sd", specs).seconds == pytest.approx(0.5)
    eta.clear()


def test_a_bare_step_is_the_median_of_its_passes_not_the_least(family, monkeypatch):
    """Beside two burners the least of five bare passes read 81-104 ms, their median 114-189 ms
    (quiet: 43-63 ms): the one pass in five that got the cores alone read the machine quiet."""
    target, passes = family["target"], itertools.count()
    forward = target.model.forward

    def burners_share(*args, **kwargs):  # every pass but the first two (one untimed) waits for the burners
        time.sleep(0 if next(passes) < 2 else 0.05)
        return forward(*args, **kwargs)
    monkeypatch.setattr(target.model, "forward", burners_share)
    eta.time_bare_step(target)
    assert next(passes) == 1 + eta.BARE_STEP_PASSES
    assert eta._bare_steps[target.spec][-1][1] >= 0.05


def test_a_bare_step_is_never_one_pass_where_passes_are_slow(family, monkeypatch):
    """Beside two burners one or two passes fit in the budget: a line read T(1) 284, 663, 998 and
    1832 ms in turn, the last telling "about 21 min" for a sweep that had just taken 2 min 28 s."""
    target, passes = family["target"], itertools.count()
    forward = target.model.forward
    slow = {1: 2 * eta.BARE_STEP_SECONDS}  # the first timed pass (after one untimed) caught a screenshot

    def one_slow(*args, **kwargs):
        time.sleep(slow.get(next(passes), 0.0))
        return forward(*args, **kwargs)
    monkeypatch.setattr(target.model, "forward", one_slow)
    eta.time_bare_step(target)
    assert next(passes) >= 1 + eta.BARE_STEP_LEAST_PASSES
    assert eta._bare_steps[target.spec][-1][1] < eta.BARE_STEP_SECONDS, "the slow pass is not the step"


def test_the_t1_a_drawing_page_moves_is_not_a_machine_that_changed(monkeypatch):
    """Walk 19, on a quiet machine: the line under Compare read "x0.8: faster now", then "x1.3: the
    machine runs slower now, T(1) 79 ms in the last runs against 59 ms in those": the page drawing
    Generate's runs moved their T(1)s 43-79 ms. Two burners moved them 2-9x."""
    eta.clear()
    monkeypatch.setattr(eta, "load_change", lambda: None)
    monkeypatch.setattr(eta, "contended", lambda: True)
    for step in (0.079, 0.080, 0.078):
        eta._steps.setdefault("tiny-target", deque()).append((time.monotonic(), step, None))
    assert eta.machine_now("tiny-target", [0.059]) == (1.0, "")
    assert eta.machine_now("tiny-target", [0.105]) == (1.0, ""), "nor faster by as much"
    factor, words = eta.machine_now("tiny-target", [0.030])
    assert factor == pytest.approx(0.079 / 0.030) and "slower now, T(1) 79 ms in the last runs" in words
    # Slower, with nothing beside the app wanting the cores, is noise too: a quiet sweep's start read
    # "x2.1: the machine runs slower now, T(1) 116 ms timed just now against 54 ms"
    monkeypatch.setattr(eta, "contended", lambda: False)
    assert eta.machine_now("tiny-target", [0.030]) == (1.0, "")
    eta.clear()


def test_the_other_programs_are_watched_between_readings(monkeypatch):
    """A sweep's line told 35 s after its last run found no watch younger than OVER, read a moment
    (busy: unknown) and paced on quiet runs where the job's start, 4 s on, read the burners: the
    line said 2 min, the start 4 min (it took 3 min 59 s). Watches go on without readings."""
    meter = eta._OthersNow()
    meter.AGAIN, meter.LEAST = 0.05, 0.1
    monkeypatch.setattr(eta, "_others_now", meter)
    monkeypatch.setattr(other_programs, "demand_by_process", lambda: {(4242, 777): time.perf_counter() * 2})
    REAL_OTHERS_LOAD(moment=False)
    deadline = time.monotonic() + 20  # a thread started by an earlier test may be in its 5 s wait
    while len(meter.watches) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(meter.watches) >= 3, "nobody read, and no watch was started"
    monkeypatch.setattr(eta.time, "sleep", lambda seconds: pytest.fail("a moment's watch: none was ready"))
    assert meter.read() == pytest.approx(2.0, rel=0.05), "two programs wanting a core each, read without a moment"


def test_a_machine_is_contended_where_other_programs_want_half_its_cores(monkeypatch):
    monkeypatch.setattr(eta.os, "cpu_count", lambda: 2)
    for wanted, contended in ((0.3, False), (1.0, True), (2.1, True), (None, True)):
        monkeypatch.setattr(eta, "others_load", lambda moment=True, wanted=wanted: wanted)
        assert eta.contended() is contended, wanted
        # Walk 28: a moment's watch caught the page's browser drawing a tab, unknown; the sweep's line
        # then said "beside other programs wanting most of the cores" on a quiet machine
        assert eta.seen_contended() is (contended and wanted is not None), wanted


def test_a_jobs_progress_lines_keep_what_it_was_expected_to_take_as_it_started(handlers):
    """Walk 29: the "Starting:" line, with the job's expected time, gave way to the first progress
    line within a second, and nothing said it again until the job ended."""
    list(handlers.generate(KEY, PROMPT, "ar", False, *values()))  # a recent pace: the job's time is known
    compare = [html.unescape(view) for view in handlers.compare(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [],
                                                                *values())]
    said = re.search(r"Starting: \d+ runs, (about [\d a-z]+?) if each", compare[0])[1]
    progress = [re.sub("<[^>]+>", "", line) for line in compare[1:-1]]
    assert progress and all(line.endswith(f"; expected as it started: {said}") for line in progress), progress
    race = [re.sub("<[^>]+>", "", html.unescape(status))
            for status, _ in Race(handlers).run_methods(KEY, PROMPT, ["ar", "sd"], *values())]
    told = {line.rpartition("; expected as it started: ")[2] for line in race[1:-1]}
    assert len(told) == 1 and told.pop() in race[0], race


def test_the_line_under_the_button_waits_while_the_pages_own_job_runs(handlers):
    """Walk 25: told again every 15 s above a busy job's own line, it read "about 6 min 40 s" over
    "about 2 min 30 s left", then "x0.6: the machine runs faster now" with both burners going."""
    views = handlers.compare(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values())
    next(views)  # started
    assert handlers.compare_estimate(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values()) == gr.skip()
    assert "As set now" in handlers.compare_estimate("another page", PROMPT, "fsd", "sweep", "tau", "0.1", [],
                                                     *values()), "another page's line is told"
    list(views)
    assert "As set now" in handlers.compare_estimate(KEY, PROMPT, "fsd", "sweep", "tau", "0.1, 0.3", [], *values())
