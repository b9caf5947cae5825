"""One speed account per run (decoding/speed/speed_account.py): every speed figure on screen, in the JSON
and in a replay on other costs comes from it, adds up, and says when a busy machine moved it."""

import html
import re
import time
from html import unescape
from types import SimpleNamespace

import pytest
from markdown_it import MarkdownIt

import playground
from playground.decoding.speed import forward_costs, speed_account
from playground.decoding.speed.cost_model import Round, projected_speedup, replay
from playground.decoding.speed.speed_account import (
    AR_ROW,
    BUSY_UTILIZATION,
    MANY_TIMINGS,
    RECENT_STEP_SECONDS,
    WAITING_PART,
    SpeedAccount,
    Timing,
)
from playground.decoding.speed.speed_bound import speedup_bound
from playground.decoding.stats import Stats
from playground.decoding.step import Step, TokenRecord
from playground.ui.tabs.generate import setting_of, stats_shown
from playground.ui.tabs.what_if_panel import WhatIf
from playground.ui.views import charts, render
from playground.ui.views.paired_speedups import SettingSpeedups

from .quiet_account import as_quiet

PROMPT = "hello there"


def step(drafted: int, flags: list[bool], draft_seconds: float, verify_seconds: float) -> Step:
    tokens = [TokenRecord(0, "draft") for flag in flags if flag] + [TokenRecord(0, "target")]
    return Step(tokens, drafted=drafted, accepted=sum(flags), accepted_flags=flags, draft_seconds=draft_seconds,
                verify_seconds=verify_seconds, forwards={"draft": drafted, "target": 1})


def stats_of(steps: list[Step], single_step: float = 1.0, prompt_pass: float = 3.0) -> Stats:
    """Stats whose account has T(1) = `single_step` and a prompt's pass of `prompt_pass` seconds."""
    stats = Stats()
    stats.account.reference = [Timing(single_step, single_step, 10, 1)]
    stats.account.first_pass = prompt_pass
    for one in steps:
        stats.add(one)
    return stats


def test_c_the_pass_cost_and_the_prediction_are_the_runs_means_in_its_t1():
    """The prompt's round, then two blocks of K = 2 (accepted both / rejected the first). Draft
    steps 0.2 s, later passes 1.5 s, T(1) = 1 s: c = 0.2, a pass 1.5 T(1), and Theorem 3.8 gives
    the 3 + 3 + 1 tokens of the three drafted rounds over 3 x (2 x 0.2 + 1.5) T(1)."""
    stats = stats_of([step(2, [True, True], 0.4, 3.0), step(2, [True, True], 0.4, 1.5), step(2, [False], 0.4, 1.5)])
    account = stats.account
    assert account.cost_ratio() == pytest.approx(0.2)
    assert account.verify_cost() == pytest.approx(1.5), "the prompt's pass is not a verification pass"
    assert account.predicted_speedup() == pytest.approx(7 / (3 * (2 * 0.2 + 1.5)))
    assert stats.to_dict()["expected_speedup"] == account.predicted_speedup()


def test_the_prediction_counts_the_tokens_blocks_of_different_lengths_yielded():
    """After the prompt's round (1 token), a confident block of 4, all accepted (5 tokens), and a
    doubtful block of 1, rejected (1 token): acceptance rates pooled over the two (position 0
    accepted 1 time in 2) would credit the long block with 3 tokens."""
    stats = stats_of([step(1, [False], 0.2, 3.0), step(4, [True] * 4, 0.8, 1.5), step(1, [False], 0.2, 1.5)])
    assert stats.account.predicted_speedup() == pytest.approx(7 / (6 * 0.2 + 3 * 1.5))


def test_the_bound_is_k_plus_one_over_k_c_plus_one_at_full_acceptance_after_the_prompt():
    """Ten rounds keeping all K = 5 drafts at c = 0.3, the first pass 1 T(1) like the rest: the
    bound is (60 + 1 - 1) / (50 x 0.3 + 1 + 9) = 2.4x, below 1/c."""
    stats = stats_of([step(5, [True] * 5, 5 * 0.003, 0.01) for _ in range(10)], single_step=0.01, prompt_pass=0.01)
    bound = speedup_bound(stats)
    assert bound.bound == pytest.approx(6 / (5 * 0.3 + 1))
    assert (bound.tokens, bound.draft_forwards, bound.target_passes) == (60, 50, 10)
    assert not bound.exceeded_by(2.5) and bound.exceeded_by(8.94)


def test_the_budget_adds_up_to_the_status_lines_clock_waiting_included(family):
    """A consumer that holds the stream (another visitor's rounds, a page being drawn) adds waiting
    time: the parts still add up to the clock the status line shows, and the speedup leaves it out."""
    run = None
    for _, run in playground.stream(PROMPT, method="sd", **family, max_new_tokens=30, seed=1, temperature=1.0):
        time.sleep(0.02)
    account = run.stats.account
    parts = account.parts()
    assert parts[WAITING_PART] >= 0.02 * (run.stats.steps - 1)
    assert parts["timing ar's step"] > 0
    assert sum(parts.values()) == pytest.approx(account.clock, rel=0.02)
    assert run.stats.to_dict()["seconds"] == account.clock
    assert account.speedup() == pytest.approx(account.ar_seconds() / (account.clock - parts[WAITING_PART]
                                                                      - parts["timing ar's step"]))
    assert all(seconds >= 0 for seconds in parts.values())
    assert [trace.name for trace in charts.time_budget(run, None).data] == list(charts.BUDGET_COLORS)


