"""Which of a session's runs and control changes are stale, so that only the latest one acts.

A Stop, and every trigger of a new run (Generate, Enter, a settled control change), makes the
running generation stale: it ends at its next step with its own final view. A trigger queues
the next run; a Stop that comes before that run starts makes it stale too, so it never starts.
The last stop's reason says why, in the stale run's status.
Each control change makes the earlier ones stale: of a burst of changes (typing "0.35", dragging
a slider) only the last one re-runs, once they settle.
"""

import threading

STOP_PRESSED = "Stop was pressed"
REPLACED = "a newer run replaced it"
FAMILY_CHANGED = "Load changed the models"  # the Load's own status says what it loaded
KEPT_REASONS = 64  # stops whose reasons are remembered (a run is stale after one of them)


class StaleRunGuard:
    """The counters of one session; handlers on many threads read and bump them at once."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stops = 0  # a run that started at another count than this one is stale
        self._queued: int | None = None  # the count a triggered, not yet started run starts at
        self._changes = 0
        self._running: list[int] = []  # the tickets of the runs started and not ended
        self.reason = STOP_PRESSED  # why the last stop came
        # Why each recent stop came, by the count it made: a run stopped by a Load still said "a newer
        # run replaced it" where a Generate came before its next step (a busy machine's steps take seconds).
        self._reasons: dict[int, str] = {}

    @property
    def stops(self) -> int:
        return self._stops

    def stop(self, reason: str = STOP_PRESSED) -> None:
        """Make the running (or queued) run stale."""
        with self._lock:
            self._stop(reason)

    def _stop(self, reason: str) -> None:
        self._stops += 1
        self.reason = self._reasons[self._stops] = reason
        self._reasons.pop(self._stops - KEPT_REASONS, None)

    def trigger(self) -> None:
        """Stop the running run and queue the next. The next run reads the controls as they are
        now, so pending control changes are stale too."""
        with self._lock:
            self._stop(REPLACED)
            self._queued = self._stops
            self._changes += 1

    def start(self) -> int:
        """The ticket of a starting run: the count its trigger queued it at, else the current one
        (a direct API call). A Stop since the trigger makes the ticket stale from the start. The
        run counts as going until `end(ticket)`."""
        with self._lock:
            ticket = self._stops if self._queued is None else self._queued
            self._queued = None
            self._running.append(ticket)
            return ticket

    def end(self, ticket: int) -> None:
        with self._lock:
            self._running.remove(ticket)

    @property
    def queued(self) -> bool:
        """A triggered run has not started yet."""
        return self._queued is not None

    @property
    def going(self) -> bool:
        """A run is queued, or started and not stale: from its start, not its first tokens (a Load
        as a run's first round computed stopped it, and said nothing of it)."""
        with self._lock:
            return self._queued is not None or self._stops in self._running

    def stale(self, ticket: int) -> bool:
        return ticket != self._stops

    def reason_of(self, ticket: int) -> str:
        """Why the run of `ticket` went stale: the first stop after it started."""
        return self._reasons.get(ticket + 1, self.reason)

    def change(self) -> int:
        """Count a control change; returns its number."""
        with self._lock:
            self._changes += 1
            return self._changes

    def superseded(self, change: int) -> bool:
        """A later control change (or a trigger) came after this one."""
        return change != self._changes
