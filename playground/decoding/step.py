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

    @property
    def replaced(self) -> list[dict]:
        """The draft candidates checked and rejected at this token's place before it, in the order
        they were checked (the draft's own token first), each with its own check: `id`, the
        proposer's probability, the divergence, the rule's numbers. A correction replaced them all;
        a kept sibling of a token tree the ones before it; empty for any other token."""
        return list(self.diagnostics.get("replaced", []))

    @property
    def is_correction(self) -> bool:
        """Drawn by the verifier in place of the candidates at its place (not a bonus token)."""
        return "drawn_from" in self.diagnostics

    @property
    def replaced_candidates(self) -> list[int]:
        return [candidate["id"] for candidate in self.replaced]


@dataclass(frozen=True)
class Evidence:
    """What a rule saw at one verified position, kept with the step that it decided (as mlx-lm's
    generator yields the log-probabilities it drew from), so that every view shows the run's own
    numbers. Distributions are named as in the papers: p target, q draft, r qualifier; `p` is
    after the sampling settings (what the SD ratio and the draws use; one-hot when greedy), `q` is
    what the draft drew from (one-hot when it drafted greedily), `p_raw` the temperature-1 softmax
    (what divergences and gates compare), `residual` norm(max(0, p - q))."""

    stage: str  # the verifier: "target", or "qualifier" (PyramidSD's first stage)
    position: int  # the candidate's position in the verifier's block
    candidate: int
    verdict: str  # "accepted", "rescued" or "rejected"
    emitted: int  # the token kept at this position: the candidate, or the correction
    checks: dict  # the rule's numbers: accept_prob, divergence, tau, comparison, ...
    at_candidate: dict  # distribution name -> the candidate's probability under it
    top: dict  # distribution name -> [(token id, probability)], most likely first
    drawn_from: str | None = None  # the distribution a correction was drawn from
    test: object = None  # the rule's acceptance test (methods/acceptance.py): numbers, held, words


@dataclass(frozen=True)
class PairFigures:
    """What a heterogeneous-vocabulary method (slem, tli, slrs) found about its target and draft:
    figures of the whole run, carried by its first step (`Run.pair` reads them)."""

    same_vocabulary: bool  # one vocabulary: plain `sd` could verify the pair token by token
    intersection: int | None = None  # tli: token strings in both vocabularies (seed 004, Table 9)
    share_of_target: float | None = None  # tli: the intersection's share of each vocabulary
    share_of_draft: float | None = None
    lookahead: int | None = None  # slrs: the most draft tokens one proposal drafts
    target_vocabulary: int | None = None  # tokens in each vocabulary (a byte draft: 259)
    draft_vocabulary: int | None = None


@dataclass
class Step:
    """One round: the tokens it emitted, the evidence its rule decided on, and what it cost.
    Final once the engine yields it: nothing changes a yielded step.

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
    pair: PairFigures | None = None  # run-level, on the first step of a heterogeneous method
    evidence: list[Evidence] = field(default_factory=list)  # per verified position, in order

    def to_dict(self) -> dict:
        out = asdict(self)
        out["tokens"] = [t.to_dict() for t in self.tokens]
        return out