@pytest.mark.parametrize("method", ["sd", "fsd", "csd", "psd-f"])
def test_t1_is_timed_beside_the_runs_rounds_and_leaves_its_output_as_it_was(family, method, monkeypatch):
    """Timed as each round after the first starts and as it ends (every round here), on the target's
    own cache: the output is the run's without any timing."""
    untimed = playground.generate(PROMPT, method=method, **family, max_new_tokens=40, temperature=1.0, seed=4)
    monkeypatch.setattr(speed_account, "REFERENCE_EVERY", 1)
    run = playground.generate(PROMPT, method=method, **family, max_new_tokens=40, temperature=1.0, seed=4)
    assert run.text == untimed.text, "timing T(1) on the target's cache must leave the cache as it was"
    account = run.stats.account
    extra = [t for t in account.reference if t.extra]
    assert [t.after_round for t in extra if t.starting] == list(range(1, run.stats.steps))
    assert [t.after_round for t in extra if not t.starting] == list(range(2, run.stats.steps))
    assert all(one.starting != other.starting for one, other in zip(extra, extra[1:])), "phases alternate"
    assert account.measuring > 0 and account.single_step() > 0


def test_an_ar_run_is_its_own_reference_and_sd_still_writes_what_ar_writes(family):
    ar = playground.generate(PROMPT, method="ar", target=family["target"], max_new_tokens=40)
    sd = playground.generate(PROMPT, method="sd", **family, max_new_tokens=40)
    assert sd.text == ar.text
    account = ar.stats.account
    assert account.measuring == 0 and not any(t.extra for t in account.reference), "its own passes are T(1)"
    assert [t.after_round for t in account.reference] == list(range(2, ar.stats.steps + 1))


def test_on_its_own_account_the_what_if_gives_back_the_runs_speedup(family):
    run = playground.generate(PROMPT, method="sd", **family, temperature=1.0, max_new_tokens=40, seed=3)
    account = run.stats.account
    profile = account.profile()
    assert sum(r.tokens for r in account.rounds) == run.stats.tokens
    assert projected_speedup(account.rounds, profile) == pytest.approx(account.speedup(), rel=1e-6)
    assert sum(replay(account.rounds, profile).values()) * account.single_step() == pytest.approx(
        account.decoder_seconds, rel=1e-6)


def test_ar_seconds_pay_what_the_ar_runs_before_spent_per_token_besides_their_passes(family):
    """Walk 26: quiet sd runs read 1.34x and 1.15x beside tokens/s 1.42x and 1.22x the `ar` run's
    just before: `ar`'s seconds for the run's tokens were its passes alone, and an `ar` run also
    samples and loops between them (4-7% of its seconds here)."""
    forward_costs.clear()
    ar = playground.generate(PROMPT, method="ar", target=family["target"], max_new_tokens=40)
    host = ar.stats.account.host_per_token()
    assert host and host == pytest.approx((ar.stats.account.decoder_seconds - ar.stats.account.passes) / 39)
    sd = playground.generate(PROMPT, method="sd", **family, max_new_tokens=40)
    account = sd.stats.account
    assert account.ar_host == pytest.approx(host) and account.to_dict()["ar_host_seconds"] == pytest.approx(host)
    assert account.ar_seconds() == pytest.approx(account.first_pass + 39 * (account.single_step() + host))
    ar_row = account.budget()[AR_ROW]
    assert ar_row["host, between them"] == pytest.approx(39 * host)
    assert sum(ar_row.values()) == pytest.approx(account.ar_seconds()), "the budget's ar bar is the ar it pairs with"
    assert projected_speedup(account.rounds, account.profile()) == pytest.approx(account.speedup(), rel=1e-6)
    forward_costs.clear()
    alone = playground.generate(PROMPT, method="sd", **family, max_new_tokens=40)
    assert alone.stats.account.ar_host == 0.0, "no ar run before it: its passes alone"


def test_t1_reads_the_passes_of_the_last_ar_run_alone(family):
    """Passes of an earlier `ar` run joined a second series' T(1): an sd run read 1.28x beside
    tokens/s 1.48x the `ar` run just before it, which ran slower than the one before that."""
    forward_costs.clear()
    runs = [playground.generate(PROMPT, method="ar", target=family["target"], max_new_tokens=n) for n in (30, 20)]
    last = runs[-1].stats.account
    sd = playground.generate(PROMPT, method="sd", **family, max_new_tokens=20)
    account = sd.stats.account
    assert account.recent_steps == [timing.wall for timing in last.reference], "its passes, not the first run's too"
    # the mean its own panel gives (walk 29: 78.8 ms there, "73.6 ms on average" beside the next sd)
    assert account.recent_step == pytest.approx(last.single_step())
    assert account.ar_host == pytest.approx(last.host_per_token())
    # a pass the page's drawing took the core from counts too, as in that run's own mean (not a busy run's)
    steps = ((0.08, 0.08),) * 10 + ((0.19, 0.05),)
    forward_costs.record_ar_run(family["target"].model, forward_costs.ArRun(time.monotonic(), 0.001, steps))
    again = playground.generate(PROMPT, method="sd", **family, max_new_tokens=20).stats.account
    assert again.recent_steps == [wall for wall, _ in steps] and again.ar_host == 0.001
    forward_costs.record_ar_run(family["target"].model, forward_costs.ArRun(time.monotonic(), None, steps))
    busy = playground.generate(PROMPT, method="sd", **family, max_new_tokens=20).stats.account
    assert busy.recent_steps == [0.08] * 10 and busy.ar_host == 0.0, "of a busy ar run, the passes that had their core"


class OneSession:
    """What the what-if panel reads of a session: its last run."""

    def __init__(self, run):
        self.run = run

    def get(self, key):
        return self


def figures(run) -> dict:
    """Every speed figure a view shows for `run`, each read from the view itself."""
    account = run.stats.account
    predicted, measured = charts.predicted_vs_measured(run, None).data
    what_if = WhatIf(OneSession(run))
    cost = what_if.profile_chosen("k", "this run, as measured")
    words, _ = what_if.project("k", "this run, as measured", cost, "")
    budget = {trace.name: trace.x for trace in charts.time_budget(run, None).data}
    stats_panel = render.stats_html(run.stats.to_dict())
    return {"chart speedup": measured.y[1], "chart predicted": predicted.y[1], "what-if c": cost,
            "what-if words": words, "budget ar": budget["target passes"][-1], "panel": stats_panel,
            "json": run.to_dict()["stats"]["account"]["speedup"], "bound": speedup_bound(run.stats).bound,
            "budget text": render.budget_text(run), "account speedup": account.speedup()}


