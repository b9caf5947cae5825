"""A job's line tells the time left between its runs too: beside two burners one stood at "13 s
left" for 44 s while a run computed."""

import html
import re
import threading
import time

import pytest

from playground.ui.sharing import eta, ticks
from playground.ui.sharing.ticks import going_text, with_ticks

from .test_race import race  # noqa: F401  (the fixture)
from .test_ui_handlers import KEY, PROMPT, handlers, values  # noqa: F401  (the fixture)


def slow(items: list, seconds: float, computed: list | None = None):
    for item in items:
        time.sleep(seconds)
        if computed is not None:
            computed.append(item)
        yield item


def test_items_come_in_order_with_ticks_between_them():
    seen = list(with_ticks(slow(["a", "b"], 0.3), 2, every=0.05))
    assert [item for item, _ in seen if item is not None] == ["a", "b"]
    between = [elapsed for item, elapsed in seen if item is None]
    assert len(between) >= 4, seen
    assert 0 < min(between) and max(between) < 0.45, "each tick counts from the last item, not the first"


def test_no_tick_comes_after_the_last_item():
    """The job loops read the plan's run for each tick: one after the last read past the plan's end."""
    def last_then_slow_end():
        yield "a"
        time.sleep(0.3)  # the worker, starved between its last run and its end mark
    assert list(with_ticks(last_then_slow_end(), 1, every=0.05)) == [("a", None)]


def test_an_error_of_the_items_is_raised_on_the_callers_thread():
    def failing():
        yield 1
        raise ValueError("the run failed")
    seen = with_ticks(failing(), 2, every=0.05)
    assert next(seen) == (1, None)
    with pytest.raises(ValueError, match="the run failed"):
        next(seen)


def test_closed_early_it_waits_for_the_item_going_and_computes_no_more():
    computed = []
    seen = with_ticks(slow(["a", "b", "c"], 0.2, computed), 3, every=0.05)
    assert next(item for item, _ in seen if item is not None) == "a"
    assert next(seen)[0] is None  # "b" is being computed
    seen.close()
    assert computed == ["a", "b"], "b, going as it closed, ended; c never started"
    assert not any(t.name == "job-runs" and t.is_alive() for t in threading.enumerate())


def test_the_going_line_counts_down_the_time_left_told():
    assert going_text(4, 12, "sd: repeat 1", 20.0, 45.0) == (
        "run 4 of 12 going (sd: repeat 1, 20 s so far), about 25 s left")
    assert going_text(4, 12, "sd: repeat 1", 50.0, 45.0) == (
        "run 4 of 12 going (sd: repeat 1, 50 s so far), longer than the 45 s left told: told again as it ends")
    assert going_text(1, 12, "ar: warm-up", 6.0, None) == "run 1 of 12 going (ar: warm-up, 6 s so far)"


def test_compare_and_race_lines_tell_a_run_going(handlers, race, family, monkeypatch):  # noqa: F811
    """Each run slowed to about 0.3 s: the lines between the runs' say which one goes, and count down."""
    monkeypatch.setattr(ticks, "TICK_SECONDS", 0.1)
    model, forward = family["target"].model, family["target"].model.forward
    monkeypatch.setattr(model, "forward", lambda *args, **kwargs: (time.sleep(0.02), forward(*args, **kwargs))[1])
    views = list(handlers.compare(KEY, PROMPT, "sd", "methods", "tau", "", ["sd"], *values()))
    assert any(re.search(r"run 5 of 8 going \(sd: repeat 2, \d+ s so far\)", view) for view in views), views
    assert "compare-column" in views[-1], "the results still come"
    lines = [status for status, _ in race.run_methods(KEY, PROMPT, ["ar", "sd"], *values())]
    assert any(re.search(r"run 3 of 8 going \(ar: repeat 1 of 3, alone, \d+ s so far\)", line) for line in lines)


def test_a_rise_in_the_time_left_is_told_against_the_figure_counted_down(handlers, family, monkeypatch):  # noqa: F811
    """Walk 21: a line counted down to "about 18 s left" as a run went, then read "about 24 s left"
    as it ended, unexplained: the rise was measured against the 43 s told as the last run ended."""
    monkeypatch.setattr(ticks, "TICK_SECONDS", 0.1)
    monkeypatch.setattr(eta, "job_time_left", lambda *args, **kwargs: 20.0)  # every run end tells 20 s
    monkeypatch.setattr(eta, "job_time_left_range", lambda *args, **kwargs: None)
    model, forward = family["target"].model, family["target"].model.forward
    monkeypatch.setattr(model, "forward", lambda *args, **kwargs: (time.sleep(0.06), forward(*args, **kwargs))[1])
    views = list(handlers.compare(KEY, PROMPT, "sd", "methods", "tau", "", ["sd"], *values()))
    assert any(re.search(r"done \(.*\), about 20 s left \(up from about 1\d s: \w+'s run took longer than "
                         r"estimated\)", html.unescape(view)) for view in views), [v for v in views if " done (" in v]
