"""Whose turn it is on the model: visitors take it in turn, one call on the model thread (one
verification round of a run) at a time.

A Compare or Race is dozens of runs of dozens of rounds each. Given the model in arrival order, a
Compare held it for a whole run at a time, and another visitor's stream advanced one step per run
(gaps of 32-62 s). Here every call waits for its visitor's turn: the visitors with a call waiting
are served in a ring, one call each, so between two rounds of one visitor each other visitor runs
at most one. A visitor's own calls (two runs at once) go in the order they came. Each turn's
seconds are counted to its visitor (`used`: model seconds in the last minute) and to the caller's
`charge`, if it has one (the job in waiting_line.py).

A turn also counts the model thread's CPU seconds (`Held.cpu`, set by its caller): the work a
turn holds, apart from how long the core was shared. Waits are told from the work and the recent
share of the clock the model thread had its core (`pace`): a class's 30 clients, their pages'
updates and anything else on the machine slowed the first steps of a burst to about twice the
quiet run's, and waits told from the quiet run's clock came out half the real ones.
"""

import threading
import time
from collections import deque
from contextlib import contextmanager

WINDOW_SECONDS = 60
BUSY_WINDOW = 60.0  # how far back busy_seconds can look
TURNS_KNOWN = 8  # turns before their lengths are told
PACE_WINDOW = 5.0  # seconds of recent turns whose CPU share tells how fast work goes now
PACE_TURNS = 3  # turns within it before their share is told (1: as fast as on a quiet machine)


class Held:
    """A turn being taken: its caller sets `cpu`, the model thread's CPU seconds in it."""

    cpu: float = 0.0


class Usage:
    """Model seconds each visitor's turns took within the last WINDOW_SECONDS."""

    def __init__(self):
        self._turns: dict[str, deque] = {}  # visitor -> (end time, seconds), oldest first
        self._lock = threading.Lock()

    def add(self, visitor: str, seconds: float) -> None:
        with self._lock:
            self._turns.setdefault(visitor, deque()).append((time.monotonic(), seconds))

    def seconds(self, visitor: str) -> float:
        with self._lock:
            return sum(seconds for _, seconds in self._recent(visitor))

    def free_in(self, visitor: str, allowed: float) -> float:
        """Seconds until the visitor's model seconds in the window fall under `allowed` (0: now)."""
        with self._lock:
            turns, now = list(self._recent(visitor)), time.monotonic()
        total = sum(seconds for _, seconds in turns)
        for ended, seconds in turns:  # each turn leaves the window WINDOW_SECONDS after it ended
            if total < allowed:
                break
            total -= seconds
            if total < allowed:
                return max(0.0, ended + WINDOW_SECONDS - now)
        return 0.0

    def _recent(self, visitor: str) -> deque:
        cutoff = time.monotonic() - WINDOW_SECONDS
        for name in list(self._turns):
            turns = self._turns[name]
            while turns and turns[0][0] < cutoff:
                turns.popleft()
            if not turns:
                del self._turns[name]
        return self._turns.get(visitor, deque())


class Turns:
    """The ring of visitors waiting for the model, and who holds it."""

    def __init__(self):
        self._changed = threading.Condition()
        self._ring: deque[str] = deque()  # visitors with a call waiting, the next one first
        self._calls: dict[str, deque] = {}  # visitor -> its waiting calls, oldest first
        self._busy = False
        self._turns: deque[tuple[float, float, float]] = deque()  # (start, end, CPU) of the last BUSY_WINDOW s
        self._started: float | None = None  # the turn being taken's start
        self._doing = ""  # what the turn being taken does, where it is no visitor's run
        self.used = Usage()

    @contextmanager
    def turn(self, visitor: str, charge=None, doing: str = ""):
        """Hold the model for one call of `visitor`'s, once its turn comes; `charge(seconds)` is
        told how long the turn took; `doing` says what it does where it is no run's round."""
        call = object()
        with self._changed:
            calls = self._calls.setdefault(visitor, deque())
            if not calls:
                self._ring.append(visitor)
            calls.append(call)
            try:
                while self._busy or self._ring[0] != visitor or calls[0] is not call:
                    self._changed.wait()
            except BaseException:  # interrupted while waiting: the others must not wait for this call
                self._forget(visitor, call)
                raise
            calls.popleft()
            self._ring.popleft()
            if calls:  # its next call waits behind every other visitor's
                self._ring.append(visitor)
            else:
                del self._calls[visitor]
            self._busy, self._started, self._doing = True, time.monotonic(), doing
        started, held = time.perf_counter(), Held()
        try:
            yield held
        finally:
            seconds = time.perf_counter() - started
            with self._changed:
                self._busy = False
                self._turns.append((self._started, time.monotonic(), held.cpu))
                while self._turns and self._turns[0][1] < time.monotonic() - BUSY_WINDOW:
                    self._turns.popleft()
                self._changed.notify_all()
            self.used.add(visitor, seconds)
            if charge is not None:
                charge(seconds)

    def busy_seconds(self, since: float) -> float:
        """Seconds the model was held in turns since `since` (time.monotonic(), within BUSY_WINDOW)."""
        now = time.monotonic()
        with self._changed:
            periods = [*self._turns, *([(self._started, now)] if self._busy else [])]
        return sum(max(0.0, end - max(start, since)) for start, end, *_ in periods)

    def turn_seconds(self) -> tuple[float, float] | None:
        """The quartiles (p25, p75) of the last BUSY_WINDOW s of turns' work, in the model thread's
        CPU seconds: a round's, mostly (None before TURNS_KNOWN turns)."""
        with self._changed:
            lengths = sorted(cpu for *_, cpu in self._turns)
        if len(lengths) < TURNS_KNOWN:
            return None
        return lengths[len(lengths) // 4], lengths[3 * len(lengths) // 4]

    def pace(self) -> float:
        """The model thread's CPU seconds over the wall seconds of its recent turns: those of the
        last PACE_WINDOW s, or where fewer than PACE_TURNS ended then, the last PACE_TURNS of the
        last BUSY_WINDOW s (a run that has just started beside one other has few turns to show).
        About 1 with a core of its own, lower where others share it; 1 with none known."""
        now = time.monotonic()
        with self._changed:
            turns = [turn for turn in self._turns if turn[1] >= now - BUSY_WINDOW]
        recent = [turn for turn in turns if turn[1] >= now - PACE_WINDOW]
        recent = recent if len(recent) >= PACE_TURNS else turns[-PACE_TURNS:]
        wall, cpu = sum(end - start for start, end, _ in recent), sum(c for *_, c in recent)
        if len(recent) < PACE_TURNS or wall <= 0 or cpu <= 0:
            return 1.0
        return min(1.0, cpu / wall)

    def _forget(self, visitor: str, call: object) -> None:
        calls = self._calls[visitor]
        calls.remove(call)
        if not calls:
            del self._calls[visitor]
            self._ring.remove(visitor)
        self._changed.notify_all()

    def busy(self) -> bool:
        """A call holds the model or waits for it."""
        with self._changed:
            return self._busy or bool(self._calls)

    def holder(self) -> str:
        """What holds the model now, where that is no run's round ("" otherwise)."""
        with self._changed:
            return self._doing if self._busy else ""

    def waiting(self) -> int:
        """Calls waiting for a turn."""
        with self._changed:
            return sum(len(calls) for calls in self._calls.values())
