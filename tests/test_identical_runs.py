"""Identical runs computed once (identical.py): a Generate run whose prompt, models, settings and
seed match one finished moments ago is replayed from its record on the record's own clock, labelled
as a replay of the run at that time, and touches no model; one that matches a run still being
computed waits for it, then replays it. Visitors are sessions of their own addresses."""

import threading
import time

import pytest

from playground.methods import METHODS
from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.identical import Claim, Identical, Record, signature
from playground.ui.visitors import SessionKey

from .test_ui_handlers import PROMPT, values

FIRST, SECOND = SessionKey("first", "203.0.113.5"), SessionKey("second", "198.51.100.7")


@pytest.fixture
def handlers(family, monkeypatch):
    for name, value in {"PUBLIC": "1", "RUNS_PER_MINUTE": "0", "MODEL_SECONDS_PER_MINUTE": "0"}.items():
        monkeypatch.setenv(f"PLAYGROUND_{name}", value)
    by_spec = {m.spec: m for m in family.values()}
    return Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier",
                                                                "tiny test family")])


@pytest.fixture
def forwards(family, monkeypatch):
    """Every forward pass of the tiny models, counted."""
    count = [0]
    for model in family.values():
        forward = model.model.forward
        monkeypatch.setattr(model.model, "forward",
                            lambda *a, forward=forward, **k: count.__setitem__(0, count[0] + 1) or forward(*a, **k))
    return count


def _last(key, handlers, **overrides) -> tuple:
    return list(handlers.generate(key, PROMPT, "sd", False, *values(max_new_tokens=24, **overrides)))[-1]


def test_an_identical_run_is_replayed_and_labelled_not_computed(handlers, forwards):
    first = _last(FIRST, handlers)
    assert "done" in first[0] and "replay" not in first[0]
    computed = forwards[0]
    second = _last(SECOND, handlers)
    assert forwards[0] == computed, "the replay ran no model"
    assert "done: 24 tokens" in second[0] and "a replay of the identical run computed at" in second[0]
    assert second[1] == first[1], "the same tokens, shown the same way"
    replayed = handlers.sessions.get(SECOND).run
    original = handlers.sessions.get(FIRST).run
    assert replayed.stats.step_clock == original.stats.step_clock, "on the original's own clock"
    assert any("a replay of the identical run" in note for note in replayed.notes)
    assert not any("replay" in note for note in original.notes), "the record itself is not changed"
    _last(SECOND, handlers, seed=5, temperature=0.7)
    assert forwards[0] > computed, "another seed is another run: computed"


def test_a_run_identical_to_one_being_computed_waits_for_it_then_replays_it(handlers, forwards, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_REPLAY_SECONDS", "0")
    _last(SessionKey("solo", "192.0.2.9"), Handlers(loader=handlers.family.loader, presets=handlers.presets))
    alone, forwards[0] = forwards[0], 0
    monkeypatch.delenv("PLAYGROUND_REPLAY_SECONDS")
    first = handlers.generate(FIRST, PROMPT, "sd", False, *values(max_new_tokens=24))
    while "generating" not in str(next(first)[0]):  # its first tokens are out; this page holds it there
        pass
    statuses = []
    second = threading.Thread(target=lambda: statuses.extend(
        status for status, *_ in handlers.generate(SECOND, PROMPT, "sd", False, *values(max_new_tokens=24))))
    second.start()
    deadline = time.monotonic() + 30
    while not any("identical run" in str(status) for status in statuses):
        assert time.monotonic() < deadline, statuses
        time.sleep(0.01)
    assert "the identical run (same prompt, models, settings and seed) of another visitor is running and will be " \
        "replayed here, about" in statuses[0]
    assert "replay" not in list(first)[-1][0]
    second.join(30)
    assert "a replay of the identical run computed at" in statuses[-1]
    assert forwards[0] == alone, "one run's passes between the two"


def test_identical_runs_replay_only_while_recent_and_few():
    identical = Identical(seconds=300, kept=2)
    keys = [("p", "sd", (), (("seed", str(n)),)) for n in range(3)]
    for key in keys:
        assert identical.claim(key) is None, "computed: none like it"
        assert isinstance(identical.claim(key), Claim), "being computed: the next one waits for it"
        identical.publish(key, f"run {key}")
        identical.release(key)
    assert identical.claim(keys[0]) is None, "the oldest of three went (2 kept)"
    assert isinstance(identical.claim(keys[2]), Record)
    assert Identical(seconds=0).claim(keys[2]) is None and Identical(seconds=0).claim(keys[2]) is None, "off"


def test_a_method_that_learns_between_runs_is_always_computed():
    assert METHODS["csd"].uses_memory and signature("p", "csd", {"target": "t"}, {"seed": 0}) is None
    assert signature("p", "sd", {"target": "t"}, {"seed": 0}) != signature("p", "sd", {"target": "t"}, {"seed": 1})
