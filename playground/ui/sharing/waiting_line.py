"""The line of runs waiting for the model: each one's place in it, and an honest wait.

At most `sharing` jobs (a Generate run, a Compare, a Race) take turns on the model at once
(turns.py): few enough that a stream's pauses stay short (between two of its rounds, one round of
each other job), while a Compare's long work goes on beside them. The rest wait here in the order
they came, each told its place and how long until it starts ("waiting: 3rd in line, about 8 s"),
computed from what the jobs ahead still need: the tokens each should write times this machine's
measured seconds per token (eta.py), or, once a job has written some, its own pace; the running
jobs' pace against their estimates scales the others' (a machine busier now than when the rates
were measured). Gradio's queue guessed from past events' durations (169 s told for a 109 s wait,
56 s for 471 s).

The forecast shares the model equally between the jobs taking turns, as the ring does, starts the
next in line whenever one ends, and counts the model's seconds on the clock at the share of it the
model was held lately while jobs ran.
"""

import threading
import time
from dataclasses import dataclass

from ...errors import PlaygroundError

PACE_AFTER_TOKENS = 8  # tokens after its first step before a job's own pace is told from them
MAX_PACE = 4.0  # the running jobs' pace scales the estimates of the rest by at most this (or its inverse)
DUTY_WINDOW, DUTY_AFTER, MIN_DUTY = 60.0, 3.0, 0.1  # seconds of running looked at, and needed; the least share


@dataclass(eq=False)
class Job:
    """A run, or a Compare's or Race's runs, as the line sees it."""

    visitor: str
    asked: list  # (seconds per token or None when unknown, tokens it should write) of each of its runs
    most: int = 0  # the tokens it may write at most, when more than `asked` says (0: as many)
    used: float = 0.0  # model seconds its turns took so far
    tokens: int = 0  # tokens its runs wrote so far
    # Its first turn and first step's tokens: the prefill (and a model's one-time setup), not its pace
    first: tuple | None = None
    spread: tuple = (1.0, 1.0)  # how much shorter and longer than `asked` says runs like it end (eta.py)
    page: str | None = None  # the session whose Compare or Race it is (None: a Generate run)

    def charge(self, seconds: float) -> None:
        self.used += seconds

    def wrote(self, tokens: int) -> None:
        if self.first is None:
            self.first = (self.used, tokens)
        self.tokens += tokens

    def _pace(self) -> float | None:
        """Model seconds per token after its first step, once it has written PACE_AFTER_TOKENS."""
        if self.first is None or self.tokens - self.first[1] < PACE_AFTER_TOKENS:
            return None
        return (self.used - self.first[0]) / (self.tokens - self.first[1])

    def estimate(self) -> float | None:
        """Model seconds the whole job should take, from the measured rates (None: one unknown)."""
        if any(rate is None for rate, _ in self.asked):
            return None
        return sum(rate * tokens for rate, tokens in self.asked)

    def remaining(self, pace: float = 1.0) -> float | None:
        """Model seconds it still needs: its tokens left at its own pace once it has written a few,
        else its estimate (times `pace`, the machine's pace now over the estimates') less what it
        used (None: nothing to tell it from)."""
        left = sum(tokens for _, tokens in self.asked) - self.tokens
        if left <= 0:  # it wrote more than the same run did lately: it may write up to its most
            left = max(0, self.most - self.tokens)
        estimate, own = self.estimate(), self._pace()
        if own is not None and (len(self.asked) == 1 or estimate is None or self.used > estimate):
            return left * own
        return None if estimate is None else max(0.0, estimate * pace - self.used)

    def pace(self) -> float | None:
        """Its own pace over the one it was estimated at, once it has written a few tokens: how much
        slower (or faster) the machine runs now than when the rates were measured."""
        estimate, asked, own = self.estimate(), sum(tokens for _, tokens in self.asked), self._pace()
        return own / (estimate / asked) if estimate and own is not None else None


@dataclass(frozen=True)
class Place:
    """Where a waiting job stands: its place (1: next), the seconds until it starts (None: unknown),
    and the range around them (the spread of recent runs' lengths)."""

    position: int
    seconds: float | None
    spread: tuple = (1.0, 1.0)

    def wait_text(self) -> str:
        """'about 8 s', or 'about 6-12 s' where recent runs' lengths spread; tenths under 10 s
        ('about 2.5-3.5 s'), where a whole second is a large part of the wait."""
        low, high = (self.seconds * factor for factor in self.spread)
        digits = 1 if high < 10 else 0
        low, high = (max(0.1 if digits else 1, round(value, digits)) for value in (low, high))
        shown = [f"{value:.{digits}f}" for value in (low, high)]
        return f"about {shown[0]} s" if shown[0] == shown[1] else f"about {shown[0]}-{shown[1]} s"


