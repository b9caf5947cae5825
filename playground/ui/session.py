"""Per-session state that must not go through gr.State: the last run, a live step generator,
which runs are stale, on a public deployment the visitor's own CSD correction memory, recent
run times, and its download files.

Keyed by Gradio's session hash; dropped when the browser tab goes away (`demo.unload`), or after
SESSION_IDLE_SECONDS without a call (API clients have no tab to close). Models are not kept
here: sessions hold model specs and ask the process-wide cache.
"""

import ctypes
import ctypes.util
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from ..errors import PlaygroundError
from ..presets import Preset
from .charts import Timeline
from .downloads import Downloads
from .replay import History
from .stale_runs import StaleRunGuard
from .stepper import Toy

SESSION_IDLE_SECONDS = 30 * 60
RATE_WINDOW_SECONDS = 60


@dataclass
class Stepping:
    """A step-mode run in progress: the engine's generator, and the last round explained."""

    steps: object  # the generator from engine.stream
    decode: object
    run: object = None
    explanation: object = None


@dataclass
class Session:
    preset: Preset | None = None
    specs: dict = field(default_factory=dict)  # role -> model spec, once a family is loaded
    run: object = None  # the last finished or stopped Run
    timeline: Timeline = field(default_factory=Timeline)
    decode: object = None  # token id -> text, for the last run's tokenizer
    show_rejected: bool = False  # the toggle; a running generation reads it at each refresh
    stepping: Stepping | None = None
    toy: Toy = field(default_factory=Toy)
    stale_runs: StaleRunGuard = field(default_factory=StaleRunGuard)
    memories: dict = field(default_factory=dict)  # (target, draft) -> CorrectionMemory, public mode
    race: History = field(default_factory=History)  # finished runs a race can replay
    link: object = None  # the share.Setting this page was opened with, if any
    downloads: Downloads = field(default_factory=Downloads)  # its export files, removed with it
    started: deque = field(default_factory=deque)  # monotonic start times of recent runs
    last_seen: float = field(default_factory=time.monotonic)
    generate_shown: bool = True  # the Generate tab is the one showing
    final_charts_due: bool = False  # a run has ended and the page has not had its complete charts

    def admit(self, runs: int, per_minute: int) -> None:
        """Count `runs` new generations against the limit of `per_minute` (0: none), or refuse."""
        now = time.monotonic()
        while self.started and now - self.started[0] > RATE_WINDOW_SECONDS:
            self.started.popleft()
        if per_minute and len(self.started) + runs > per_minute:
            wait = RATE_WINDOW_SECONDS - (now - self.started[0]) if self.started else RATE_WINDOW_SECONDS
            raise PlaygroundError(f"this deployment allows {per_minute} runs per minute per visitor (a compare "
                                  f"counts each column): try again in {max(1, round(wait))} s")
        self.started.extend([now] * runs)


def _return_free_memory() -> None:
    """glibc keeps the pages that runs freed in its arenas (one per worker thread) instead of
    giving them back to the system; malloc_trim gives them back. Elsewhere there is no such call."""
    if _LIBC is not None and hasattr(_LIBC, "malloc_trim"):
        _LIBC.malloc_trim(0)


_LIBC = ctypes.CDLL(ctypes.util.find_library("c")) if ctypes.util.find_library("c") else None


class Sessions:
    def __init__(self, idle_seconds: float = SESSION_IDLE_SECONDS):
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self.idle_seconds = idle_seconds

    def get(self, key: str) -> Session:
        self._drop_idle()
        with self._lock:
            session = self._sessions.setdefault(key, Session())
            session.last_seen = time.monotonic()
            return session

    def drop(self, key: str) -> None:
        with self._lock:
            session = self._sessions.pop(key, None)
        if session and session.stepping:
            session.stepping.steps.close()
        if session:
            session.downloads.remove()
            _return_free_memory()

    def __len__(self) -> int:
        return len(self._sessions)

    def _drop_idle(self) -> None:
        now = time.monotonic()
        with self._lock:
            idle = [key for key, s in self._sessions.items() if now - s.last_seen > self.idle_seconds]
        for key in idle:
            self.drop(key)
