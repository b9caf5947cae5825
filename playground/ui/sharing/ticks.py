"""A job's runs, with a tick between them: the line under Compare's and Race's buttons told the time
left only as a run ended, and beside two burners one stood at "13 s left" for 44 s."""

import queue
import threading
import time
from collections.abc import Generator, Iterator

from . import eta

TICK_SECONDS = 5.0
_ITEM, _END, _ERROR = "item", "end", "error"


def with_ticks(items: Generator, count: int, every: float | None = None) -> Iterator[tuple[object, float | None]]:
    """(item, None) for each of the `count` `items`, computed on a thread of its own, and (None,
    seconds since the last item) every `every` seconds (TICK_SECONDS) between them: none after the
    last (its tick read one run past the job's plan). Closed early, it waits for the item being
    computed (a run holds the model's turns until it ends) and computes no more."""
    handoff, closed, every = queue.Queue(), threading.Event(), every or TICK_SECONDS

    def produce():
        try:
            for item in items:
                handoff.put((_ITEM, item))
                if closed.is_set():
                    return
            handoff.put((_END, None))
        except BaseException as error:  # noqa: BLE001  (raised again on the caller's thread)
            handoff.put((_ERROR, error))
        finally:
            items.close()

    worker = threading.Thread(target=produce, name="job-runs", daemon=True)
    worker.start()
    last, given = time.perf_counter(), 0
    try:
        while True:
            try:
                kind, value = handoff.get(timeout=every if given < count else None)
            except queue.Empty:
                yield None, time.perf_counter() - last
                continue
            if kind == _END:
                return
            if kind == _ERROR:
                raise value
            last, given = time.perf_counter(), given + 1
            yield value, None
    finally:
        closed.set()
        worker.join()


def as_started(line: str, expected: str) -> str:
    """A job's progress `line` with what the job was `expected` to take as it started ("" where
    nothing was known): its "Starting:" line gave way to the first progress line within a second."""
    return f"{line}; expected as it started: {expected}" if expected else line


def going_text(number: int, total: int, what: str, elapsed: float, left: float | None) -> str:
    """'run 4 of 12 going (sd: repeat 1, 20 s so far), about 25 s left': the time left told as the
    last run ended, less the seconds since."""
    line = f"run {number} of {total} going ({what}, {elapsed:.0f} s so far)"
    if not left:
        return line
    if left > elapsed:
        return f"{line}, {eta.duration_text(left - elapsed)} left"
    return f"{line}, longer than the {eta.duration_text(left).removeprefix('about ')} left told: told again as it ends"
