"""The what-if: a run's rounds replayed on other costs (decoding/speed/cost_model.py, decoding/speed/what_if.py,
ui/tabs/what_if_panel.py). A projection: on the run's own measured costs it must give the run's own speedup."""

import re

import pytest

import playground
from playground.decoding.speed import what_if
from playground.decoding.speed.cost_model import (
    CostProfile,
    Round,
    break_even_cost_ratio,
    projected_speedup,
    replay,
)
from playground.errors import PlaygroundError
from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.tabs.what_if_panel import OWN_CURVE, parse_curve
from playground.ui.views import render

from .test_ui_handlers import KEY, PROMPT, run_generate

CURVE = ((1, 1.0), (2, 1.2), (4, 1.6))


def test_a_pass_cost_follows_the_measured_points_and_their_last_slope():
    profile = CostProfile("p", "test", 0.1, CURVE)
    assert [profile.pass_cost(n) for n in (1, 2, 3, 4, 6)] == pytest.approx([1.0, 1.2, 1.4, 1.6, 2.0])
    assert CostProfile("flat", "test", 0.1).pass_cost(9) == 1.0


def test_rounds_replayed_by_hand():
    # Two rounds: 3 draft forwards, a pass over 4 tokens, 3 tokens; 1 forward, a pass over 2, 1 token.
    rounds = [Round(3, 4, 3), Round(1, 2, 1)]
    profile = CostProfile("p", "test", 0.1, CURVE, host_per_round=0.05)
    assert replay(rounds, profile) == pytest.approx({"drafting": 0.4, "target passes": 2.8, "host": 0.1})
    assert projected_speedup(rounds, profile) == pytest.approx(4 / 3.3)
    # Speedup 1 where 4 tokens = 4 forwards x c + 2.8 + 0.1: c = 0.275.
    assert break_even_cost_ratio(rounds, profile) == pytest.approx(0.275)
    assert projected_speedup(rounds, CostProfile("p", "test", 0.275, CURVE, 0.05)) == pytest.approx(1.0)
    # Passes dearer than the tokens they give: no draft cost makes these rounds pay.
    assert break_even_cost_ratio([Round(1, 4, 1)], profile) is None


@pytest.mark.parametrize("method", ["sd", "fsd", "csd"])
def test_on_its_own_measured_costs_a_run_projects_its_own_speedup(family, method):
    """Replayed on the profile of its own speed account, the rounds take the run's own seconds: the
    projection is the speedup the account, the stats and the chart show."""
    run = playground.generate(PROMPT, method=method, **family, temperature=1.0, max_new_tokens=40, seed=3)
    account = run.stats.account
    rounds = account.rounds
    assert sum(r.tokens for r in rounds) == run.stats.tokens
    assert sum(r.draft_forwards for r in rounds) == run.stats.forwards["draft"]
    assert projected_speedup(rounds, account.profile()) == pytest.approx(account.speedup(), rel=1e-6)


def test_the_recorded_profiles_name_their_sources():
    profiles = what_if.recorded_profiles()
    assert len(profiles) >= 3 and all(p.source and 0 < p.cost_ratio < 1 for p in profiles)
    # Each names what its passes count, so two profiles never part silently on that.
    assert all(p.name.endswith(("(pass alone)", "(pass with its checks)")) for p in profiles)
    assert all(dict(p.verify_curve)[1] == 1.0 for p in profiles)


def test_a_curve_typed_by_the_user_is_read_or_refused_in_one_line():
    assert parse_curve("2: 1.1, 8:1.5") == ((1, 1.0), (2, 1.1), (8, 1.5))
    assert parse_curve("") == ((1, 1.0),)
    with pytest.raises(PlaygroundError, match="write pairs like"):
        parse_curve("2 = 1.1")
    with pytest.raises(PlaygroundError, match="a pass is over 1 or more tokens, got 0"):
        parse_curve("0: 1.0")
    # a pass over more tokens costs no less than one token's: '2: 0.5' projected 32x
    with pytest.raises(PlaygroundError, match=r"'2: 0.5': a pass costs from 1 to 1000 T\(1\) \(it does the one"):
        parse_curve("2: 0.5")
    # the other end names its own reason, not the first's example (a reviewer's '2: 1e9' read "'2: 0.5' projected")
    with pytest.raises(PlaygroundError, match=r"'2: 1e9': a pass costs from 1 to 1000 T\(1\) \(1e\+09 is past it"):
        parse_curve("2: 1e9")
    with pytest.raises(PlaygroundError, match="2 tokens are given twice"):  # the order had decided which counted
        parse_curve("2: 1.09, 2: 1.5")
    with pytest.raises(PlaygroundError, match="cannot read '2: nan' as 'tokens: cost'"):  # it read "nan is past it"
        parse_curve("2: nan")


