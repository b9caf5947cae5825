"""The record of one run: what the CLI prints as JSON, the UI renders and a replay reads back.

Its tokens and steps are the decoding's own records (decoding/step.py); `to_dict` is the CLI's
JSON contract (docs/rules.md, "One record")."""

import json
import math
from dataclasses import asdict, dataclass, field

from .config import READ_BY_EVERY_METHOD, RunConfig
from .decoding.ngram import NGRAM
from .decoding.stats import Stats
from .decoding.step import PairFigures, Step, TokenRecord
from .methods import METHODS


@dataclass
class Run:
    """A generation in progress or finished: what the CLI prints and the UI renders."""

    method: str
    config: RunConfig
    prompt: str
    models: dict = field(default_factory=dict)
    tokens: list[TokenRecord] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    text: str = ""
    finished: bool = False
    stop_reason: str = ""
    notes: list[str] = field(default_factory=list)  # what the user should know, e.g. ignored options

    @property
    def pair(self) -> PairFigures | None:
        """What a heterogeneous-vocabulary method found about the target and draft (else None)."""
        return self.steps[0].pair if self.steps else None

    def recorded_config(self) -> dict:
        """The settings the run ran with: the ones every method reads and its own, as they ran
        (a lever that could not run is off; options the method does not read are left out)."""
        method = METHODS.get(self.method)
        reads = (*READ_BY_EVERY_METHOD, *method.reads) if method else ()
        if self.models.get("draft") == NGRAM:  # a prompt lookup proposes; it draws nothing
            reads = tuple(name for name in reads if name != "draft_sampling")
        return {name: value for name, value in self.config.to_dict().items() if not method or name in reads}

    def to_dict(self, evidence: bool = False) -> dict:
        """CONTRACT: the CLI's JSON object; `evidence` adds each step's checks (step.Evidence), as
        the UI's export does."""
        out = {"method": self.method, "config": {**self.recorded_config(), "models": self.models},
               "text": self.text, "tokens": [t.to_dict() for t in self.tokens],
               "stats": {**self.stats.to_dict(), "stop_reason": self.stop_reason, "notes": self.notes}}
        if evidence:
            out["evidence"] = [[asdict(check) for check in step.evidence] for step in self.steps]
        return out

    def to_json(self, evidence: bool = False, **dumps_options) -> str:
        """The JSON object as text; JSON has no inf or nan, so those numbers are written as null."""
        return json.dumps(_finite_numbers(self.to_dict(evidence)), allow_nan=False, ensure_ascii=False,
                          default=str, **dumps_options)


def _finite_numbers(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite_numbers(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_numbers(item) for item in value]
    return value
