"""The app's handlers under hostile use, as a public deployment sees it: no server path is read,
every endpoint keeps the controls' limits, sweeps are typed and bounded, each visitor has their
own CSD memory and a rate of runs, and whatever arrives, the answer is a result or one line."""

import json
import logging
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playground.methods import METHODS
from playground.methods.correction_memory import CorrectionMemory
from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.options import MAX_SWEEP_VALUES, all_controls
from playground.ui.sharing.session import Sessions
from playground.ui.tabs.compare import variants

PROMPT = "hello there"


@pytest.fixture
def handlers(family):
    by_spec = {m.spec: m for m in family.values()}

    def loader(spec):
        if spec not in by_spec:
            raise __import__("playground").PlaygroundError(f"model {spec!r} is not allowed")
        return by_spec[spec]

    return Handlers(loader=loader, presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier")])


@pytest.fixture
def public(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    monkeypatch.setenv("PLAYGROUND_RUNS_PER_MINUTE", "0")


def values(**overrides) -> list:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 6} | overrides
    return [chosen[c.name] for c in all_controls()]


def last(generator):
    return list(generator)[-1]


def status_of(result) -> str:
    return result if isinstance(result, str) else result[0]


@pytest.mark.parametrize("option, text, expected", [
    ("candidates", "2, 3", [2, 3]), ("top_k", "1, 5", [1, 5]), ("seed", "1, 2.0", [1, 2]),
    ("max_new_tokens", "2;4", [2, 4]), ("tau", "0.1, 0.5", [0.1, 0.5]),
])
def test_sweep_values_are_parsed_to_the_options_type(handlers, option, text, expected):
    method = "fsd"
    swept = [extra[option] for _, _, extra in variants(method, "sweep", option, text, [], "js")]
    assert swept == expected and all(type(v) is type(e) for v, e in zip(swept, expected))
    view = last(handlers.compare("k", PROMPT, method, "sweep", option, text, [], *values()))
    assert view.count("compare-column") == 1 + len(expected), view  # the ar reference's column first


def test_a_threshold_sweep_is_bounded_by_the_chosen_divergence(handlers):
    view = last(handlers.compare("k", PROMPT, "fsd", "sweep", "tau", "1, 3", [], *values(divergence="kl")))
    assert view.count("compare-column") == 1 + 2, view
    with pytest.warns(UserWarning, match="tau must be between"):  # gr.Warning outside a request
        refused = last(handlers.compare("k", PROMPT, "fsd", "sweep", "tau", "1.5", [], *values(divergence="js")))
    assert "tau must be between 0 and 1 under js" in refused


def test_psd_draft_length_sweeps_as_whole_numbers(handlers):
    view = last(handlers.compare("k", PROMPT, "psd-f", "sweep", "draft_length", "1, 2", [], *values()))
    assert view.count("compare-column") == 1 + 2


@pytest.mark.parametrize("option, text, needle", [
    ("tau", ", ".join(["0.5"] * (MAX_SWEEP_VALUES + 1)), f"1 to {MAX_SWEEP_VALUES} sweep values"),
    ("candidates", "2.5", "whole number"), ("max_new_tokens", "2048", "between 1 and 512"),
    ("candidates", "64", "between 1 and 16"), ("tau", "inf", "must be a finite number"), ("tau", "a, b", "numbers"),
    ("divergence", "1", "not a number"),
    # every bad value named, not only the first (a reviewer's "-1, 0.4, 7" named the -1 alone)
    ("tau", "-1, 0.4, 7", "got -1"), ("tau", "-1, 0.4, 7", "got 7"),
    ("tau", "abc, 0.4, x", "got &#x27;abc&#x27; and &#x27;x&#x27;"),
    ("tau", "0.2, 0.2", "sweep values 0.2 given twice"),  # ran as two identical columns
])
def test_a_sweep_outside_the_controls_is_refused_before_any_run(handlers, option, text, needle):
    with pytest.warns(UserWarning):
        view = last(handlers.compare("k", PROMPT, "fsd", "sweep", option, text, [], *values()))
    assert "status-error" in view and needle in view
    assert handlers.sessions.get("k").started == type(handlers.sessions.get("k").started)(), "nothing ran"


def test_methods_side_by_side_run_once_each(handlers):
    view = last(handlers.compare("k", PROMPT, "sd", "methods", "tau", "", ["sd"] * 40 + ["ar"], *values()))
    assert view.count("compare-column") == 2


@pytest.mark.parametrize("endpoint", ["generate", "step", "compare"])
@pytest.mark.parametrize("overrides, needle", [
    ({"max_new_tokens": 2048}, "between 1 and 512"), ({"candidates": 64}, "between 1 and 16"),
    ({"candidates": None}, "must be a whole number"), ({"max_new_tokens": 3.7}, "whole number"),
    ({"seed": 2**70}, "seed"),
])
def test_every_run_endpoint_keeps_the_controls_limits(handlers, endpoint, overrides, needle):
    calls = {"generate": lambda: last(handlers.generate("k", PROMPT, "sd", False, *values(**overrides))),
             "step": lambda: handlers.step("k", PROMPT, "sd", 0, *values(**overrides)),
             "compare": lambda: last(handlers.compare("k", PROMPT, "sd", "methods", "tau", "", ["sd"],
                                                      *values(**overrides)))}
    with pytest.warns(UserWarning):
        status = status_of(calls[endpoint]())
    assert "status-error" in status and needle in status


def test_an_empty_load_is_refused_and_the_session_keeps_its_family(handlers):
    """A refused Load keeps the family; runs wait for a Load that works and say why (they ran the
    family loaded before without a word), then run again."""
    handlers.load("k", "tiny-target", "tiny-draft", "")
    with pytest.warns(UserWarning):
        status, family, dropdown = handlers.load("k", "", "", "")
    assert "no target model" in status
    with pytest.warns(UserWarning):
        handlers.load("k", "missing-model", "", "")
    assert handlers.sessions.get("k").specs == {"target": "tiny-target", "draft": "tiny-draft"}
    with pytest.warns(UserWarning, match="the last Load failed"):
        assert "the last Load failed" in last(handlers.generate("k", PROMPT, "sd", False, *values()))[0]
    handlers.load("k", "tiny-target", "tiny-draft", "")
    assert "done" in last(handlers.generate("k", PROMPT, "sd", False, *values()))[0]


def test_public_correction_memory_is_per_session(handlers, public):
    csd = values(temperature=1.0, seed=1, max_new_tokens=40)
    last(handlers.generate("alice", PROMPT, "csd", False, *csd))
    path, view = handlers.correction_memory("alice")
    assert path and json.load(open(path))["rejections"] > 0 and "yours alone" in view
    bob_path, bob_view = handlers.correction_memory("bob")
    assert bob_path is None and "no correction memory yet" in bob_view


def test_an_uploaded_memory_starts_this_visitors_csd(handlers, public, tmp_path, monkeypatch):
    good = tmp_path / "memory.json"
    CorrectionMemory("tiny-target", "tiny-draft", {(3, 4): 7}).save(good)
    assert "7 rejections" in handlers.upload_memory("alice", str(good))
    assert handlers.sessions.get("alice").memories[("tiny-target", "tiny-draft")].count(3, 4) == 7
    assert handlers.correction_memory("bob")[0] is None
    other = tmp_path / "other.json"
    CorrectionMemory("x", "y", {(1, 2): 1}).save(other)
    with pytest.warns(UserWarning):
        assert "calibrated for target &#x27;x&#x27;" in handlers.upload_memory("alice", str(other))
    monkeypatch.setenv("PLAYGROUND_MAX_UPLOAD_BYTES", "10")
    with pytest.warns(UserWarning):
        assert "over the limit of 10" in handlers.upload_memory("alice", str(good))


def test_public_mode_reads_no_server_path_and_tells_none_apart(handlers, public, tmp_path):
    """An existing file no visitor should read, and a missing one: the same answer, everywhere."""
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"target": "tiny-target", "draft": "tiny-draft"}))
    secret.chmod(0)
    answers = {}
    for path in (str(secret), str(tmp_path / "missing.json"), str(tmp_path)):
        csd = values(memory=path)
        with pytest.warns(UserWarning):
            answers[path] = [
                last(handlers.generate("k", PROMPT, "csd", False, *csd))[0],
                handlers.step("k", PROMPT, "csd", 0, *csd)[0],
                last(handlers.compare("k", PROMPT, "csd", "methods", "tau", "", ["csd"], *csd)),
                # in a session of its own: after a failed Load, a session's runs wait for one that works
                *(handlers.load("k-load", *[path if r == role else "" for r in ("target", "draft", "qualifier")])[0]
                  for role in ("target",)),
            ]
        answers[path] = [answer.replace(path, "PATH") for answer in answers[path]]
    first, *others = answers.values()
    assert all(other == first for other in others), answers
    assert "cannot be read from a path on this public deployment" in first[0]


