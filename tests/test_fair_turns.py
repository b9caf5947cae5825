"""The model's time shared between visitors a verification round at a time (turns.py), the line of
runs waiting for it with each one's place and wait (waiting_line.py), and a visitor's model seconds per
minute. The slow tests drive the app's handlers on the tiny models, each visitor its own address."""

import re
import threading
import time

import pytest

from playground.decoding.speed.speed_account import PREPARING_PART, WAITING_PART, SpeedAccount
from playground.errors import PlaygroundError
from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.sharing import eta
from playground.ui.sharing.turns import Turns, Usage
from playground.ui.sharing.visitors import SessionKey
from playground.ui.sharing.waiting_line import Job, Line, Place, place_text
from playground.ui.tabs.runs import aside_text

from .quiet_account import as_quiet
from .test_ui_handlers import PROMPT, values


def _queued(turns: Turns, visitor: str, order: list) -> threading.Thread:
    def call():
        with turns.turn(visitor):
            order.append(visitor)
    waiting = turns.waiting()
    thread = threading.Thread(target=call)
    thread.start()
    deadline = time.monotonic() + 10
    while turns.waiting() < waiting + 1:  # queued before the next one asks
        assert time.monotonic() < deadline
        time.sleep(0.001)
    return thread


def test_visitors_with_calls_waiting_take_the_model_in_turn():
    """A visitor who queued four calls first and one who queued two after: served A B A B A A,
    not A A A A B B; each visitor's own calls keep their order."""
    turns, order = Turns(), []
    with turns.turn("X"):  # the model is busy while everyone queues
        threads = [_queued(turns, "A", order) for _ in range(4)] + [_queued(turns, "B", order) for _ in range(2)]
    for thread in threads:
        thread.join(10)
    assert order == ["A", "B", "A", "B", "A", "A"]


def test_a_call_interrupted_while_it_waits_leaves_no_one_waiting_for_it():
    turns = Turns()

    def interrupted(timeout=None):
        raise KeyboardInterrupt

    with turns.turn("X"):
        waiting, turns._changed.wait = turns._changed.wait, interrupted
        with pytest.raises(KeyboardInterrupt), turns.turn("A"):
            pass
        turns._changed.wait = waiting
    assert turns.waiting() == 0
    with turns.turn("B"):  # served at once: A's call is not in the ring
        pass


def test_each_turn_is_charged_to_its_visitor_and_its_job():
    turns, job = Turns(), Job("A", [(0.01, 10)])
    with turns.turn("A", job.charge):
        time.sleep(0.02)
    assert turns.used.seconds("A") == pytest.approx(job.used) and job.used >= 0.02
    assert turns.used.seconds("B") == 0


