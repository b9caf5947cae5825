"""csd's correction memory in the app: who owns it and for how long, its view, download and upload.

A memory counts (rejected draft token, correction) pairs for one target/draft pair, and csd
learns across runs by updating it. On a desktop the app keeps one per pair for as long as it
runs, shared by its tabs; on a public deployment each visitor has their own, dropped with their
session; uploads are limited per visitor per minute, and the pairs a session holds, uploaded or
learned in runs, are bounded (a full memory counts only the pairs it has). The memory view says
which owner.
"""

import json
import threading

import gradio as gr

from ...deploy.limits import current_limits
from ...errors import PlaygroundError
from ...methods.correction_memory import CorrectionMemory, load_memory
from ...models.policy import public_mode
from ..views import render
from ..views.error_status import error_status
from .export import offered
from .family_panel import FamilyPanel, spec_of

SHOWN_PAIRS = 20


class CorrectionMemories:
    """The app's correction memories, and the memory panel's handlers."""

    def __init__(self, family: FamilyPanel):
        self.family, self.sessions = family, family.sessions
        self._app_wide: dict[tuple[str, str], CorrectionMemory] = {}
        self._lock = threading.Lock()

    def _owned(self, key: str) -> dict:
        # A desktop's one user expects csd's learning to outlast a reload; visitors must not steer each other's.
        return self.sessions.get(key).memories if public_mode() else self._app_wide

    def for_models(self, key: str, models: dict) -> CorrectionMemory:
        """The memory of the pair in `models`, created empty on first use. A run may add
        pairs to it only up to the room the owner's other memories leave under the limits'
        max_memory_pairs (in public mode the owner is the session)."""
        pair = models["target"].spec, spec_of(models["draft"])  # a prompt-lookup draft is its spec
        memories, limit = self._owned(key), current_limits().max_memory_pairs
        with self._lock:
            memory = memories.setdefault(pair, CorrectionMemory(*pair))
            memory.max_pairs = max(0, limit - _pairs_besides(memories, pair)) if limit else None
            return memory

    def show(self, key: str):
        """The memory of the session's pair: its top pairs, and the JSON file."""
        try:
            models = self.family.models_for(key, "sd")
        except PlaygroundError as error:
            return None, error_status(error)
        memory = self.for_models(key, models)
        if not memory.total:
            return None, render.status_html("no correction memory yet for this pair: generate with a csd method")
        pairs = memory.top_pairs(SHOWN_PAIRS, models["target"].tokenizer)
        try:
            path = offered(self.sessions.get(key), ".memory.json", json.dumps(memory.to_dict()))
        except PlaygroundError as error:
            return None, error_status(error)
        return path, render.memory_html(pairs, memory.total, owner())

    def upload(self, key: str, path: str | None):
        """Start csd from an uploaded memory (from `calibrate` or a download here) for the
        session's pair, in place of the one it had. The file is checked whole, and its view made,
        before it replaces anything: a refused upload leaves the session's memory as it was. Gradio's
        copy of the file stays for its sweep (disk.py): two visitors who send the same file share
        one copy, and a visitor's event may still be on its way to read it."""
        if not path:
            return gr.skip()
        try:
            self.sessions.get(key).admit_upload(current_limits().uploads_per_minute)
            if not isinstance(path, str):
                raise PlaygroundError(f"upload a correction memory file, got {path!r}")
            models = self.family.models_for(key, "sd")
            uploaded = self._read_upload(path, models)
            self._check_room(key, uploaded)
            view = render.memory_html(uploaded.top_pairs(SHOWN_PAIRS, models["target"].tokenizer), uploaded.total,
                                      owner())
        except PlaygroundError as error:
            return error_status(error)
        memories = self._owned(key)
        with self._lock:
            memories[uploaded.pair] = uploaded
        return view

    def _check_room(self, key: str, uploaded: CorrectionMemory) -> None:
        """Refuse an upload that would take the memories this session holds (with it in place of
        its pair's) past the limits' max_memory_pairs: an abandoned session holds them until it goes."""
        limit = current_limits().max_memory_pairs
        others = _pairs_besides(self._owned(key), uploaded.pair)
        if limit and others + len(uploaded.counts) > limit:
            raise PlaygroundError(f"the uploaded memory holds {len(uploaded.counts):,} (draft token, correction) pairs "
                                  f"and your other memories {others:,}: this deployment keeps at most {limit:,} per "
                                  "visitor; upload a smaller memory (its most frequent pairs)")

    @staticmethod
    def _read_upload(path: str, models: dict) -> CorrectionMemory:
        target, draft = models["target"], models["draft"]
        vocabulary = min(len(target.tokenizer), len(draft.tokenizer))
        return load_memory(path, target.spec, draft.spec, current_limits().max_upload_bytes, "(the uploaded file)",
                           vocabulary=vocabulary)


def _pairs_besides(memories: dict, pair: tuple[str, str]) -> int:
    """The (draft token, correction) pairs held by the memories of every model pair but `pair`."""
    return sum(len(memory.counts) for other, memory in memories.items() if other != pair)


def owner() -> str:
    """Whose memory the view shows, in words."""
    if public_mode():
        return "yours alone, for this visit"
    return "shared by every tab of this app, one per model pair, until the app stops"
