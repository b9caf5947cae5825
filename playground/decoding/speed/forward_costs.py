"""Seconds per forward pass of each loaded model, by the number of new tokens it was fed,
recorded as runs go: what the waits told in the line expect of the next run (ui/sharing/eta.py). A run's
own speed figures come from its speed account (speed_account.py), not from here.
"""

import statistics
import time
import weakref
from collections import deque

# A pass's cost depends on what else the machine is doing (on a desktop, the browser showing the
# run): a run's costs are compared with passes from the last FRESH_SECONDS only, as a CLI run's
# are with the passes of its own process.
FRESH_SECONDS = 30.0

_seconds: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> {new tokens: deque}


def record(model, new_tokens: int, seconds: float, cpu: float | None = None) -> None:
    """A pass's wall seconds, and its thread's CPU seconds where known (whether it had its core)."""
    passes = _seconds.setdefault(model, {}).setdefault(new_tokens, deque(maxlen=64))
    passes.append((time.monotonic(), seconds, seconds if cpu is None else cpu))


def clear() -> None:
    _seconds.clear()


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