@pytest.fixture
def page(family):
    by_spec = {m.spec: m for m in family.values()}
    return Handlers(loader=lambda spec: by_spec[spec],
                    presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", "tiny test family")])


def test_the_page_projects_the_last_run_and_says_it_is_a_projection(page):
    words, figure = page.what_if(KEY, what_if.THIS_RUN, None, "")
    assert figure is None and "Run something first" in words
    page.load(KEY, "tiny-target", "tiny-draft", "tiny-qualifier")
    run_generate(page, "sd", temperature=1.0, seed=3)
    run = page.sessions.get(KEY).run
    own_c = page.what_if_profile(KEY, what_if.THIS_RUN)
    run.stats.account.unsettled = lambda: "the machine was busy"  # the stats give no figure then, nor does it...
    words, figure = page.what_if(KEY, what_if.THIS_RUN, own_c, "")
    assert words.startswith("**Not settled:** the machine was busy. So this run's ")
    assert f"rounds ({run.stats.tokens} tokens" in words and "are not projected on its own costs" in words
    assert figure is None and not re.search(r"\d\.\d\dx", words)
    recorded = what_if.recorded_profiles()[0]  # ...but another machine's costs replay its rounds
    assert "**Projection, not a measurement:**" in page.what_if(KEY, recorded.name, None, "")[0]
    run.stats.account.unsettled = lambda: None  # ...and on a quiet machine, one the what-if is set beside
    words, figure = page.what_if(KEY, what_if.THIS_RUN, own_c, "")
    assert "**Projection, not a measurement:**" in words and f"{len(run.steps)} rounds" in words
    assert [trace.name for trace in figure.data][:2] == ["projected speedup", "as fast as ar"]
    # at the run's own costs it says why it is not the stats' prediction (1.27x beside 1.54x, unexplained)
    predicted = run.stats.account.predicted_speedup()
    assert f"The stats' predicted speedup ({predicted:.2f}x) counts the drafting and the passes alone" in words
    # and that the replay pays the prompt's pass as it ran (a cold one after a Load was a second, unexplained)
    prompt_pass = run.stats.account.first_pass / run.stats.account.single_step()
    assert f"this replay pays the prompt's pass as it ran, {prompt_pass:.2f} T(1)" in words
    # it names the T(1) its costs are in, as the stats' c tile does (a reviewer could not tell which)
    step = f"{run.stats.account.single_step() * 1000:.1f} ms"
    assert f"in this run's T(1), {step}, the stats' target step" in words
    assert f"target step T(1) = {step}" in render.stats_html(run.stats.to_dict())
    gpu = what_if.recorded_profiles()[1]
    assert page.what_if_profile(KEY, gpu.name) == gpu.cost_ratio
    assert "predicted speedup" not in page.what_if(KEY, gpu.name, gpu.cost_ratio, "")[0]  # another machine's
    words, _ = page.what_if(KEY, OWN_CURVE, 0.2, "2: x")
    assert words.startswith("**what-if:** cannot read '2: x'")
    # c typed past the slider's end beside a bad curve: both said (the curve's refusal hid the c's).
    words, _ = page.what_if(KEY, OWN_CURVE, 2.0, "5: banana")
    assert words.startswith("**c = 2 is the slider's end:**") and "**what-if:** cannot read '5: banana'" in words
    # and below its start: a -1 typed became 0, unsaid
    words, _ = page.what_if(KEY, gpu.name, 0.0, "")
    assert words.startswith("**c = 0 is the slider's start:** a smaller c typed into its box is moved there.")
    # said where c was typed; a refresh after the next run, c still at the end, does not say it again
    assert "slider's start" not in page.what_if_on_page(KEY, gpu.name, 0.0, "")[0]
    assert "slider's start" in page.what_if_on_page(KEY, gpu.name, 0.0, "", typed=True)[0]
    # an empty curve box says the curve it reads
    assert "the box is empty, so every pass costs one T(1)" in page.what_if(KEY, OWN_CURVE, 0.2, "")[0]
    # your own costs stay from run to run, and say they are not the run's own (0.95x beside 1.60x, unexplained)
    own = page.what_if(KEY, OWN_CURVE, 0.64, "2: 1.09")[0]
    assert f"not the run's own figure: choose *{what_if.THIS_RUN}* for that" in own
    assert "not the run's own figure" not in page.what_if(KEY, what_if.THIS_RUN, own_c, "")[0]


def test_the_page_says_why_it_cannot_project(page):
    page.load(KEY, "tiny-target", "tiny-draft", "tiny-qualifier")
    run_generate(page, "ar")
    assert "drafted nothing" in page.what_if(KEY, what_if.THIS_RUN, None, "")[0]
    run_generate(page, "psd-f")
    assert "two models" in page.what_if(KEY, what_if.THIS_RUN, None, "")[0]


def test_the_page_hides_the_what_ifs_controls_and_chart_for_a_run_it_cannot_project(page):
    """A reviewer saw a PyramidSD run's what-if say it does not project the run beside an empty
    chart and a slider that moved nothing; a bad curve keeps them, so the curve can be mended."""
    page.load(KEY, "tiny-target", "tiny-draft", "tiny-qualifier")

    def shown(method: str, curve: str = "") -> list[bool]:
        run_generate(page, method)
        _, *updates = page.what_if_on_page(KEY, OWN_CURVE if curve else what_if.THIS_RUN, 0.2, curve)
        return [update["visible"] for update in updates]

    assert shown("psd-f") == [False] * 4 and shown("ar") == [False] * 4
    assert shown("sd") == [True, True, True, False], "the curve's box only where it is read"
    assert shown("sd", curve="2: x") == [True] * 4