def test_model_seconds_leave_the_window_a_minute_after_they_were_used(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr("playground.ui.sharing.turns.time.monotonic", lambda: now[0])
    usage = Usage()
    usage.add("A", 20.0)
    now[0] += 30
    usage.add("A", 15.0)
    assert usage.seconds("A") == 35.0
    assert usage.free_in("A", 30) == pytest.approx(30.0), "the first turn leaves the window in 30 s"
    assert usage.free_in("A", 40) == 0.0
    now[0] += 31
    assert usage.seconds("A") == 15.0


def test_the_forecast_shares_the_model_between_running_jobs_and_starts_the_next_as_one_ends():
    one_at_a_time = Line(sharing=1, size=10)
    running, second, third = Job("A", [(0.01, 100)]), Job("B", [(0.01, 50)]), Job("C", [(0.02, 10)])
    for job in (running, second, third):
        one_at_a_time.join(job)
    assert one_at_a_time.place(running) is None, "it runs"
    assert one_at_a_time.place(second) == Place(1, pytest.approx(1.0))
    assert one_at_a_time.place(third) == Place(2, pytest.approx(1.5))

    two_at_once = Line(sharing=2, size=10)
    long, short, waiting = Job("A", [(0.01, 100)]), Job("B", [(0.01, 50)]), Job("C", [(0.01, 10)])
    for job in (long, short, waiting):
        two_at_once.join(job)
    # The two share the model: the short one's 0.5 s of work ends after 1.0 s, and C starts then
    assert two_at_once.place(waiting) == Place(1, pytest.approx(1.0))
    two_at_once.leave(short)
    assert two_at_once.place(waiting) is None, "a place freed: it starts"


def test_a_running_job_is_forecast_at_its_own_pace_once_it_has_written_some():
    line, running, waiting = Line(sharing=1, size=10), Job("A", [(None, 100)]), Job("B", [(None, 10)])
    line.join(running)
    line.join(waiting)
    assert line.place(waiting) == Place(1, None), "nothing measured yet"
    assert "2nd" not in place_text(line.place(waiting)) and "known once a run has been measured" in \
        place_text(line.place(waiting))
    running.charge(3.0)
    running.wrote(1)  # the first step: the prompt's prefill (and a first run's setup), not the pace
    running.charge(2.0)
    running.wrote(40)  # then 0.05 s a token, 59 tokens left
    assert line.place(waiting).seconds == pytest.approx(59 * 0.05)
    assert place_text(Place(3, 8.2)) == "waiting for the model: 3rd in line, about 8.2 s"  # tenths under 10 s
    assert place_text(Place(3, 18.2)) == "waiting for the model: 3rd in line, about 18 s"


def test_a_machine_slower_than_when_the_rates_were_measured_scales_the_waits_ahead():
    line, running, waiting, last = Line(sharing=1, size=10), Job("A", [(0.01, 100)]), Job("B", [(0.01, 100)]), \
        Job("C", [(0.01, 10)])
    for job in (running, waiting, last):
        line.join(job)
    assert line.place(last).seconds == pytest.approx(2.0)
    running.charge(0.1)
    running.wrote(1)
    running.charge(0.4)
    running.wrote(20)  # 0.02 s a token after its first step, twice the estimate: the machine is busier now
    assert line.place(waiting).seconds == pytest.approx(79 * 0.02)
    assert line.place(last).seconds == pytest.approx(79 * 0.02 + 2 * 1.0)


def test_a_run_is_expected_to_write_what_the_same_run_wrote_lately_else_what_runs_wrote(family):
    from playground import generate  # noqa: PLC0415

    eta.clear()
    models = {"target": family["target"]}
    assert eta.expected_tokens("ar", models, PROMPT, 30, 0.0, 0) == 30, "nothing known: all it asks"
    run = generate(PROMPT, method="ar", target=family["target"], max_new_tokens=30)
    run.stats.tokens = 12  # as if it had stopped at an end-of-text token
    eta.record(run)
    assert eta.expected_tokens("ar", models, PROMPT, 30, 0.0, 5) == 12, "greedy: whatever the seed"
    assert eta.expected_tokens("ar", models, "another prompt", 30, 0.0, 0) == 30, "one run says little of another"
    assert eta.expected_tokens("ar", models, PROMPT, 30, 0.7, 0) == 30, "sampling: another run"
    for _ in range(eta.MIN_LENGTHS - 1):
        eta.record(run)
    assert eta.expected_tokens("ar", models, "another prompt", 30, 0.0, 0) == 12, "what runs asking 30 wrote"
    assert eta.expected_tokens("ar", models, "another prompt", 100, 0.0, 0) == 100, "no run asked 100: all of them"
    rate = eta.seconds_per_token("ar", models).seconds
    assert rate == pytest.approx((run.stats.decoder_seconds - run.stats.step_clock[0]) / 11), \
        "its pace after the first step, which holds the prefill"


def test_a_run_writing_more_than_the_same_run_did_is_expected_to_go_on_to_its_most():
    line, running, waiting = Line(sharing=1, size=10), Job("A", [(0.01, 20)], most=100), Job("B", [(0.01, 10)])
    line.join(running)
    line.join(waiting)
    running.charge(0.1)
    running.wrote(1)
    running.charge(0.29)
    running.wrote(29)  # past the 20 it was expected to write, at 0.01 s a token
    assert line.place(waiting).seconds == pytest.approx(70 * 0.01)


def test_the_model_seconds_ahead_count_on_the_clock_at_the_share_the_model_was_held(monkeypatch):
    """While jobs ran, the model was held half the time (their pages' updates, other threads'
    work): a second of model work ahead is two on the clock."""
    now = [100.0]
    monkeypatch.setattr("playground.ui.sharing.waiting_line.time.monotonic", lambda: now[0])
    line = Line(sharing=1, size=10, busy_seconds=lambda since: (now[0] - since) / 2)
    running, waiting = Job("A", [(0.01, 100)]), Job("B", [(0.01, 10)])
    line.join(running)
    line.join(waiting)
    assert line.place(waiting).seconds == pytest.approx(1.0), "too soon to tell: the model's seconds"
    now[0] += 10
    assert line.place(waiting).seconds == pytest.approx(2.0)


def test_turns_tell_how_long_the_model_was_held():
    turns = Turns()
    started = time.monotonic()
    with turns.turn("A"):
        time.sleep(0.05)
    held = time.monotonic() - started
    time.sleep(0.05)
    assert 0.05 <= turns.busy_seconds(started) <= held < time.monotonic() - started


def test_turns_tell_the_quartiles_of_their_work_once_a_few_are_known(monkeypatch):
    turns, clock = Turns(), [1000.0]
    monkeypatch.setattr("playground.ui.sharing.turns.time.monotonic", lambda: clock[0])
    for work in (0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.4):
        with turns.turn("A") as held:
            clock[0], held.cpu = clock[0] + 2 * work, work  # the thread had its core half the time
    assert turns.turn_seconds() is None, "7 turns say little"
    with turns.turn("B") as held:
        clock[0], held.cpu = clock[0] + 0.8, 0.4
    assert turns.turn_seconds() == (pytest.approx(0.2), pytest.approx(0.4)), "CPU seconds, not the clock's"
    assert turns.pace() == pytest.approx(0.5), "the recent turns had the core half of their time"


def test_the_pace_is_a_quiet_machines_until_a_few_recent_turns_are_known(monkeypatch):
    turns, clock = Turns(), [1000.0]
    monkeypatch.setattr("playground.ui.sharing.turns.time.monotonic", lambda: clock[0])
    for _ in range(2):
        with turns.turn("A") as held:
            clock[0], held.cpu = clock[0] + 1.0, 0.25
    assert turns.pace() == 1.0, "2 turns say little"
    with turns.turn("A") as held:
        clock[0], held.cpu = clock[0] + 1.0, 0.25
    assert turns.pace() == pytest.approx(0.25)
    clock[0] += 30
    assert turns.pace() == pytest.approx(0.25), "none in the last 5 s: the last three, half a minute old"
    clock[0] += 60
    assert turns.pace() == 1.0, "turns over a minute old say nothing of now"


def test_a_wait_is_told_as_the_range_recent_runs_lengths_put_around_it(family):
    from playground import generate  # noqa: PLC0415

    eta.clear()
    assert eta.length_spread(30) == (1.0, 1.0), "nothing known: no range"
    run = generate(PROMPT, method="ar", target=family["target"], max_new_tokens=30)
    for written in (10, 10, 20, 30, 40):  # as if they had stopped at an end-of-text token
        run.stats.tokens = written
        eta.record(run)
    assert eta.length_spread(30) == (0.5, 1.5), "(p25, p75) over the median"
    assert Place(1, 20.0, (0.5, 1.0)).wait_text() == "about 10-20 s" and Place(1, 20.0).wait_text() == "about 20 s"
    line = Line(sharing=1, size=10)
    line.join(Job("A", [(0.1, 100)]))
    waiting = Job("B", [(0.1, 20)], spread=eta.length_spread(30))
    line.join(waiting)
    assert place_text(line.place(waiting)) == "waiting for the model: 1st in line, about 5-15 s"


def test_a_full_line_refuses_in_one_line():
    line = Line(sharing=1, size=1)
    line.join(Job("A", [(0.1, 1)]))
    line.join(Job("B", [(0.1, 1)]))
    with pytest.raises(PlaygroundError, match="runs are waiting for the model, as many as this deployment queues"):
        line.join(Job("C", [(0.1, 1)]))


@pytest.fixture
def handlers(family, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    for name in ("RUNS_PER_MINUTE", "REPLAY_SECONDS", "MODEL_SECONDS_PER_MINUTE"):
        monkeypatch.setenv(f"PLAYGROUND_{name}", "0")
    by_spec = {m.spec: m for m in family.values()}
    return Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier",
                                                                "tiny test family")])


