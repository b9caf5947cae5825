"""What a class's probe sent and got no words for: each now refused in one line, a long or marked-up
name cut short and shown as text, and the server spared the work."""

import math
import time
from html import unescape

import gradio as gr
import pytest

from playground.decoding.speed import what_if
from playground.errors import PlaygroundError
from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.options import all_controls
from playground.ui.tabs.what_if_panel import MAX_CURVE_CHARS, OWN_CURVE, parse_curve
from playground.ui.views import widgets

KEY = "session-1"
PROMPT = "hello there"


@pytest.fixture
def handlers(family):
    by_spec = {m.spec: m for m in family.values()}
    return Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft",
                                                                "tiny-qualifier", "tiny test family")])


def values(**overrides) -> list:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 8} | overrides
    return [chosen[c.name] for c in all_controls()]


def test_a_huge_typed_curve_is_refused_before_it_is_read():
    """400,000 pairs (7.3 MB) took 41 s of the server's CPU."""
    huge = ", ".join(f"{n}: 1.5" for n in range(2, 400_002))
    started = time.perf_counter()
    with pytest.raises(PlaygroundError) as error:
        parse_curve(huge)
    assert time.perf_counter() - started < 0.5
    assert str(error.value).startswith(f"the curve is {len(huge):,} characters; write at most 64 pairs")
    assert "\n" not in str(error.value)
    assert parse_curve(", ".join(f"{n}: 1.5" for n in range(2, 60)))[-1] == (59, 1.5)
    with pytest.raises(PlaygroundError, match="at most 64 pairs"):
        parse_curve("," * (MAX_CURVE_CHARS - 1))


def test_the_what_if_refuses_a_c_that_is_no_number_and_a_profile_it_does_not_know(handlers):
    slider = widgets.Slider(0.0, 1.0, value=0.1, label="c: a draft forward in target steps")
    for bad in ("x", math.nan):
        with pytest.raises(gr.Error, match="c: a draft forward in target steps must be a number"):
            slider.preprocess(bad)
    assert slider.preprocess(None) is None  # a box on the way to a number: the what-if takes the run's own c
    list(handlers.generate(KEY, PROMPT, "sd", False, *values()))
    words, figure = handlers.what_if(KEY, "<b>" + "x" * 100_000, 0.1, "")
    assert figure is None and words.startswith("**what-if:** unknown costs &#x27;&lt;b&gt;xxx") and len(words) < 400
    assert "characters) choose one of the list" in words and "<b>" not in words
    assert handlers.what_if_profile(KEY, "nobody's") is None
    assert handlers.what_if_profile(KEY, OWN_CURVE) == gr.skip(), "your own curve keeps the slider's c"
    words, _ = handlers.what_if(KEY, what_if.THIS_RUN, None, "")
    assert words.startswith(("**Projection, not a measurement:**", "**Not settled:**"))  # as the test machine allows


@pytest.mark.parametrize("seed", [-1, -5, 1e30, 2**64, 0.5, math.inf, None])
def test_the_toy_refuses_a_seed_outside_its_range_in_one_line(handlers, seed):
    handlers.toy_step(KEY, 3)
    with pytest.warns(UserWarning) as toasts:
        table, _ = handlers.toy_reset(KEY, seed)
    message = unescape(str(toasts[0].message))
    assert "the toy's seed must be a whole number from 0 to 4,294,967,295" in message and "\n" not in message
    assert "Last rounds (3 in all)" in table, "the toy is kept as it was"


def test_the_toy_takes_a_seed_in_range(handlers):
    table, _ = handlers.toy_reset(KEY, 2**32 - 1)
    assert "Last rounds (0 in all)" in table


@pytest.mark.parametrize("name", ["m" * 100_000, "<img src=x onerror=alert(1)>"])
def test_a_method_name_no_page_offers_is_cut_short_and_shown_as_text(handlers, name):
    """Gradio's own check of a dropdown echoed a 100,000-character name whole; the method picker
    hands it to the handler, whose status and toast cut it short and escape it."""
    assert widgets.Choice(["sd", "ar"], value="sd").preprocess(name) == name
    with pytest.warns(UserWarning) as toasts:
        status, *_ = list(handlers.generate(KEY, PROMPT, name, False, *values()))[-1]
    assert "status-error" in status and "unknown method" in status and len(status) < 600
    assert "<img" not in status and "<img" not in str(toasts[0].message)