def test_changing_one_recorded_timing_moves_every_views_figure(family):
    """The issue's check: T(1) timed half as long makes every view's speedup, c and `ar`'s seconds
    move with it, because no view measures or estimates on its own (twice as long would put the
    run's passes under its T(1), which no view then calls settled)."""
    run = playground.generate(PROMPT, method="sd", **family, temperature=1.0, max_new_tokens=40, seed=3)
    account = run.stats.account
    # As on a quiet machine (the thread had its core, its T(1) timings agree): the panel shows the figure.
    account.decoder_cpu = account.decoder_seconds
    account.reference = [Timing(account.single_step(), 0.0, t.context, t.after_round) for t in account.reference]
    # and no ar run just before it: no passes to hold its T(1) against, nor its host time per token
    # (another test's ar run left a tiny model's, which `ar`'s seconds and the bound scale with T(1) too)
    account.recent_steps, account.ar_host = [], 0.0
    account.pass_seconds = [max(seconds, account.single_step()) for seconds in account.pass_seconds]
    before = figures(run)
    account.reference = [Timing(t.wall / 2, t.cpu, t.context, t.after_round) for t in account.reference]
    after = figures(run)
    for name in ("chart speedup", "json", "account speedup", "budget ar", "bound"):
        assert after[name] != pytest.approx(before[name], rel=0.05), name
    assert after["chart speedup"] == after["json"] == after["account speedup"]
    assert after["what-if c"] == pytest.approx(before["what-if c"] * 2, abs=2e-3)  # each shown to 0.001
    assert f"**{account.speedup():.2f}x**" in after["what-if words"]
    assert f"{account.speedup():.2f}x" in after["panel"] and after["panel"] != before["panel"]
    assert after["budget text"] != before["budget text"]
    assert after["chart predicted"] != pytest.approx(before["chart predicted"], rel=0.05)


def test_changing_one_rounds_pass_moves_the_pass_cost_and_the_what_if(family):
    run = playground.generate(PROMPT, method="sd", **family, temperature=1.0, max_new_tokens=40, seed=3)
    account = run.stats.account
    cost, profile = account.verify_cost(), account.profile()
    account.pass_seconds[-1] += 10 * account.single_step()
    assert account.verify_cost() > cost
    assert account.profile().verify_curve != profile.verify_curve


def test_a_run_whose_thread_shared_its_core_is_said_not_settled(family):
    run = playground.generate(PROMPT, method="sd", **family, max_new_tokens=30)
    account = run.stats.account
    account.decoder_cpu = account.decoder_seconds * (BUSY_UTILIZATION - 0.3)
    why = account.unsettled()
    assert why.startswith("the machine was busy") and f"{BUSY_UTILIZATION - 0.3:.0%}" in why
    panel = render.stats_html(run.stats.to_dict())
    assert "<b>not settled</b>" in panel and "Speedup not settled: the machine was busy" in panel
    # Nor a prediction from the busy costs (a reviewer read "predicted speedup 4.50x *" beside a 2.6x run).
    assert "<b>not settled</b><span>predicted speedup" in panel
    # Mid-run, provisional like the figure (walk 23: "not settled" 3 s in, then the run ended settled)
    running = render.stats_html(run.stats.to_dict() | {"stop_reason": "running"})
    assert "Not settled so far (told again as the run ends): the machine was busy" in running
    chart = charts.predicted_vs_measured(run, None)
    assert any(a.text.startswith("not settled") for a in chart.layout.annotations)
    assert [bar.y[1] for bar in chart.data] == [None, None], "no predicted bar beside the card's 'not settled'"
    budget = charts.time_budget(run, None)
    assert "speedup not settled (the stats say why)" in budget.layout.title.text
    assert "T(1) moved" not in budget.layout.title.text, "it says no reason but the stats' own"
    # nor a modelled ar in the one-line budget (a busy Compare column printed one beside "not settled")
    assert "drafting" in render.budget_text(run) and AR_ROW not in render.budget_text(run)
    words, figure = WhatIf(OneSession(run)).project("k", "this run, as measured", None, "")
    shown = unescape(MarkdownIt().render(words))  # as the page draws it
    assert shown.startswith(f"<p><strong>Not settled:</strong> {why}. So this run's ")
    assert "are not projected on its own costs" in shown
    assert figure is None and not re.search(r"\d+\.\d\dx", shown), "no third figure for the run"
    assert "<b>0.548 *</b>" not in panel and " *</b><span>draft step / target step (c)" in panel
    assert "The figures marked * were measured in the same conditions (what moved T(1) moved them too)." in panel
    ar = playground.generate(PROMPT, method="ar", **family, max_new_tokens=30)
    ar.stats.account.decoder_cpu = ar.stats.account.decoder_seconds * (BUSY_UTILIZATION - 0.3)
    ar_panel = render.stats_html(stats_shown(ar, None))
    assert "Speedup not settled" in ar_panel and "marked *" not in ar_panel, "ar shows no marked figure to point at"
    assert run.to_dict()["stats"]["account"]["unsettled"] == why


def test_an_ar_runs_panel_shows_its_step_and_what_moves_it(family):
    """Walk 28: identical `ar` runs on a page read 14.5 then 11.7 tokens/s, without a word (their
    passes averaged 66 and 80 ms)."""
    ar = playground.generate(PROMPT, method="ar", **family, max_new_tokens=12)
    panel = unescape(render.stats_html(stats_shown(ar, None)))
    step = ar.stats.account.single_step() * 1000
    assert f"<b>{step:.1f}</b><span>ms a target step, T(1): the mean of this run's one-token passes" in panel
    assert "a page drawing each token on the same cores moves it from one run to the next (by up to 1.3x" in panel
    sd = playground.generate(PROMPT, method="sd", **family, max_new_tokens=12)
    assert "ms a target step" not in render.stats_html(stats_shown(sd, ar)), "a drafting run says T(1) beside c"