def test_runs_per_minute_are_limited_per_session(handlers, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_RUNS_PER_MINUTE", "3")
    for _ in range(3):
        assert "done" in last(handlers.generate("k", PROMPT, "ar", False, *values()))[0]
    with pytest.warns(UserWarning):
        status = last(handlers.generate("k", PROMPT, "ar", False, *values()))[0]
    assert "3 runs per minute" in status and "try again in" in status
    assert "done" in last(handlers.generate("other", PROMPT, "ar", False, *values()))[0]
    with pytest.warns(UserWarning):  # a compare counts the reference and each column
        view = last(handlers.compare("third", PROMPT, "fsd", "sweep", "tau", "0.1, 0.2, 0.3", [], *values()))
    assert "runs per minute" in view


def test_idle_sessions_are_dropped():
    sessions = Sessions(idle_seconds=0)
    sessions.get("a").run = object()
    sessions.get("b")
    assert len(sessions) == 1, "a, idle, went when b arrived"


# -- every endpoint, fuzzed with wrong types and wrong values ------------------------------------
anything = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                     st.text(max_size=6), st.lists(st.text(max_size=3), max_size=3))
controls = st.tuples(*[st.one_of(st.just(c.default if c.name != "max_new_tokens" else 4), anything)
                       for c in all_controls()])
