"""Sidebar values are checked as they are typed: a value outside its range is named with the range
at once (the issue: tau typed as 5 ran with tau = 1, candidates 0 became 1, silently), and a
Generate that cannot start says why (a misspelt draft name ran the old family without a word)."""

import gradio as gr
import pytest

from playground.errors import PlaygroundError
from playground.ui.handlers import Handlers
from playground.ui.options import MAX_LABEL_CHARS, all_controls, method_choices
from playground.ui.tabs.controls import checked_as_typed, checked_value
from playground.ui.tabs.family_panel import Preset
from playground.ui.views.widgets import OptionSlider, ThresholdSlider

JS_RANGE = "tau must be between 0 and 1 under js (JS reaches at most 0.693: from there to 1 every candidate passes)"

KEY = "session-1"


def note_of(name: str, value, divergence="js", note="") -> str:
    with pytest.warns(UserWarning) as toasts:  # gr.Warning outside a request: the toast's text
        shown = checked_value(value, divergence, note, name=name)
    assert len(toasts) == 1
    return shown


def test_a_value_outside_its_range_is_named_with_the_range():
    tau = note_of("tau", 5.0)
    assert 'data-option="tau"' in tau and "status-error" in tau
    assert f"{JS_RANGE}, got 5.0: the slider moves it to the nearest end" in tau
    assert "candidates must be between 1 and 16, got 0" in note_of("candidates", 0)
    # a fraction in a whole-number slider stays in its box: refused, not moved
    assert "candidates must be a whole number, got 2.5: Generate, Compare, Race and Step mode refuse it" \
        in note_of("candidates", 2.5)
    refused = "seed must be between 0 and 2**64 - 1, got -1: Generate, Compare, Race and Step mode refuse it"
    assert refused in note_of("seed", -1)
    assert "lambda must be a number or inf, got &#x27;six&#x27;" in note_of("lambda_", "six")
    assert "tau must be between 0 and 5 under kl, got 6.0" in note_of("tau", 6.0, "kl")  # the divergence's scale
    # why the range runs past a bounded divergence's maximum (a reviewer read "between 0 and 1 under js"
    # beside "past JS's maximum 0.693" and could not tell why); an unbounded one's range is the slider's
    tv = "under tv (TV reaches at most 1: from there to 2 every candidate passes), got 3.0"
    assert tv in note_of("tau", 3.0, "tv")


def test_a_value_refused_again_as_the_note_says_keeps_the_note_without_a_second_toast(recwarn):
    """A slider's box sends a typed 5 as it is typed and again as it is left: one toast, not two."""
    tau_note = note_of("tau", 5.0)
    assert checked_value(5.0, "js", tau_note, name="tau") != ""  # gr.skip(): the note stays
    assert not recwarn.list
    assert "got 6.0" in note_of("tau", 6.0, note=tau_note)  # another value: its own note and toast


def test_the_end_a_slider_moves_a_refused_value_to_keeps_the_note_that_said_so():
    """A reviewer typed tau 5, pressed Tab, and saw 1 with no word of the 5: the box's value as it
    was left (the range's end) cleared the note as a good value."""
    tau_note = note_of("tau", 5.0)
    moved = checked_value(1.0, "js", tau_note, name="tau")
    # walk 30: once moved, it said the slider "moves it to the nearest end … when you leave the box"
    assert f"{JS_RANGE}, got 5.0: the slider set it to 1, the nearest end of its range" in moved
    assert checked_value(1.0, "js", moved, name="tau") != "", "told again: the note stays (gr.skip())"
    left = checked_value(7.0, "js", tau_note, name="tau", toast=False, typed=True)  # the box's release as it is left
    assert f"{JS_RANGE}, got 7.0: the slider set it to 1, the nearest end of its range" in left
    assert "got -3.0: the slider set it to 0, the nearest end" in checked_value(-3.0, "js", "", name="tau",
                                                                                toast=False, typed=True)
    tokens_note = note_of("max_new_tokens", 99999)
    assert checked_value(512, "js", tokens_note, name="max_new_tokens") != ""
    assert checked_value(256, "js", tokens_note, name="max_new_tokens") == "", "a value inside clears it"
    # ...but that end typed as it is clears it (temperature 5, then the 0 it had been: the note stood)
    temperature_note = note_of("temperature", 5.0)
    assert checked_value(0.0, "js", temperature_note, name="temperature") != "", "moved there: kept"
    assert checked_value(0.0, "js", temperature_note, name="temperature", typed=True) == ""


