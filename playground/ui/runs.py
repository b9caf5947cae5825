"""Starts a session's runs from the controls: their options, the session's family, and for csd
the correction memory the app keeps for that family."""

from ..deploy.limits import current_limits
from ..engine import generate, stream
from ..methods import METHODS
from . import model_thread
from .family_panel import FamilyPanel
from .memory import CorrectionMemories
from .options import options_from_values


class Runs:
    def __init__(self, family: FamilyPanel, memories: CorrectionMemories):
        self.family, self.memories = family, memories

    def _prepare(self, key: str, method: str, values, override: dict) -> tuple[dict, dict]:
        """(the method's models, every argument of the engine's call but the prompt)."""
        options = {**options_from_values(method, values), **override}
        models = self.family.models_for(key, method)
        memory = self.memories.for_models(key, models) if METHODS[method].uses_memory else None
        return models, {"method": method, **models, "correction_memory": memory, **options}

    def stream(self, key: str, prompt: str, method: str, values) -> tuple[dict, object]:
        """(the method's models, the engine's step stream); counts one run against the session's rate."""
        models, arguments = self._prepare(key, method, values, {})
        self.family.sessions.get(key).admit(1, current_limits().runs_per_minute)
        return models, model_thread.iterate(stream(prompt, **arguments))

    def finished(self, key: str, prompt: str, method: str, values, **override):
        """The finished Run, `override` taking the place of some of the controls' options (the
        caller counts it against the session's rate)."""
        return model_thread.call(generate, prompt, **self._prepare(key, method, values, override)[1])