def test_a_visitor_past_their_model_seconds_waits_for_the_window(handlers, monkeypatch):
    from playground.ui.sharing import model_thread  # noqa: PLC0415

    monkeypatch.setenv("PLAYGROUND_MODEL_SECONDS_PER_MINUTE", "30")
    monkeypatch.setattr(model_thread, "turns", Turns())
    model_thread.turns.used.add("198.51.100.7", 31.0)
    with pytest.warns(UserWarning):
        status = list(handlers.generate(SessionKey("s1", "198.51.100.7"), PROMPT, "ar", False, *values()))[-1][0]
    assert "used 31 s of the model in the last minute" in status and "30 s a minute per visitor" in status
    assert "done" in list(handlers.generate(SessionKey("s2", "203.0.113.5"), PROMPT, "ar", False,
                                            *values()))[-1][0], "another visitor runs"


def test_a_page_says_where_it_stands_at_once_while_other_runs_hold_the_model(handlers, monkeypatch):
    """The class's pages waited a turn of the ring for models loaded long before, 72-81 s without a
    status: a loaded model is handed over at once, and a run that starts beside others says how
    many share the model and when its first tokens should come."""
    from playground.ui.sharing import model_thread  # noqa: PLC0415

    monkeypatch.setattr(model_thread, "turns", Turns())
    list(handlers.generate(SessionKey("s0", "192.0.2.1"), PROMPT, "sd", False, *values()))  # loads the models
    for length in (0.05,) * 8:  # turns of a known length
        with model_thread.turns.turn("earlier"):
            time.sleep(length)
    other = Job("198.51.100.9", [(0.01, 10)])
    handlers.runs.line.join(other)  # another visitor's run takes turns
    held, release = threading.Event(), threading.Event()

    def hold():  # ...and holds the model now
        with model_thread.turns.turn("198.51.100.9"):
            held.set()
            release.wait(10)
    threading.Thread(target=hold).start()
    held.wait(5)
    started = time.monotonic()
    views = handlers.generate(SessionKey("s1", "203.0.113.5"), PROMPT, "sd", False, *values())
    try:
        statuses = [next(views)[0] for _ in range(2)]
        assert time.monotonic() - started < 2, "its first statuses come at once"
        assert "other runs are using it" in statuses[0]
        assert "generating: 1 other run shares the model, a round each in turn: first tokens in about" in statuses[1]
    finally:
        release.set()
        views.close()
        handlers.runs.line.leave(other)