def test_t1_timings_that_disagree_leave_the_speedup_unsettled():
    account = SpeedAccount(round_count=9)
    account.reference = [Timing(0.02, 0.02, 10, 1), Timing(0.09, 0.05, 20, 9)]
    assert "T(1) timed 20.0-90.0 ms" in account.unsettled()
    account.reference = [Timing(0.02, 0.02, 10, 1), Timing(0.021, 0.021, 20, 9)]
    assert account.unsettled() == ""


def test_many_timings_are_one_steps_within_what_a_drawing_page_spreads_them():
    """A quiet page's `ar` runs spread their one-token passes 1.26-1.60x between the quartiles (the
    page drawing each token on the same two cores) and read "the load changed" in 2 of 4; a load
    that changes within the run puts them apart by its own factor."""
    drawn = [0.044] * 14 + [0.060] * 14 + [0.070] * 14 + [0.146] * 12  # quartiles 44-70 ms: 1.59x
    account = SpeedAccount(round_count=54, decoder_cpu=5.0, clock=5.0, drawn=True)
    account.reference = [Timing(wall, wall, 10 + i, i, extra=False) for i, wall in enumerate(drawn)]
    assert account.unsettled() == ""
    account.recent_steps = drawn  # as the passes before a drafting run: they time it
    account.reference = [Timing(0.05, 0.05, 10, 1, starting=True), Timing(0.06, 0.06, 20, 9)]
    assert account.unsettled() == ""
    changed = [0.045] * 27 + [0.26] * 27  # burners started half way through
    account.recent_steps = changed
    assert account.unsettled() == ("the target's one-token passes of the two minutes before this run, which time "
                                   "its T(1) with its own timings, took 45.0-260.0 ms between their quartiles: the "
                                   "machine's load changed in those minutes")
    account.recent_steps = []
    account.reference = [Timing(wall, wall, i, i, extra=False) for i, wall in enumerate(changed)]
    assert account.unsettled() == ("T(1) timed 45.0-260.0 ms within the run, too far apart to be one step's: other "
                                   "work, or the page drawing on the same cores, moved them")


def test_a_runs_quiet_timings_may_run_under_the_drawn_passes_before_it():
    """Walk 14: 2 of 3 quiet sd runs were withheld, their own timings 43.5 and 40.9 ms (taken as rounds
    ended, the page quiet) against the `ar` run's 69.9 ms a pass (drawn token by token by the page)."""
    account = SpeedAccount(round_count=26, decoder_cpu=2.0, clock=2.0, recent_steps=[0.0699] * 48)
    account.reference = [Timing(0.1076, 0.1, 40, 1, starting=True), Timing(0.0435, 0.04, 56, 17)]
    assert account.unsettled() == ""
    account.reference[1] = Timing(0.0330, 0.03, 56, 17)  # over 2x under them: not one step's
    assert account.unsettled().startswith("this run timed `ar`'s step at 33.0 ms, the target's one-token passes")


def test_passes_cheaper_than_t1_leave_the_speedup_unsettled():
    """Walk 12: a slem run after a Load read a settled 1.38x at T(1) 121.4 ms; the next `ar` run went
    faster than it. A pass of several tokens costs at least one token's, so passes cheaper than T(1)
    say T(1) was timed slower than the run ran."""
    account = SpeedAccount(round_count=9, decoder_cpu=2.0, clock=2.0, pass_seconds=[0.3, 0.080, 0.082])
    account.reference = [Timing(0.1214, 0.12, 10, 1, starting=True), Timing(0.1200, 0.12, 20, 9)]
    assert account.unsettled() == ("its passes of several tokens took 81.0 ms on average, under 90% of the 120.7 ms "
                                   "of its T(1), the mean of its own timings; a pass over several tokens costs more "
                                   "than one token's (1.09-2.4x timed bare on the embedded target, less a tenth "
                                   "allowed for timing one step), so that T(1) ran slower than the machine ran this "
                                   "run, and its speedup over it reads too high")
    account.pass_seconds = [0.3, 0.097, 0.099]  # at 0.81 T(1): a reviewer's settled 1.60x, beside 0.99-1.32x
    assert account.unsettled().startswith("its passes of several tokens took 98.0 ms on average, under 90% of the "
                                          "120.7 ms")
    # Where it can, it says how many tokens a pass took, and where T(1) came from (a reviewer could not
    # tell why a 58.5 ms pass under a T(1) of 59.4 ms unsettled a run).
    account.rounds = [Round(2, 3, 2), Round(2, 2, 1)]
    account.recent_steps = [0.1207] * MANY_TIMINGS
    account.pass_seconds = [0.3, 0.090, 0.090]
    assert account.unsettled().startswith("its passes over 2.5 tokens took 90.0 ms on average, under 77% of the 120.6 "
                                          "ms of its T(1), the mean of the target's one-token passes of the last "
                                          "`ar` run before it (this page's, another visitor's or a Compare's) "
                                          "and its own "
                                          "timings; a pass over several tokens costs more than one token's (1.09-2.4x "
                                          "timed bare on the embedded target, and identical `ar` runs a page drew "
                                          "took up to 1.3x one another's step)")
    # Walk 27: passes at 0.82 of the page's `ar` run's steps withheld three quiet sd runs; identical
    # page-drawn `ar` runs averaged 63.1-81.2 ms a pass, so a run may run that much faster than one.
    account.pass_seconds = [0.3, 0.099, 0.099]
    assert account.unsettled() == ""
    account.rounds, account.recent_steps = [], []
    account.pass_seconds = [0.3, 0.097, 0.099]
    # Within a tenth of it: quiet sd passes over 3.6-3.9 tokens cost 0.99-1.0 of a T(1) read from
    # passes a page drew, and 10 of 12 identical quiet runs read unsettled where that was refused.
    account.pass_seconds = [0.3, 0.110, 0.110]
    assert account.unsettled() == ""
    account.pass_seconds = [0.3, 0.1207, 0.1207]  # as one token's: T(1) may be this run's step
    assert account.unsettled() == ""


