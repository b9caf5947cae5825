"""Per-session state that must not go through gr.State: the last run, a live step generator.

Keyed by Gradio's session hash; dropped when the browser tab goes away (`demo.unload`).
Models are not kept here: sessions hold model specs and ask the process-wide cache.
"""

import threading
import time
from dataclasses import dataclass, field

from .charts import Timeline
from .family import Preset
from .stepper import Toy

DRAW_WAIT = 3.0  # seconds to wait for the page to draw live charts before sending more


@dataclass
class Stepping:
    """A step-mode run in progress: the engine's generator and what explaining a step needs."""

    steps: object  # the generator from engine.stream
    models: dict
    tokenizer: object
    decode: object
    prompt_ids: list[int] = field(default_factory=list)  # filled after the first step
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
    generation: int = 0  # bumped to stop the running generation at its next step
    queued: int | None = None  # the generation a triggered, not yet started run belongs to
    changes: int = 0  # control changes so far: a re-run waits until no later one arrives
    charts_shown: bool = True  # the charts panel is open
    charts_sent: float = 0.0  # time.monotonic() when live charts were last sent...
    charts_drawn: float = 0.0  # ...and when the page last said it had drawn them

    def charts_wanted(self) -> bool:
        """Live charts are worth sending: their panel is open and the page has drawn the last
        ones, or has not said so for DRAW_WAIT seconds (no page, or one in the background)."""
        waited = time.monotonic() - self.charts_sent
        return self.charts_shown and (self.charts_drawn >= self.charts_sent or waited > DRAW_WAIT)

    def claim(self) -> int:
        """The generation a starting run belongs to: the one its trigger queued, else the
        current one (a direct API call). A stop since the trigger makes the two differ."""
        mine = self.generation if self.queued is None else self.queued
        self.queued = None
        return mine


class Sessions:
    def __init__(self):
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Session:
        with self._lock:
            return self._sessions.setdefault(key, Session())

    def drop(self, key: str) -> None:
        with self._lock:
            session = self._sessions.pop(key, None)
        if session and session.stepping:
            session.stepping.steps.close()