def test_a_runs_clock_counts_its_wait_for_its_first_turn(handlers, monkeypatch):
    """A second visitor's page saw 111.8 s from its click to "done: ... in 101.08 s": its wait for
    its first turn, before the run began, was on no clock. The status line's seconds run from the click."""
    from playground.ui.sharing import model_thread  # noqa: PLC0415

    monkeypatch.setattr(model_thread, "turns", Turns())
    key = SessionKey("s1", "203.0.113.5")
    list(handlers.generate(key, PROMPT, "sd", False, *values()))  # loads the models
    held, release = threading.Event(), threading.Event()

    def hold():  # another visitor holds the model for a second
        with model_thread.turns.turn("198.51.100.9"):
            held.set()
            release.wait(1.0)
    threading.Thread(target=hold).start()
    held.wait(5)
    asked = time.perf_counter()
    views = list(handlers.generate(key, PROMPT, "sd", False, *values(max_new_tokens=8)))
    waited = time.perf_counter() - asked
    account = handlers.sessions.get(key).run.stats.account
    assert "done" in views[-1][0] and account.clock >= 0.95 * waited and waited > 1.0
    assert account.parts()[WAITING_PART] >= 0.9  # the held second is waiting, not its own time
    assert sum(account.parts().values()) == pytest.approx(account.clock)