def test_t1_timings_apart_from_the_passes_just_before_the_run_leave_it_unsettled(family):
    """A reviewer's fsd read a settled 2.83x on Generate against 1.84x in Compare: its T(1) timings,
    taken while the page drew its rounds, read 38.7 ms; the ar run just before took 24-26 ms a step."""
    account = SpeedAccount(recent_steps=[0.024, 0.025, 0.026], round_count=9, drawn=True)
    account.reference = [Timing(0.0387, 0.03, 10, 1), Timing(0.0385, 0.03, 20, 9)]
    assert account.unsettled() == ("this run timed `ar`'s step at 38.6 ms, the target's one-token passes just "
                                   "before it took 25.0 ms (other work, or the page drawing on the same cores, moved "
                                   "its timings); the Compare tab times this setting against `ar` without the page")
    account.drawn = False  # a CLI run: no page drew it, and none is named
    assert account.unsettled() == ("this run timed `ar`'s step at 38.6 ms, the target's one-token passes just "
                                   "before it took 25.0 ms (other work, or this process's own (a fresh process's "
                                   "first passes run slow now and then), moved its timings); `bench` times it "
                                   "against `ar` run for run")
    account.recent_steps = [0.036]
    assert account.unsettled() == ""
    # the engine holds each run against the target's passes of the two minutes before it
    playground.generate(PROMPT, method="ar", **family, max_new_tokens=8)
    after = playground.generate(PROMPT, method="sd", **family, max_new_tokens=8)
    assert after.stats.account.recent_step is not None
    # but not an ar run, its own reference (one read "not settled" beside the passes of a run before it)
    assert playground.generate(PROMPT, method="ar", **family, max_new_tokens=8).stats.account.recent_steps == []


def test_t1_is_timed_with_the_targets_one_token_passes_just_before_the_run():
    """A lecturer ran `ar` (72 ms a step, 49 tokens) then sd: sd's four timings of T(1), taken while
    the page drew it, read 89 ms and its tile 1.26x, where the two status lines' seconds gave 1.10x.
    T(1) is the mean of every timing of the step of that half minute, the `ar` run's passes among them."""
    account = SpeedAccount(recent_steps=[0.072] * 49, round_count=25)
    account.reference = [Timing(0.089, 0.089, 10 + i, 1 + 8 * i) for i in range(4)]
    assert account.own_step() == pytest.approx(0.089)
    assert account.single_step() == pytest.approx((4 * 0.089 + 49 * 0.072) / 53)
    assert account.unsettled() == ""  # 1.24x apart: within the noise a page's drawing makes
    assert SpeedAccount().single_step() is None


def test_a_run_of_too_few_rounds_is_not_settled():
    """A run stopped after one token read "busy, its core 52%" on a quiet machine: its seconds were
    its prompt's pass."""
    account = SpeedAccount(round_count=1, clock=1.0, decoder_cpu=0.52)
    assert account.unsettled() == ("the run is too short to time: 1 round, mostly its prompt's pass (a speedup "
                                   "needs 3 or more)")
    account.round_count, account.decoder_cpu = 3, 0.99
    assert account.unsettled() == ""


def test_a_page_drawing_beside_the_run_is_named_when_it_slows_the_timings_as_rounds_start():
    """In Chromium on the same two cores, T(1) timed as a round started (the page drawing the last
    one) read 55 ms against 25 ms as rounds ended; the speedup is said not settled, and why."""
    account = SpeedAccount(round_count=13, drawn=True)
    account.reference = [Timing(0.055, 0.05, 10, 1, starting=True), Timing(0.025, 0.025, 12, 5),
                         Timing(0.056, 0.05, 14, 9, starting=True), Timing(0.026, 0.026, 16, 13)]
    assert account.reference_spread() == pytest.approx(0.026 / 0.025), "within a phase they agree"
    assert account.single_step() == pytest.approx(0.0405), "the mean of both phases"
    assert account.unsettled().startswith("the page drawing each round beside the next moved `ar`'s step to "
                                          "55.0-56.0 ms as rounds started, against 25.0-26.0 ms as they ended")
    account.reference = [Timing(0.131, 0.1, 10, 1, starting=True), Timing(0.068, 0.06, 30, 17),
                         Timing(0.053, 0.05, 40, 26, extra=False, starting=True)]
    assert account.unsettled().startswith("the page drawing each round beside the next moved `ar`'s step to "
                                          "53.0-131.0 ms as rounds started"), "one slow start: the page"
    assert "run `ar` on this page just before it" in account.unsettled(), "it says how to settle it"
    account.drawn = False  # a CLI run's timings: its first one-token passes, no page, read 58.4-125.9 ms
    assert account.unsettled() == ("T(1) timed 53.0-131.0 ms within the run, too far apart to be one step's: other "
                                   "work, or this process's own (a fresh process's first passes run slow now and "
                                   "then), moved them"), "no page drew it, and none is named"


