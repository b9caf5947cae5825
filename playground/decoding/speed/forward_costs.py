"""Seconds per forward pass of each loaded model, by the number of new tokens it was fed, and
when its `ar` runs began and what they spent per token besides their passes (`record_ar_run`),
recorded as runs go:
what the waits told in the line expect of the next run (ui/sharing/eta.py), and what a run's speed
account reads of the runs before it. A run's own speed figures come from that account
(speed_account.py).
"""

import statistics
import time
import weakref
from collections import deque
from typing import NamedTuple

# A pass's cost depends on what else the machine is doing (on a desktop, the browser showing the
# run): a run's costs are compared with passes from the last FRESH_SECONDS only, as a CLI run's
# are with the passes of its own process.
FRESH_SECONDS = 30.0

_seconds: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> {new tokens: deque}
_ar_runs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> deque of ArRun


class ArRun(NamedTuple):
    began: float  # time.monotonic()
    host: float | None  # seconds a token besides its passes (None: too short, or other work took its core)
    steps: tuple = ()  # (wall, CPU) seconds of each of its one-token passes: its T(1), as its panel shows it


def record(model, new_tokens: int, seconds: float, cpu: float | None = None) -> None:
    """A pass's wall seconds, and its thread's CPU seconds where known (whether it had its core)."""
    passes = _seconds.setdefault(model, {}).setdefault(new_tokens, deque(maxlen=64))
    passes.append((time.monotonic(), seconds, seconds if cpu is None else cpu))


def record_ar_run(model, run: ArRun) -> None:
    """An `ar` run of `model` that ended: when it began, and what it spent per token besides the
    passes (its sampling and its loop)."""
    _ar_runs.setdefault(model, deque(maxlen=16)).append(run)


def last_ar_run(model, within: float) -> ArRun | None:
    """The last `ar` run of `model` that began in the last `within` seconds."""
    since = time.monotonic() - within
    return next((run for run in reversed(_ar_runs.get(model, ())) if run.began >= since), None)


def clear() -> None:
    _seconds.clear()
    _ar_runs.clear()


def recent(model, new_tokens: int, within: float = FRESH_SECONDS) -> list[float]:
    """The seconds of the passes of `model` over `new_tokens` new tokens in the last `within` seconds."""
    return [seconds for seconds, _ in recent_passes(model, new_tokens, within)]


def recent_passes(model, new_tokens: int, within: float = FRESH_SECONDS) -> list[tuple[float, float]]:
    """(wall, CPU) seconds of the same passes."""
    since = time.monotonic() - within
    return [(seconds, cpu) for at, seconds, cpu in _seconds.get(model, {}).get(new_tokens, ()) if at >= since]


def typical(model, new_tokens: int) -> float | None:
    """The median of the recent passes of `model` over `new_tokens` new tokens (None if none)."""
    passes = recent(model, new_tokens)
    return statistics.median(passes) if passes else None