def _step_times(handlers, key, method: str, tokens: int) -> list[float]:
    """The times at which a Generate run's steps arrived, through the app's own start and steps."""
    _, started = handlers.runs.start(key, PROMPT, method, values(max_new_tokens=tokens), time.perf_counter())
    times = []
    try:
        list(started.waits())
        for _ in started.steps():
            times.append(time.perf_counter())
    finally:
        started.close(None)
    return times


def _slow_target(family, monkeypatch, seconds: float) -> None:
    """Each pass of the target takes `seconds` more than the tiny model's own (a sleep, which
    leaves the cores free), so that what is timed outlasts the machine's own hiccups."""
    target = family["target"].model
    forward = target.forward
    monkeypatch.setattr(target, "forward", lambda *a, **k: time.sleep(seconds) or forward(*a, **k))


@pytest.mark.slow
def test_a_stream_pauses_for_a_round_not_for_another_visitors_compare(handlers, family, monkeypatch):
    """While one visitor's Compare runs (ar and sd, each run a few hundred rounds), another
    visitor's stream advances between its rounds: its longest pause is a small part of one of
    the Compare's runs (each of which held the model whole before). The target's passes are
    slowed so that a Compare run lasts seconds: a pause the machine itself takes (0.4 s was
    seen once) is then far from a quarter of one."""
    _slow_target(family, monkeypatch, 0.004)
    monkeypatch.setenv("PLAYGROUND_RUNS_PER_MINUTE", "2")  # so the Compare times each side once
    compare_runs, comparing = [], threading.Event()
    finished = handlers.runs.finished

    def timed_run(*args, **kwargs):
        started = time.perf_counter()
        comparing.set()
        run = finished(*args, **kwargs)
        compare_runs.append((started, time.perf_counter()))
        return run

    handlers.runs.finished = timed_run
    compare = threading.Thread(target=lambda: list(handlers.compare(
        SessionKey("c", "198.51.100.7"), PROMPT, "sd", "methods", "tau", "", ["ar", "sd"],
        *values(max_new_tokens=300, draft_confidence=0.0))))
    compare.start()
    assert comparing.wait(30)
    steps = _step_times(handlers, SessionKey("g", "203.0.113.5"), "ar", 300)
    compare.join(300)
    longest_run = max(end - start for start, end in compare_runs)
    pauses = [later - earlier for earlier, later in zip(steps, steps[1:])]
    overlapping = [pause for pause, at in zip(pauses, steps[1:]) if any(s < at < e for s, e in compare_runs)]
    assert len(overlapping) > 50, "the stream ran while the Compare did"
    assert max(pauses) < longest_run / 4, (max(pauses), longest_run)


