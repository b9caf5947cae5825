"""What an abandoned session can hold is bounded on a public deployment: uploads per visitor per
minute, the (draft token, correction) pairs of its correction memories, step mode's evidence (the
last round's only), and its lifetime once its page stops beating (5 minutes, not 30)."""

import time
import uuid

import gradio as gr
import pytest
from starlette.requests import Request as StarletteRequest

from playground.deploy import limits
from playground.methods.correction_memory import CorrectionMemory
from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.layout import build_demo
from playground.ui.options import all_controls
from playground.ui.sharing.session import Sessions
from playground.ui.tabs.wiring import keyed

PROMPT = "hello there"
VISITOR = "203.0.113.5"
PAIR = ("tiny-target", "tiny-draft")
FIVE_MINUTES = 300


def request(address: str = VISITOR) -> gr.Request:
    """A gr.Request from `address` with a fresh session hash, as a client that picks a new one each time."""
    scope = {"type": "http", "method": "POST", "path": "/gradio_api/queue/join", "query_string": b"",
             "headers": [], "client": (address, 50000), "server": ("127.0.0.1", 7860), "scheme": "http"}
    return gr.Request(StarletteRequest(scope), session_hash=uuid.uuid4().hex)


def values(**overrides) -> list:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 40} | overrides
    return [chosen[c.name] for c in all_controls()]


@pytest.fixture
def handlers(family):
    by_spec = {m.spec: m for m in family.values()}
    return Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", *PAIR, "tiny-qualifier")])


@pytest.fixture
def public(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    monkeypatch.setenv("PLAYGROUND_RUNS_PER_MINUTE", "0")


def memory_file(tmp_path, pairs: int):
    path = tmp_path / f"memory-{pairs}.json"
    CorrectionMemory(*PAIR, {(i % 7, i // 7): 1 for i in range(pairs)}).save(path)
    return str(path)


def test_uploads_are_limited_per_visitor_whatever_its_sessions(handlers, public, monkeypatch, tmp_path):
    monkeypatch.setenv("PLAYGROUND_UPLOADS_PER_MINUTE", "2")
    upload = keyed(handlers.upload_memory)
    path = memory_file(tmp_path, 3)
    assert all("3 rejections" in upload(request(), path) for _ in range(2))
    with pytest.warns(UserWarning):
        refused = upload(request(), path)
    assert "2 correction memory uploads per minute per visitor" in refused and "try again in" in refused
    assert "3 rejections" in upload(request("198.51.100.7"), path), "another visitor uploads"


def test_a_sessions_memories_are_bounded_in_pairs(handlers, public, monkeypatch, tmp_path):
    assert limits.current_limits().max_memory_pairs == 20_000
    monkeypatch.setenv("PLAYGROUND_MAX_MEMORY_PAIRS", "5")
    assert "5 rejections" in handlers.upload_memory("k", memory_file(tmp_path, 5))
    with pytest.warns(UserWarning):
        refused = handlers.upload_memory("k", memory_file(tmp_path, 6))
    assert "holds 6 (draft token, correction) pairs" in refused and "at most 5 per visitor" in refused
    assert len(handlers.sessions.get("k").memories[PAIR].counts) == 5, "the refused upload replaced nothing"


def test_a_full_memory_counts_the_pairs_it_holds_and_adds_none():
    memory = CorrectionMemory(*PAIR, {(1, 2): 1}, max_pairs=2)
    for pair in [(3, 4), (5, 6), (1, 2), (3, 4), (7, 8)]:
        memory.update(*pair)
    assert dict(memory.counts) == {(1, 2): 2, (3, 4): 2}


def test_csd_runs_grow_a_sessions_memory_only_to_the_pair_limit(handlers, public, monkeypatch):
    def memory_after_runs(key: str):
        for seed in range(3):
            list(handlers.generate(key, PROMPT, "csd", False, *values(temperature=1.0, seed=seed)))
        return handlers.sessions.get(key).memories[PAIR]

    monkeypatch.setenv("PLAYGROUND_MAX_MEMORY_PAIRS", "0")
    assert len(memory_after_runs("unbounded").counts) > 4, "the runs reject more than 4 distinct pairs"
    monkeypatch.setenv("PLAYGROUND_MAX_MEMORY_PAIRS", "4")
    bounded = memory_after_runs("bounded")
    assert len(bounded.counts) == 4 and bounded.total > 4, "a full memory keeps counting its pairs"


def test_memory_pairs_are_unbounded_locally(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "0")
    local = limits.current_limits()
    assert local.max_memory_pairs == 0 and local.uploads_per_minute == 0


def test_step_mode_keeps_only_the_last_rounds_evidence(handlers):
    for _ in range(4):
        status, *_ = handlers.step("k", PROMPT, "sd", 0, *values(temperature=1.0, seed=3))
        assert "round" in status, status
    steps = handlers.sessions.get("k").stepping.run.steps
    assert len(steps) == 4 and steps[-1].evidence, "the round on show keeps its evidence"
    assert not any(step.evidence for step in steps[:-1])
    assert sum(len(step.tokens) for step in steps) == handlers.sessions.get("k").stepping.run.stats.tokens


def test_public_sessions_that_stop_beating_go_after_five_minutes(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    sessions = Sessions()
    sessions.get("abandoned").last_seen = time.monotonic() - FIVE_MINUTES - 1
    sessions.get("beating").last_seen = time.monotonic() - FIVE_MINUTES + 30
    sessions.touch("beating")  # the page's heartbeat
    sessions.get("someone")
    assert len(sessions) == 2 and sessions.get("beating").run is None
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "0")  # a desktop keeps them half an hour
    sessions.get("idle").last_seen = time.monotonic() - FIVE_MINUTES - 1
    sessions.get("someone")
    assert len(sessions) == 3


def test_an_abandoned_session_goes_though_no_request_comes():
    sessions = Sessions(idle_seconds=1)
    sessions.get("abandoned").run = object()
    deadline = time.monotonic() + 10
    while len(sessions) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(sessions) == 0, "dropped by the sweep, with no other call to drop it"


def test_a_public_page_beats_while_it_is_open(family, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    demo = build_demo(loader={m.spec: m for m in family.values()}.__getitem__,
                      presets=[Preset("tiny", *PAIR, "tiny-qualifier")])
    ticks = beats(demo)
    assert len(ticks) == 1 and ticks[0].concurrency_limit is None
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "0")
    local = build_demo(loader={m.spec: m for m in family.values()}.__getitem__,
                       presets=[Preset("tiny", *PAIR, "tiny-qualifier")])
    assert not beats(local)


def beats(demo) -> list:
    """A timer's events that write nothing on the page (Compare's and Race's timers tell their lines)."""
    return [fn for fn in demo.fns.values() if any(event == "tick" for _, event in fn.targets) and not fn.outputs]
