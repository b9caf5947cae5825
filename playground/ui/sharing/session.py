"""Per-session state that must not go through gr.State: the last run, a live step generator,
which runs are stale, on a public deployment the visitor's own CSD correction memory, and its
download files.

Keyed by Gradio's session hash; dropped when the browser tab goes away (`demo.unload`), or after
the limits' session_idle_seconds without a call or heartbeat (API clients have no tab to close),
whether or not another request comes.
Models are not kept here: sessions hold model specs and ask the process-wide cache. The counts of
runs and uploads per minute are the visitor's (visitors.py), not the session's: dropping a
session leaves them as they were.
"""

import ctypes
import ctypes.util
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field

from ...deploy.limits import current_limits
from ...models.presets import Preset
from ..views.charts import Timeline
from ..views.explain_round import Toy
from ..views.paired_speedups import SettingSpeedups
from ..views.race_replay import History
from .downloads import Downloads
from .stale_runs import StaleRunGuard
from .visitors import RateTable, SessionKey, visitor_of

RUNS_PER_VISITOR = "runs per minute per visitor (a compare counts each column)"
UPLOADS_PER_VISITOR = "correction memory uploads per minute per visitor"
EXPORTS_PER_VISITOR = "downloads (run JSON, charts, correction memory) per minute per visitor"


@dataclass
class Stepping:
    """A step-mode run in progress: the engine's generator, the settings it started with (prompt,
    method, controls), and the last round explained."""

    steps: object  # the generator from engine.stream
    decode: object
    settings: tuple = ()
    run: object = None
    explanation: object = None
    shown: str = ""  # the last round's explanation as the page was sent it


@dataclass
class Session:
    preset: Preset | None = None
    specs: dict = field(default_factory=dict)  # role -> model spec, once a family is loaded
    specs_edited: bool = False  # the page's model boxes changed since the last load: runs wait for Load
    loaded_status: str = ""  # the status of the last Load that changed the family, as it showed it
    run: object = None  # the last finished or stopped Run
    last_ar: object = None  # the last finished `ar` Run: a later run of the same tokens is timed against it
    speedups: SettingSpeedups = field(default_factory=SettingSpeedups)  # its runs' settled speedups, by setting
    settings_on_screen: tuple | None = None  # (prompt, method, *options) of the run on screen
    timeline: Timeline = field(default_factory=Timeline)
    decode: object = None  # token id -> text, for the last run's tokenizer
    show_rejected: bool = False  # the toggle; a running generation reads it at each refresh
    stepping: Stepping | None = None
    stepping_turns: threading.Lock = field(default_factory=threading.Lock, repr=False)  # a Step at a time
    toy: Toy = field(default_factory=Toy)
    stale_runs: StaleRunGuard = field(default_factory=StaleRunGuard)
    memories: dict = field(default_factory=dict)  # (target, draft) -> CorrectionMemory, public mode
    race: History = field(default_factory=History)  # finished runs a race can replay
    link: object = None  # the share.Setting this page was opened with, if any
    downloads: Downloads = field(default_factory=Downloads)  # its export files, removed with it
    visitor: str = ""  # the address its requests come from (visitors.py)
    run_times: RateTable = field(default_factory=RateTable, repr=False)  # every visitor's, shared by sessions
    upload_times: RateTable = field(default_factory=RateTable, repr=False)
    export_times: RateTable = field(default_factory=RateTable, repr=False)
    last_seen: float = field(default_factory=time.monotonic)
    generate_shown: bool = True  # the Generate tab is the one showing
    final_charts_due: bool = False  # a run has ended and the page has not had its complete charts
    replaced: tuple | None = None  # (ticket, tokens) of the last run a newer one replaced: said by the newer
    load_note: str = ""  # what the last Load of another family said of the run it stopped or whose answer it took
    compare_shown: tuple | None = None  # (the family's specs, the last Compare's results): kept under a refusal

    def admit(self, runs: int, per_minute: int) -> None:
        """Count `runs` new generations of this session's visitor against `per_minute` (0: none), or refuse."""
        self.run_times.admit(self.visitor, runs, per_minute, RUNS_PER_VISITOR)

    def admit_upload(self, per_minute: int) -> None:
        self.upload_times.admit(self.visitor, 1, per_minute, UPLOADS_PER_VISITOR)

    def admit_export(self, per_minute: int) -> None:
        self.export_times.admit(self.visitor, 1, per_minute, EXPORTS_PER_VISITOR)

    def forget_family(self, reason: str) -> None:
        """A Load of another family: its runs stop (`reason`), a later run is not timed against the
        last `ar` run or counted with the settled runs of the old models (one cell forgot them, one
        did not), step mode's next Step starts anew on the new ones, and a refused Compare keeps no
        results the Load took off its tab (back on the family, a refusal brought a sweep of 13 minutes before)."""
        self.last_ar, self.compare_shown = None, None
        self.speedups = SettingSpeedups()
        self.stale_runs.stop(reason)  # its late "done" overwrote the Load's status
        if self.stepping:
            self.stepping.steps.close()
        self.stepping = None

    @property
    def started(self) -> deque:
        """Start times of the visitor's runs in the last minute."""
        return self.run_times.recent(self.visitor)