methods = st.one_of(st.sampled_from(sorted(METHODS)), anything)
ENDPOINTS = {
    "load": lambda h, a, c: h.load("k", a[0], a[1], a[2], a[3]),
    "generate": lambda h, a, c: list(h.generate("k", a[0], a[4], a[1], *c)),
    "compare": lambda h, a, c: list(h.compare("k", a[0], a[4], a[1], a[2], a[3], a[5], *c)),
    "step": lambda h, a, c: h.step("k", a[0], a[4], a[1], *c),
    "step_position": lambda h, a, c: h.step_position("k", a[0]),
    "toy_reset": lambda h, a, c: h.toy_reset("k", a[0]),
    "rerender": lambda h, a, c: h.rerender("k", a[0]),
    "upload_memory": lambda h, a, c: h.upload_memory("k", a[0]),
    "method_changed": lambda h, a, c: h.method_changed("k", a[4]),
    "preset": lambda h, a, c: h.preset(a[0]),
    "export_json": lambda h, a, c: h.export_json("k"),
    "correction_memory": lambda h, a, c: h.correction_memory("k"),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(endpoint=st.sampled_from(sorted(ENDPOINTS)), args=st.tuples(anything, anything, anything, anything, methods,
                                                                    st.one_of(st.lists(methods, max_size=3), anything)),
       control_values=controls)
def test_every_endpoint_answers_a_result_or_one_line(handlers, caplog, endpoint, args, control_values):
    """No exception leaves a handler, and none reaches the status line as a raw Python error."""
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="playground.ui"), warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        ENDPOINTS[endpoint](handlers, args, control_values)
    assert not caplog.records, caplog.records[0].getMessage()
    assert all("\n" not in str(w.message) for w in warned)


def test_a_public_app_keeps_the_component_state_of_hundreds_of_sessions_not_ten_thousand(monkeypatch):
    """Gradio keeps each session's state (closed ones too) up to a capacity of 10,000 by default,
    about 2 GB here; a public deployment keeps 500, PLAYGROUND_STATE_SESSIONS sets it."""
    from playground.ui import launch_options

    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    assert launch_options()["state_session_capacity"] == 500
    monkeypatch.setenv("PLAYGROUND_STATE_SESSIONS", "80")
    assert launch_options()["state_session_capacity"] == 80
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "0")
    monkeypatch.delenv("PLAYGROUND_STATE_SESSIONS")
    assert launch_options()["state_session_capacity"] == 10_000  # Gradio's own, on a desktop