class Line:
    """`busy_seconds(since)`: how long the model was held in turns since then (turns.py), which
    turns the forecast's model seconds into seconds on the clock (None: they are the same)."""

    def __init__(self, sharing: int, size: int, busy_seconds=None):
        self.sharing, self.size, self.busy_seconds = max(1, sharing), size, busy_seconds
        self._changed = threading.Condition()
        self._active: list[Job] = []
        self._waiting: list[Job] = []
        self._running_since: float | None = None  # since when jobs have been running without a break

    def join(self, job: Job) -> None:
        """Queue `job` (it starts at once if fewer than `sharing` jobs take turns); refuses it in
        one line when `size` jobs already wait."""
        with self._changed:
            if self.size and len(self._waiting) >= self.size:
                raise PlaygroundError(f"{len(self._waiting)} runs are waiting for the model, as many as this "
                                      "deployment queues: try again in a minute")
            self._waiting.append(job)
            self._admit()

    def wait(self, job: Job, timeout: float) -> bool:
        """Wait up to `timeout` seconds for `job`'s start; whether it has started."""
        with self._changed:
            self._changed.wait_for(lambda: job in self._active, timeout)
            return job in self._active

    def leave(self, job: Job) -> None:
        """`job` ended (or gave up waiting): the next in line starts."""
        with self._changed:
            for jobs in (self._active, self._waiting):
                if job in jobs:
                    jobs.remove(job)
            self._admit()

    def place(self, job: Job) -> Place | None:
        """Where `job` waits, or None once it has started (or left)."""
        with self._changed:
            if job not in self._waiting:
                return None
            return Place(self._waiting.index(job) + 1, self._forecast().get(job), job.spread)

    def has_page_job(self, page: str) -> bool:
        """Whether a Compare or Race of the session `page` waits or takes turns now."""
        with self._changed:
            return any(job.page == page for job in self._active + self._waiting)

    def running(self) -> int:
        """Jobs taking turns on the model now."""
        with self._changed:
            return len(self._active)

    def duty(self) -> float:
        """The share of the clock the model was held lately while jobs ran (1 before it is known)."""
        with self._changed:
            return self._duty()

    def unstarted(self) -> int:
        """Jobs taking turns that have not had their first step yet (its turn holds the prompt's pass)."""
        with self._changed:
            return sum(job.first is None for job in self._active)

    def full(self) -> bool:
        """Every place taking turns is taken: a new job waits."""
        with self._changed:
            return len(self._active) >= self.sharing

    def __len__(self) -> int:
        with self._changed:
            return len(self._active) + len(self._waiting)

    def _admit(self) -> None:
        while self._waiting and len(self._active) < self.sharing:
            self._active.append(self._waiting.pop(0))
        if not self._active:
            self._running_since = None
        elif self._running_since is None:
            self._running_since = time.monotonic()
        self._changed.notify_all()

    def _duty(self) -> float:
        """The share of the clock the model was held while jobs ran (over the last DUTY_WINDOW s of
        running), once DUTY_AFTER s of it are known; 1 before. Between a job's rounds the model
        waits for its page's update, and with other threads' work besides (a class's streams, the
        server's own) it was idle for much of the time the jobs ran."""
        if self.busy_seconds is None or self._running_since is None:
            return 1.0
        since = max(self._running_since, time.monotonic() - DUTY_WINDOW)
        span = time.monotonic() - since
        if span < DUTY_AFTER:
            return 1.0
        return min(1.0, max(MIN_DUTY, self.busy_seconds(since) / span))

    def _forecast(self) -> dict:
        """{job: seconds until it starts}, as far as the jobs' remaining work is known: the model
        shared equally between the running jobs, the next in line starting as one ends."""
        paces = sorted(pace for job in self._active if (pace := job.pace()) is not None)
        pace = min(MAX_PACE, max(1 / MAX_PACE, paces[len(paces) // 2])) if paces else 1.0
        running, duty = {job: job.remaining(pace) for job in self._active}, self._duty()
        starts, now = dict.fromkeys(self._active, 0.0), 0.0
        waiting = list(self._waiting)
        while running or waiting:
            while waiting and len(running) < self.sharing:
                job = waiting.pop(0)
                starts[job], running[job] = now, job.remaining(pace)
            if not running or any(left is None for left in running.values()):
                break  # past an unknown job, nothing later is known
            shortest = min(running.values())
            now += shortest * len(running) / duty
            for job, left in list(running.items()):
                running[job] = left - shortest
                if running[job] <= 1e-9:
                    del running[job]
        return starts


def ordinal(place: int) -> str:
    suffix = "th" if 10 <= place % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(place % 10, "th")
    return f"{place}{suffix}"


def place_text(place: Place) -> str:
    """'waiting for the model: 3rd in line, about 8 s'."""
    wait = place.wait_text() if place.seconds is not None else "the wait is known once a run has been measured here"
    return f"waiting for the model: {ordinal(place.position)} in line, {wait}"


POLL_SECONDS = 1.0  # how often a waiting job's place and wait are told again


def queued(line: Line, job: Job, given_up=lambda: False):
    """Join `line` and yield a status line (place_text) at once and about every POLL_SECONDS while
    `job` waits; returns when it starts, or, leaving the line, once `given_up()` (a Stop). The
    caller leaves the line when the job ends (or this generator is closed)."""
    line.join(job)
    while (place := line.place(job)) is not None:
        if given_up():
            line.leave(job)
            return
        yield place_text(place)
        line.wait(job, POLL_SECONDS)
