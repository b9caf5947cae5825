"""The step stream: what one verification round produced.

Every method yields `Step`s; the engine, statistics, CLI, UI and benchmark only read them.
"""

from dataclasses import asdict, dataclass, field

ORIGINS = ("draft", "qualifier", "target", "rescued")


@dataclass
class TokenRecord:
    """CONTRACT: one emitted token. `text` is filled in by the engine's detokenizer."""

    id: int
    origin: str
    text: str = ""
    diagnostics: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"id": self.id, "text": self.text, "origin": self.origin, **self.diagnostics}


@dataclass
class Step:
    """One round: the tokens it emitted and what it cost.

    `drafted`/`accepted` count candidates checked by the final verifier (the target), so that
    acceptance rate = accepted / drafted as the serving engines report it. `accepted_flags` says,
    per checked candidate position, whether it was accepted (for per-position rates).
    """

    tokens: list[TokenRecord]
    drafted: int = 0
    accepted: int = 0
    accepted_flags: list[bool] = field(default_factory=list)
    draft_seconds: float = 0.0
    verify_seconds: float = 0.0
    forwards: dict = field(default_factory=dict)  # model role -> forward passes this step
    extra: dict = field(default_factory=dict)  # method-specific figures (per-stage counts, ...)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["tokens"] = [t.to_dict() for t in self.tokens]
        return out