def test_a_good_value_clears_its_own_note_and_leaves_another_controls():
    tau_note = note_of("tau", 5.0)
    assert checked_value(0.4, "js", tau_note, name="tau") == ""
    assert checked_value(4, "js", tau_note, name="candidates") != ""  # gr.skip(): tau's note stays
    assert checked_value(None, "js", "", name="seed") != ""  # an emptied box is being retyped: no note


def test_a_slider_box_on_the_way_to_a_negative_number_is_no_error(recwarn):
    """Typing "-1" into top p's box sent "-" first: a red Error toast, "top p must be a number, got
    None", beside the range's own note. Its note comes with the number; a run refuses None in words."""
    assert OptionSlider(0.05, 1, step=0.05, label="top p").preprocess(None) is None
    assert checked_value(None, "js", "", name="top_p") != "" and not recwarn.list
    assert "top_p must be between 0.05 and 1, got -1" in note_of("top_p", -1.0)


def test_option_sliders_pass_an_out_of_range_value_to_the_handlers_words():
    """Gradio's slider would refuse it before the handlers, in its own words ("Value 5 is greater
    than maximum value 1."); the options' own check says which option and its range."""
    assert OptionSlider(1, 16, step=1).preprocess(0) == 0
    assert ThresholdSlider(0, 1, step=0.01).preprocess(5) == 5.0
    assert OptionSlider(1, 16, step=1).preprocess(4) == 4


@pytest.fixture
def handlers(family):
    by_spec = {m.spec: m for m in family.values()}

    def loader(spec):
        if spec not in by_spec:
            raise PlaygroundError(f"cannot load model {spec!r}: not an embedded name, directory or hub id")
        return by_spec[spec]
    return Handlers(loader=loader, presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", "tiny")])


def values() -> list:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 12}
    return [chosen[c.name] for c in all_controls()]


def test_a_generate_after_a_failed_load_says_why_and_runs_nothing(handlers):
    handlers.load(KEY, "tiny-target", "tiny-draft", "")
    with pytest.warns(UserWarning):
        status, *_ = handlers.load(KEY, "tiny-target", "tiny-draftt", "")
    assert "cannot load model &#x27;tiny-draftt&#x27;" in status
    with pytest.warns(UserWarning, match="the last Load failed"):
        (status, *_), = list(handlers.generate(KEY, "hello", "sd", False, *values()))
    assert "status-error" in status and "the last Load failed (cannot load model &#x27;tiny-draftt&#x27;" in status
    assert handlers.sessions.get(KEY).run is None, "nothing ran on the family loaded before"
    handlers.load(KEY, "tiny-target", "tiny-draft", "")
    assert "done: 12 tokens" in list(handlers.generate(KEY, "hello", "sd", False, *values()))[-1][0]


def test_a_box_filled_with_what_runs_changes_nothing_and_another_name_waits_for_load(handlers):
    assert handlers.family.edited(KEY, "tiny-draft", role="draft") != ""  # gr.skip(): the preset's own draft
    assert not handlers.sessions.get(KEY).specs_edited
    assert "press Load" in handlers.family.edited(KEY, "tiny-draftt", role="draft")
    assert handlers.sessions.get(KEY).specs_edited


def test_the_method_dropdown_labels_fit_the_sidebar():
    assert all(len(label) <= MAX_LABEL_CHARS for label, _ in method_choices())
    assert dict((name, label) for label, name in method_choices())["fsd"] == "fsd: fuzzy SD"


def test_a_slider_value_typed_and_left_at_once_is_named_from_its_release_without_a_second_toast(recwarn):
    """The slider moves a value typed and left in the same instant into range before its input is
    sent; its release carries the value as typed. Its input toasts it already: a reviewer saw two."""
    note = checked_as_typed("tau")("js", "", gr.EventData(None, 9.0))
    assert f"{JS_RANGE}, got 9" in note and 'data-option="tau"' in note
    assert not recwarn.list


def test_a_slider_box_left_without_a_number_is_named_with_what_the_slider_took(recwarn):
    """Its release carries no value (the browser reads "abc" in a number box as empty), then the
    slider's lowest value comes as its input: the note says so and stays for that value."""
    note = checked_as_typed("max_new_tokens")("js", "", gr.EventData(None, None))
    assert ("max_new_tokens: the box was left empty or without a number, so the slider took 1, the lowest it takes: "
            "type a number from 1 to") in note and 'data-option="max_new_tokens"' in note
    assert checked_value(1, "js", note, name="max_new_tokens") != "", "gr.skip(): the note stays for the 1"
    assert checked_value(12, "js", note, name="max_new_tokens") == ""
    assert checked_value(None, "js", "", name="max_new_tokens") != "", "emptied to retype, not left: no note"
    assert not recwarn.list
