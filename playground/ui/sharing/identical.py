"""Identical runs computed once. Every run here is deterministic (greedy, or sampling from its
seed), so a run whose prompt, models and settings match one finished moments ago would write the
same tokens: it is replayed from that run's record on the record's own clock (replay_stream.py) and
labelled as a replay of the run at that time. One that matches a run still being computed follows
it: each round is shown as it is computed (replay_stream.py's `followed`), so a class pressing
Generate on the defaults computes one run, not thirty, and every page streams it at once.

A run whose method learns from run to run (csd's correction memory) is computed every time. The
records kept are few (`KEPT`) and recent (the limits' replay_seconds; 0 turns replays off).
"""

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from ...methods import METHODS

KEPT = 8  # finished runs kept for replays, the most recent ones


@dataclass(frozen=True)
class Record:
    run: object  # the finished Run
    at: float  # when it finished (time.time(), for the label)
    kept: float = field(default_factory=time.monotonic)


@dataclass(eq=False)
class Claim:
    """A run being computed that identical runs follow: its steps so far and its live Run (`add`),
    its place in line (`job`, waiting_line.py), and once it has ended (`end`) the finished Run, if it
    finished (`run`)."""

    signature: tuple
    job: object = None
    steps: list = field(default_factory=list)
    live: object = None  # the computing run's Run as it grows
    run: object = None
    _ended: bool = False
    _changed: threading.Condition = field(default_factory=threading.Condition)

    def add(self, step, live) -> None:
        with self._changed:
            self.steps.append(step)
            self.live = live
            self._changed.notify_all()

    def end(self) -> None:
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def steps_when(self, more_than: int, timeout: float) -> tuple[list, bool]:
        """(every step so far, whether the run has ended), once there are more than `more_than`
        steps or it has ended (or after `timeout` seconds)."""
        with self._changed:
            self._changed.wait_for(lambda: len(self.steps) > more_than or self._ended, timeout)
            return list(self.steps), self._ended


def signature(prompt: str, method: str, models: dict, options: dict) -> tuple | None:
    """What makes two runs write the same tokens: prompt, method, models and every option (the
    seed among them); None for a method whose runs differ (csd learns between them)."""
    if METHODS[method].uses_memory:
        return None
    specs = tuple(sorted((role, getattr(model, "spec", model)) for role, model in models.items()))
    return prompt, method, specs, tuple(sorted((name, repr(value)) for name, value in options.items()))


class Identical:
    """The recent finished runs by signature, and the runs being computed."""

    def __init__(self, seconds: float, kept: int = KEPT):
        self.seconds, self.kept = seconds, kept
        self._records: OrderedDict[tuple, Record] = OrderedDict()
        self._computing: dict[tuple, Claim] = {}
        self._lock = threading.Lock()

    def claim(self, key: tuple | None) -> Record | Claim | None:
        """For a run of signature `key`: the Record to replay; or a Claim of a run being computed
        (follow it once it has steps; if it ends first, claim again); or None, and the caller computes the run, having
        claimed it: it calls `publish` when it finishes and `release` in any case."""
        if key is None or not self.seconds:
            return None
        with self._lock:
            self._forget_old()
            if key in self._records:
                return self._records[key]
            if key in self._computing:
                return self._computing[key]
            self._computing[key] = Claim(key)
            return None

    def computing(self, key: tuple | None) -> Claim | None:
        """The claim of the caller's own run being computed."""
        with self._lock:
            return self._computing.get(key)

    def publish(self, key: tuple, run) -> None:
        """The run of signature `key` finished: identical runs replay it from now on."""
        if key is None or not self.seconds:
            return
        with self._lock:
            if key in self._computing:
                self._computing[key].run = run
            self._records[key] = Record(run, time.time())
            self._records.move_to_end(key)
            while len(self._records) > self.kept:
                self._records.popitem(last=False)

    def release(self, key: tuple | None) -> None:
        """The computing run ended, finished or not: the runs waiting for it go on."""
        with self._lock:
            claim = self._computing.pop(key, None)
        if claim is not None:
            claim.end()

    def _forget_old(self) -> None:
        cutoff = time.monotonic() - self.seconds
        for key in [key for key, record in self._records.items() if record.kept < cutoff]:
            del self._records[key]
