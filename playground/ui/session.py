"""Per-session state that must not go through gr.State: the last run, a live step generator.

Keyed by Gradio's session hash; dropped when the browser tab goes away (`demo.unload`).
Models are not kept here: sessions hold model specs and ask the process-wide cache.
"""

import threading
from dataclasses import dataclass, field

from .charts import Timeline
from .family import Preset
from .stepper import Toy


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
    generation: int = 0  # bumped to stop the running generation at its next step
    queued: int | None = None  # the generation a triggered, not yet started run belongs to

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