def _return_free_memory() -> None:
    """glibc keeps the pages that runs freed in its arenas (one per worker thread) instead of
    giving them back to the system; malloc_trim gives them back. Elsewhere there is no such call."""
    if _LIBC is not None and hasattr(_LIBC, "malloc_trim"):
        _LIBC.malloc_trim(0)


_LIBC = ctypes.CDLL(ctypes.util.find_library("c")) if ctypes.util.find_library("c") else None
SWEEP_SECONDS = 30  # at most, between two sweeps for idle sessions while no request comes


class Sessions:
    """The app's sessions, and the visitors' run and upload counts that outlive them."""

    def __init__(self, idle_seconds: float | None = None):
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._idle_seconds = idle_seconds  # None: the limits' (read at each call)
        self.run_times, self.upload_times, self.export_times = RateTable(), RateTable(), RateTable()
        self._sweeper = None  # the timer of the next sweep, while any session is open

    @property
    def idle_seconds(self) -> float:
        return current_limits().session_idle_seconds if self._idle_seconds is None else self._idle_seconds

    def get(self, key: str) -> Session:
        self._drop_idle()
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                session = self._sessions[key] = Session(visitor=visitor_of(key), run_times=self.run_times,
                                                        upload_times=self.upload_times, export_times=self.export_times)
            if isinstance(key, SessionKey) and key.visitor:  # a request's own address wins over an earlier one
                session.visitor = key.visitor
            session.last_seen = time.monotonic()
        self._sweep_later()
        return session

    def touch(self, key: str) -> None:
        """The page's heartbeat: its session is still wanted."""
        self.get(key)

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

    def _sweep_later(self) -> None:
        """Drop idle sessions even when no request comes: a timer, while any session is open."""
        with self._lock:
            if self._sweeper is not None or not self._sessions:
                return
            self._sweeper = threading.Timer(max(1.0, min(SWEEP_SECONDS, self.idle_seconds / 2)), Sessions._sweep,
                                            (weakref.ref(self),))
            self._sweeper.daemon = True
            self._sweeper.start()

    @staticmethod
    def _sweep(sessions_ref: weakref.ref) -> None:
        """The timer's sweep. It holds the Sessions weakly: the timers of an app that is gone stop."""
        sessions = sessions_ref()
        if sessions is not None:
            sessions._sweeper = None
            sessions._drop_idle()
            sessions._sweep_later()

    def _drop_idle(self) -> None:
        now, idle_seconds = time.monotonic(), self.idle_seconds
        with self._lock:
            idle = [key for key, s in self._sessions.items() if now - s.last_seen > idle_seconds]
        for key in idle:
            self.drop(key)