# Alone: its estimate is the recent runs' pace, and beside the other worker's tests a clean clone's
# run told 8.7 s for a wait of 6.1 s (it passed alone, as it had in CI).
@pytest.mark.slow
@pytest.mark.alone
def test_the_wait_a_page_is_told_is_within_30_percent_of_the_wait_it_had(family, monkeypatch):
    """One run at a time: a long run holds the model, two more wait. Each waiting page's first
    estimate ("about N s", from the recent runs' pace) is within 30% of the time until its first
    tokens (and the half second it is rounded to). The target's passes are slowed by 15 ms, so
    that the waits are seconds long whatever else the machine runs."""
    for name, value in {"PUBLIC": "1", "RUNS_PER_MINUTE": "0", "REPLAY_SECONDS": "0", "MODEL_SECONDS_PER_MINUTE": "0",
                        "RUNS_SHARING": "1"}.items():
        monkeypatch.setenv(f"PLAYGROUND_{name}", value)
    _slow_target(family, monkeypatch, 0.015)
    by_spec = {m.spec: m for m in family.values()}
    handlers = Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft", "")])
    tokens = 300
    eta.clear()
    # This machine's pace, as any page's earlier run would have measured it (a pace per token: a
    # shorter run tells it)
    list(handlers.generate(SessionKey("w", "192.0.2.1"), PROMPT, "ar", False, *values(max_new_tokens=tokens // 3)))
    told, first_tokens = {}, {}

    def visit(name: str, seed: int):
        for status, *_ in handlers.generate(SessionKey(name, f"203.0.113.{seed}"), PROMPT, "ar", False,
                                            *values(max_new_tokens=tokens, seed=seed)):
            now = time.perf_counter()
            if isinstance(status, str) and "in line, about" in status and name not in told:
                told[name] = (now, float(status.split("about ")[1].split(" s")[0]))
            if isinstance(status, str) and "generating" in status and name not in first_tokens:
                first_tokens[name] = now

    visits = [threading.Thread(target=visit, args=(name, seed)) for seed, name in enumerate("ABC", start=1)]
    for thread in visits:
        thread.start()
        time.sleep(0.3)
    for thread in visits:
        thread.join(120)
    assert set(told) == {"B", "C"}, "the two that waited were told their wait"
    for name, (at, estimate) in told.items():
        waited = first_tokens[name] - at
        assert abs(estimate - waited) <= 0.3 * waited + 0.5, (name, estimate, waited)


def test_a_running_page_says_when_other_runs_come_to_share_the_model(handlers, every_refresh):
    """A review's first visitor was never told a second had joined, while its run went from 13 to
    61 s: its running status names the runs taking turns with it."""
    alone = [status for status, *_ in handlers.generate(SessionKey("s0", "192.0.2.1"), PROMPT, "ar", False,
                                                         *values())]  # (it loads the models)
    views = handlers.generate(SessionKey("s1", "203.0.113.5"), PROMPT, "ar", False, *values(max_new_tokens=30))
    try:
        statuses = [next(views)[0]]
        other = Job("198.51.100.9", [(0.01, 10)])
        handlers.runs.line.join(other)  # another visitor's run starts taking turns
        statuses += [status for status, *_ in views]
    finally:
        views.close()
        handlers.runs.line.leave(other)
    assert any("(sharing the model with 1 other run, a round each)" in status for status in statuses[1:-1])
    assert "sharing" not in statuses[0]
    # Its end says so too, and what its wait came to: its time is not its pace alone.
    assert re.search(r"done: .*; it took turns with 1 other run \(a round each\): [\d.]+ s of it was waiting, "
                     "counted in its budget", statuses[-1])
    assert "done: " in alone[-1] and "took turns" not in alone[-1]


def test_a_run_that_took_turns_with_another_is_not_settled(handlers):
    """A second visitor's sd run doubled c (0.64 against 0.22-0.34 alone) and read 0.83x, shown as
    settled and counted among the setting's settled runs: the other run's rounds and its page drew
    on the same cores."""
    alone_key, shared_key = SessionKey("s0", "192.0.2.1"), SessionKey("s1", "203.0.113.5")
    list(handlers.generate(alone_key, PROMPT, "sd", False, *values()))
    views = handlers.generate(shared_key, PROMPT, "sd", False, *values())
    other = Job("198.51.100.9", [(0.01, 10)])
    try:
        next(views)
        handlers.runs.line.join(other)
        list(views)
    finally:
        views.close()
        handlers.runs.line.leave(other)
    alone, shared = (handlers.sessions.get(key).run.stats.account for key in (alone_key, shared_key))
    for account in (alone, shared):
        as_quiet(account)
    assert alone.unsettled() == ""
    assert shared.unsettled().startswith("it took turns with another run on the model: their rounds, and their "
                                         "pages drawing them, ran on the same cores")
    # its core taken too (by the other run's page): its reason is still the turns its status line names
    shared.decoder_cpu = 0.4 * shared.decoder_seconds
    assert shared.unsettled().startswith("it took turns with another run on the model")


def test_a_running_page_says_at_once_when_the_others_come_and_go(handlers, monkeypatch):
    """A reviewer's page kept "sharing the model with 1 other run" 3.6 s after the other had ended:
    its refreshes were paced at 4% of a slow run. Paced never again here, it still refreshes when
    the others come and when they go."""
    from playground.ui.views.pacing import Pacer  # noqa: PLC0415

    list(handlers.generate(SessionKey("s0", "192.0.2.1"), PROMPT, "ar", False, *values()))  # loads the models
    views = handlers.generate(SessionKey("s1", "203.0.113.5"), PROMPT, "ar", False, *values(max_new_tokens=60))
    other = Job("198.51.100.9", [(0.01, 10)])

    def next_status():
        return next(status for status, *_ in views if isinstance(status, str))
    try:
        next_status()
        monkeypatch.setattr(Pacer, "due", lambda pacer: False)
        handlers.runs.line.join(other)
        joined = next_status()
        handlers.runs.line.leave(other)
        left = next_status()
        rest = [status for status, *_ in views]
    finally:
        views.close()
        handlers.runs.line.leave(other)
    assert "(sharing the model with 1 other run, a round each)" in joined and "generating" in joined
    assert "sharing" not in left and "generating" in left and rest, "told before the run's end"


def test_a_lone_runs_end_line_says_which_of_its_seconds_its_speed_figures_read():
    """A reviewer alone on the page read 2.03 s of 5.26 s as "waiting (its turn, a load)", no load
    named; another read `ar`'s 3.39 s and sd's 3.51 s beside sd's 1.05x, 0.37 s of it timing `ar`'s step."""
    before = "before its first round (from the click: the app starting it, and any place in line or model load)"
    account = SpeedAccount(clock=5.26, waited=2.03, before=1.2)
    assert aside_text(account) == ("; 3.23 s of it decoding, which its speed figures read; the rest, in its budget: "
                                   f"1.20 s {before}, 0.83 s while the page took its rounds' views")
    timed = SpeedAccount(clock=3.51, waited=0.15, before=0.15, measuring=0.37)
    assert aside_text(timed) == ("; 2.99 s of it decoding, which its speed figures read; the rest, in its budget: "
                                 f"0.15 s {before}, 0.37 s timing `ar`'s step")
    # the first sd after a Load: 0.96 s "before its first round" with no run in line was its draft's preparation
    first = SpeedAccount(clock=1.79, waited=0.6, before=0.596, draft_prepared=0.58)
    assert aside_text(first) == ("; 1.19 s of it decoding, which its speed figures read; the rest, in its budget: "
                                 "0.58 s preparing the draft's levers (its int8 copy or smaller head, once a model), "
                                 f"0.02 s {before}")
    # and the budget counts it as it is named, not as waiting
    assert first.parts()[PREPARING_PART] == 0.58 and first.parts()[WAITING_PART] == pytest.approx(0.02)
    assert sum(first.parts().values()) == pytest.approx(first.clock)
    assert aside_text(SpeedAccount(clock=5.26, waited=0.3, before=0.1)) == "", "a small aside is not told"