def test_the_pages_ar_steps_just_before_settle_a_run_its_drawing_moved():
    """Walk 4: 3 of 4 quiet sd runs beside the page's `ar` run were withheld, their two own timings
    74.9 ms (a round ended) and 114.1 ms (one started, the page drawing); the `ar` run's 48 steps,
    drawn by the same page, are the step T(1) rests on, and the run's own timings only check them."""
    account = SpeedAccount(round_count=26, recent_steps=[0.080] * 48, drawn=True)
    account.reference = [Timing(0.1141, 0.1, 40, 1, starting=True), Timing(0.0749, 0.07, 56, 17)]
    assert account.timed_by_recent_steps()
    assert account.unsettled() == ""
    account.recent_steps = [0.080] * (MANY_TIMINGS - 1)
    assert account.unsettled().startswith("the page drawing each round"), "a few passes do not outweigh the gap"
    account.recent_steps = [0.080] * 48
    account.reference.append(Timing(0.484, 0.1, 60, 20, starting=True))  # a round began as the page drew its stats
    assert account.unsettled() == "", "timings as rounds started measure the page, not the load"
    # nor do they enter T(1) or the run's own step (one of 484 ms set three T(1)s in one panel)
    assert account.own_step() == pytest.approx(0.0749)
    assert account.single_step() == pytest.approx((48 * 0.080 + 0.0749) / 49)
    account.recent_steps = [0.040] * 48
    assert account.unsettled().startswith("this run timed `ar`'s step at 74.9 ms"), \
        "its timings as rounds ended, the page quiet, still check them"
    shown = account.to_dict()  # the two figures the check compares, as the panel names them (walk 25)
    assert (shown["own_step_seconds"], shown["recent_step_seconds"]) == pytest.approx((0.0749, 0.040))


def test_the_passes_before_a_run_time_it_only_where_they_agree():
    """A busy `ar` run (its steps 58-351 ms, itself not settled) then two quiet sd runs timed at 66-90 ms:
    T(1), the mean of them all, read 145 ms and the speedup a settled 1.97x and 2.40x, because the check
    held the sd run's timings against the passes' median (104 ms), not the mean T(1) reads."""
    account = SpeedAccount(round_count=26, recent_steps=[0.06] * 12 + [0.30] * 12)
    account.reference = [Timing(0.0902, 0.09, 40, 1, starting=True), Timing(0.0701, 0.07, 56, 17)]
    assert account.unsettled().startswith("the target's one-token passes of the two minutes before this run, "
                                          "which time its T(1) with its own timings, took 60.0-300.0 ms")
    account.recent_steps = [0.07, 0.08, 0.09, 0.35]  # too few for quartiles: all of them
    assert account.unsettled().startswith("the target's one-token passes")
    account.recent_steps = [0.08] * 19 + [0.40] * 5  # their quartiles agree; their median is 80 ms
    assert account.recent_step == pytest.approx(0.14667, abs=1e-4)
    assert account.unsettled().startswith("this run timed `ar`'s step at 70.1 ms, the target's one-token passes "
                                          "just before it took 146.7 ms"), "held against the mean T(1) reads"
    account.recent_steps = [0.08] * 24
    assert account.unsettled() == ""


def test_a_run_takes_the_targets_one_token_passes_of_the_last_two_minutes(family, monkeypatch):
    """A lecturer reads the `ar` run's page for a minute before running sd: its steps still time sd's T(1)."""
    forward_costs.clear()  # the passes and `ar` runs of the tests before, some timed on a clock moved on
    playground.generate(PROMPT, method="ar", **family, max_new_tokens=8)
    now = time.monotonic()
    monkeypatch.setattr(forward_costs, "time", SimpleNamespace(monotonic=lambda: now + RECENT_STEP_SECONDS + 10))
    assert playground.generate(PROMPT, method="sd", **family, max_new_tokens=8).stats.account.recent_steps == []
    monkeypatch.setattr(forward_costs, "time", SimpleNamespace(monotonic=lambda: now + RECENT_STEP_SECONDS - 10))
    assert len(playground.generate(PROMPT, method="sd", **family, max_new_tokens=8).stats.account.recent_steps) >= 7


def test_a_running_runs_speedup_is_called_provisional(family):
    """A reviewer read 1.79x mid-run, then "not settled" when the run ended."""
    run = playground.generate(PROMPT, method="sd", **family, max_new_tokens=12)
    shown = {**run.stats.to_dict(), "stop_reason": "running"}
    assert render.RUNNING_SPEEDUP in render.stats_html(shown)
    assert render.RUNNING_SPEEDUP not in render.stats_html(run.stats.to_dict() | {"stop_reason": "eos"})


def test_the_speedup_says_it_models_ar_at_this_runs_t1(family):
    """A reviewer read ar 10.2 and sd 15.3 tokens/s (1.50x) beside "1.30x speedup over ar": the
    card times ar's tokens at sd's own T(1), which the page's ar run, drawn token by token, did not keep."""
    run = playground.generate(PROMPT, method="sd", **family, max_new_tokens=12)
    account = run.stats.account
    as_quiet(account)
    step = account.single_step()
    assert (f"speedup over ar (this run's seconds against ar's for its tokens at T(1) = {step * 1000:.1f} ms each, "
            "not an ar run's)") in unescape(render.stats_html(run.stats.to_dict()))


def test_a_drafting_runs_one_token_round_is_timed_as_a_round_starts():
    """In a run that drafts, a round that fed the target one token alone began as the page drew the
    round before (77 ms beside 49 ms as rounds ended had read as a load that changed)."""
    runner = SimpleNamespace(first_pass=0.2, forwards=5, last_pass=(1, 0.077, 0.07), ids=[0] * 30)
    one_token = SimpleNamespace(forwards={"target": 1})
    ar, sd = SpeedAccount(), SpeedAccount(draft_forwards=12)
    ar.take_own_pass(runner, one_token)
    sd.take_own_pass(runner, one_token)
    assert not ar.reference[0].starting and sd.reference[0].starting


