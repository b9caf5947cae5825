"""Identical runs computed once (identical.py): a Generate run whose prompt, models, settings and
seed match one finished moments ago is replayed from its record on the record's own clock, labelled
as a replay of the run at that time, and touches no model; one that matches a run still being
computed follows it round by round. Visitors are sessions of their own addresses."""

import re
import threading
import time

import pytest

from playground.methods import METHODS
from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.sharing.identical import Claim, Identical, Record, signature
from playground.ui.sharing.visitors import SessionKey

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


def _held_after_its_first_rounds(handlers):
    """FIRST's run, its page holding it after two rounds or more (its run waits at that round; a
    follower shows each round once the next one has come)."""
    first = handlers.generate(FIRST, PROMPT, "sd", False, *values(max_new_tokens=24))
    next(first)
    while handlers.sessions.get(FIRST).run is None or len(handlers.sessions.get(FIRST).run.steps) < 2:
        next(first)
    return first


def _follower(handlers) -> tuple[threading.Thread, list]:
    views = []
    second = threading.Thread(target=lambda: views.extend(
        handlers.generate(SECOND, PROMPT, "sd", False, *values(max_new_tokens=24))))
    second.start()
    return second, views


def _until(condition, views) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, [view[0] for view in views]
        time.sleep(0.01)


def test_a_run_identical_to_one_being_computed_follows_it_round_by_round(handlers, forwards, monkeypatch,
                                                                         every_refresh):
    monkeypatch.setenv("PLAYGROUND_REPLAY_SECONDS", "0")
    _last(SessionKey("solo", "192.0.2.9"), Handlers(loader=handlers.family.loader, presets=handlers.presets))
    alone, forwards[0] = forwards[0], 0
    monkeypatch.delenv("PLAYGROUND_REPLAY_SECONDS")
    first = _held_after_its_first_rounds(handlers)
    second, views = _follower(handlers)
    _until(lambda: any("following" in str(view[0]) for view in views), views)
    assert 'class="tok' in views[-1][1], "the rounds computed so far are on the follower's page already"
    assert second.is_alive(), "and it goes on with the computing run, which its page still holds"
    last = list(first)[-1]
    second.join(30)
    assert "done: 24 tokens" in views[-1][0] and "shown here round by round as it was computed" in views[-1][0]
    assert "replay" not in last[0] and views[-1][1] == last[1], "the same tokens, shown the same way"
    assert forwards[0] == alone, "one run's passes between the two"


def test_a_follower_of_a_run_stopped_unfinished_says_so_in_one_line(handlers, every_refresh):
    first = _held_after_its_first_rounds(handlers)
    second, views = _follower(handlers)
    _until(lambda: any("following" in str(view[0]) for view in views), views)
    handlers.stop(FIRST)
    assert "stopped after" in list(first)[-1][0]
    second.join(30)
    status = views[-1][0]
    assert "ended unfinished" in status and "press Generate to compute it here" in status and "\n" not in status


def test_a_follower_that_presses_stop_ends_with_its_own_status(handlers, every_refresh):
    """The probe's follower kept "following... 44 tokens" as its last status after its Stop, while the
    run it followed waited: it ends at its next look, and says it was stopped."""
    first = _held_after_its_first_rounds(handlers)
    second, views = _follower(handlers)
    _until(lambda: any("following" in str(view[0]) for view in views), views)
    handlers.stop(SECOND)
    second.join(10)
    assert not second.is_alive(), "it does not wait for the run it followed"
    assert re.search(r"stopped after \d+ tokens?: Stop was pressed", views[-1][0])
    first.close()


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