def test_a_run_timed_only_as_rounds_started_is_timed_as_its_last_round_ends():
    """A 15-round fsd run beside the page's ar run had two timings, both as rounds started (the page
    drawing): its T(1) read them alone, 59-112 ms, and its quiet speedup "the load changed"."""
    runner = SimpleNamespace(first_pass=0.2, forwards=16, ids=[0] * 30, timed_step=lambda ids: (0.06, 0.06))
    account = SpeedAccount(draft_forwards=40, round_count=15)
    account.reference = [Timing(0.112, 0.1, 20, 1, starting=True), Timing(0.059, 0.05, 30, 15, False, True)]
    account.time_step(runner, runner.ids, starting=False, finished=True)
    assert [t.starting for t in account.reference] == [True, True, False]
    account.time_step(runner, runner.ids, starting=False, finished=True)
    assert len(account.reference) == 3, "one as a round ended is enough"


def test_passes_before_a_run_whose_thread_lacked_its_core_do_not_time_it():
    """Walk 8: an `ar` run at 59% of its core (two burners), then a quiet sd run: sd read a settled
    1.43x at T(1) 107.2 ms, the busy run's steps timing it. They are left out, and the reason says so."""
    account = SpeedAccount(round_count=26, drawn=True)
    account.take_recent_steps([(0.107, 0.059)] * 48)
    assert account.recent_steps == [] and account.recent_busy == pytest.approx(0.059 / 0.107)
    account.reference = [Timing(0.1141, 0.1, 40, 1, starting=True), Timing(0.0749, 0.07, 56, 17)]
    assert account.single_step() == pytest.approx((0.1141 + 0.0749) / 2), "its own timings alone"
    # one figure of that run's share, its own (a reviewer read 45% on its card and 46% here, for one run)
    assert "the target's one-token passes just before it had under 65% of their core (other runs' on this machine, " \
           "beside other work or a page drawing them), too few of the rest to time it: run `ar` on this page just " \
           "before it" in account.unsettled()
    quiet = SpeedAccount(round_count=26)
    quiet.take_recent_steps([(0.080, 0.078)] * 48)
    assert quiet.recent_steps == [0.080] * 48 and quiet.recent_busy is None
    # a quiet `ar` run after the busy one: its steps time the run, the busy ones stay out
    again = SpeedAccount(round_count=26)
    again.take_recent_steps([(0.250, 0.125)] * 47 + [(0.080, 0.078)] * 47)
    assert again.recent_steps == [0.080] * 47 and again.recent_busy is None


def test_a_few_passes_before_a_run_check_its_t1_and_stay_out_of_it():
    """Walk 8: back on the embedded family, a few slow passes of another family's runs put sd's T(1) at
    161.6 ms, beside a reason naming its own timings, 65.5-116.5 ms against 74.0 ms."""
    account = SpeedAccount(round_count=26, recent_steps=[0.5, 0.45, 0.55], drawn=True)
    account.reference = [Timing(0.0655, 0.06, 40, 1, starting=True), Timing(0.1165, 0.1, 50, 9, starting=True),
                         Timing(0.074, 0.07, 56, 17)]
    assert account.single_step() == pytest.approx((0.0655 + 0.1165 + 0.074) / 3)
    assert account.unsettled().startswith("the page drawing each round beside the next moved `ar`'s step to "
                                          "65.5-116.5 ms as rounds started, against 74.0 ms")


def settled_at(account, speedup: float) -> None:
    """Give a run's account one steady T(1) of 10 ms, passes of 12 ms, its core, and the seconds for `speedup`."""
    account.reference, account.recent_steps, account.round_count = [Timing(0.01, 0.01, 10, 1)] * 2, [], 9
    account.pass_seconds = [0.012] * len(account.pass_seconds)
    account.clock = account.ar_seconds() / speedup + account.waited + account.measuring
    account.decoder_cpu = account.decoder_seconds
    assert account.unsettled() == "" and account.speedup() == pytest.approx(speedup)


def test_a_setting_run_again_shows_the_spread_of_its_settled_speedups(family):
    """Walk 9: three identical quiet sd runs read 1.23x, 0.94x and 1.10x, each settled and each
    alone on the panel (their drafting took 0.5 s in one, 1.0 s in another, beside the page drawing).
    A setting run again shows its runs' median and range beside the run's own figure."""
    runs = [playground.generate(PROMPT, method="sd", **family, max_new_tokens=12) for _ in range(4)]
    speedups = SettingSpeedups()
    for run, speedup in zip(runs, (1.23, 0.94, 1.10)):
        settled_at(run.stats.account, speedup)
        run.stats.account.besides = None
        speedups.add(setting_of(run), run)
    assert speedups.spread(setting_of(runs[0])).endswith("T(1) 10 ms)"), "unwatched runs: no program named"
    quiet = SettingSpeedups()
    for run in runs[:2]:
        run.stats.account.besides = []
        quiet.add(setting_of(run), run)
    assert quiet.spread(setting_of(runs[0])).endswith(", no other program took 0.05 of a core or more beside them)")
    # Walk 23: c rose 0.17 -> 0.39 over four quiet runs, "nothing else running": the page's browser ran beside them
    speedups = SettingSpeedups()
    for run, speedup, besides in zip(runs, (1.23, 0.94, 1.10), ([("chromium", 0.2)], [("chromium", 0.63)],
                                                              [("chromium", 0.3), ("node", 0.1)])):
        run.stats.account.besides = besides
        speedups.add(setting_of(run), run)
    runs[3].stats.account.decoder_cpu = 0.3 * runs[3].stats.account.decoder_seconds  # busy: not one of them
    speedups.add(setting_of(runs[3]), runs[3])
    costs = [run.stats.account.cost_ratio() for run in runs[:3]]
    at = f"c {min(costs):.2f}-{max(costs):.2f}" if f"{min(costs):.2f}" != f"{max(costs):.2f}" else f"c {costs[0]:.2f}"
    # with the c and T(1) its runs ran at: what a lecturer can see move from run to run
    beside = "other programs taking 0.20-0.63 of a core beside them (chromium the most)"
    assert speedups.spread(setting_of(runs[0])) == f"1.10x (0.94-1.23x, 3 runs, at {at} and T(1) 10 ms, {beside})"
    panel = render.stats_html(stats_shown(runs[2], None, speedups.spread(setting_of(runs[2]))))
    assert '<div class="stat stat-aside"><b>1.10x</b><span>speedup over ar of your settled runs of this setting' \
        in panel, "set apart from this run's own figures"
    busy = render.stats_html({**stats_shown(runs[2], None, speedups.spread(setting_of(runs[2]))),
                              "account": {"unsettled": "the machine was busy"}})
    assert "settled runs of this setting on this page (not this run: it is not settled)" in unescape(busy), \
        "walk 30: beside a busy run's 'not settled' the figure read as this run's"
    assert html.escape(f"These runs: 0.94-1.23x, 3 runs, at {at} and T(1) 10 ms, {beside}") + "</span>" in panel
    other = playground.generate(PROMPT, method="sd", **family, max_new_tokens=12, candidates=2)
    assert speedups.spread(setting_of(other)) is None, "another setting has runs of its own"
    ar = playground.generate(PROMPT, method="ar", **family, max_new_tokens=12)
    speedups.add(setting_of(ar), ar)
    assert speedups.spread(setting_of(ar)) is None, "ar is the reference"


def test_a_pooled_t1_names_the_runs_own_timings_beside_it():
    """Walk 24: one panel read "target step T(1) = 93.3 ms" (the `ar` passes before the run with its
    own timings) one cell away from "this run's 52.9 ms" (its own alone), unexplained."""
    account = {"single_step_seconds": 0.0933, "own_step_seconds": 0.0529, "recent_step_seconds": 0.0981,
               "step_with_recent_passes": True}
    panel = render.stats_html({"cost_ratio": 0.18, "account": account})
    assert ("target step T(1) = 93.3 ms, with the target&#x27;s one-token passes of the last ar run before it (this "
            "page&#x27;s, another visitor&#x27;s or a Compare&#x27;s: 98.1 ms on average; "
            "this run&#x27;s own timings: 52.9 ms; its speedup settles where its own are under 1.5x those and over "
            "1/2 of them)") in panel
    close = render.stats_html({"cost_ratio": 0.18, "account": account | {"own_step_seconds": 0.09}})
    assert "T(1) = 93.3 ms; a draft step 16.8 ms</span>" in close, "timings that agree need no word"
    alone = render.stats_html({"cost_ratio": 0.18, "account": account | {"step_with_recent_passes": False}})
    assert "T(1) = 93.3 ms; a draft step 16.8 ms</span>" in alone


def test_c_names_the_draft_step_and_what_shared_the_cores_during_the_run():
    """Walk 23: identical quiet sd runs read c 0.17-0.39 with the same draft work, and nothing on
    screen said why; the page's browser, on the same two cores, took 0.20-0.63 of one beside them."""
    account = {"single_step_seconds": 0.050, "besides": [["chromium", 0.41]]}
    panel = unescape(render.stats_html({"cost_ratio": 0.2, "account": account}))
    assert ("target step T(1) = 50.0 ms; a draft step 10.0 ms, which moves with what shares the cores (besides this "
            "app during the run: chromium 0.41 of a core)") in panel
    quiet = unescape(render.stats_html({"cost_ratio": 0.2, "account": account | {"besides": []}}))
    assert "(besides this app during the run: no other program took 0.05 of a core or more)" in quiet
    unmeasured = unescape(render.stats_html({"cost_ratio": 0.2, "account": account | {"besides": None}}))
    assert "a draft step 10.0 ms</span>" in unmeasured


def test_a_timing_as_a_round_ends_is_the_lesser_of_two_passes():
    """Walk 26: one quiet sd run in three was withheld, its one timing as a round ended 129.2 ms
    (94.3, 103.1 ms in the next series) beside `ar` passes of 52-58 ms: a pass disturbed once is not
    the step. As a round starts, the page drawing beside it, one pass is the timing, as before."""
    passes = iter([(0.110, 0.10), (0.206, 0.20), (0.052, 0.05)])
    runner = SimpleNamespace(first_pass=0.05, ids=[0] * 40, timed_step=lambda sequence: next(passes))
    account = SpeedAccount(draft_forwards=5, round_count=20)
    account.time_step(runner, [1] * 41, starting=True)
    account.time_step(runner, [1] * 41, starting=False, finished=True)
    assert [(t.wall, t.starting) for t in account.reference] == [(0.110, True), (0.052, False)]
    assert next(passes, None) is None and account.timing_passes == 3, "one as the round started, two as it ended"


def test_a_speedup_names_the_pages_last_ar_runs_prompt_pass_where_far_from_its_own(family, monkeypatch):
    """Walk 30: sd read 1.35x beside 26.0 over the last `ar` run's 18.1 tokens/s (1.44): that run's
    prompt's pass took 0.233 s, the sd run's 0.093 s, which the speedup's `ar` takes; nothing said so."""
    monkeypatch.setattr(SpeedAccount, "unsettled", lambda self: "")  # timing settles nothing on the tiny family
    ar = playground.generate(PROMPT, method="ar", **family, max_new_tokens=12)
    sd = playground.generate(PROMPT, method="sd", **family, max_new_tokens=12)
    own = sd.stats.account.first_pass
    ar.stats.account.first_pass = 2.5 * own + 0.05
    panel = unescape(render.stats_html(stats_shown(sd, ar)))
    assert (f"ar's prompt's pass here is this run's {own:.3f} s, where the page's last ar run paid "
            f"{2.5 * own + 0.05:.3f} s: so its tokens/s ratio over that run differs") in panel
    ar.stats.account.first_pass = 1.2 * own
    assert "ar's prompt's pass here" not in unescape(render.stats_html(stats_shown(sd, ar))), "near: nothing to say"
    other = playground.generate(PROMPT + " again", method="ar", **family, max_new_tokens=12)
    other.stats.account.first_pass = 2.5 * own + 0.05
    assert "ar's prompt's pass here" not in unescape(render.stats_html(stats_shown(sd, other))), "another prompt"
