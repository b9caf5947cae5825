"""The step stream: what one verification round produced.

Every method yields `Step`s; the engine, statistics, CLI, UI and benchmark only read them.
"""

from dataclasses import asdict, dataclass, field

ORIGINS = ("draft", "qualifier", "target", "rescued")


@dataclass(frozen=True)
class RuleCheck:
    """A candidate's check, as fields: the numbers its rule compared, by the names the JSON keeps
    flat among a token's figures (or a replaced candidate's, or a round's evidence)."""

    divergence: float | None = None  # at its position, wherever the proposer has a distribution
    accept_prob: float | None = None  # a ratio rule's min(1, p/q) (slrs: min(1, p/psi))
    u: float | None = None  # the uniform draw held against accept_prob
    tau: float | None = None  # a threshold rule's: it kept the candidate where the divergence passed
    comparison: str | None = None  # "<" or "<=" against tau
    random_accept: float | None = None  # the random control's rate
    verifier_draw: int | None = None  # slem's: the verifier's own draw, matched exactly
    psi: float | None = None  # slrs's string probability under the draft

    @classmethod
    def of(cls, figures: dict) -> "RuleCheck":
        return cls(**{name: figures.get(name) for name in cls.__dataclass_fields__})

    @property
    def is_ratio(self) -> bool:
        """Kept with min(1, ratio) (sd, csd, slrs), not by a threshold, a draw's match or a coin."""
        return self.accept_prob is not None and self.random_accept is None

    @property
    def has_draw(self) -> bool:
        """A ratio test with its draw u recorded: a point on the rule's own test."""
        return self.is_ratio and self.u is not None

    @property
    def reads_divergence(self) -> bool:
        """Whether the rule compared the divergence (with tau); others only record it."""
        return self.tau is not None


STAGE_ONE_RECORD = "qualifier_check"  # PyramidSD: a token's stage-one record, among its figures


def candidate_source(candidate: dict) -> str:
    """Where a replaced candidate came from: the draft's chain, a sibling the tree added, the
    prompt lookup's branch, or (PyramidSD) the qualifier, which wrote it in stage one."""
    return ("the prompt lookup's branch" if candidate.get("lookup") else
            "the qualifier's token from stage one" if candidate.get("origin") == "qualifier" else
            "a sibling the tree added" if candidate.get("branch") else "the draft's own token")


def stage_one_replaced(figures: dict) -> list[dict]:
    """PyramidSD: the draft's candidates the qualifier rejected before it kept or wrote a token (or
    a candidate the target then rejected), from that token's or candidate's figures."""
    return (figures.get(STAGE_ONE_RECORD) or {}).get("replaced", [])


@dataclass
class TokenRecord:
    """CONTRACT: one emitted token. `text` is filled in by the engine's detokenizer.

    What the token is, as fields: a candidate a check kept (`block_position` set), the verifier's
    correction in place of rejected candidates (`drawn_from` set), the bonus token after a fully
    kept path (`bonus`), csd's rescued draft (origin "rescued"), or a token a model wrote alone
    (`ar`, `draft-only`: none of these). `diagnostics` holds the numbers its check used (p, q, the
    divergence, the rule's figures) and a method's own notes; the JSON flattens both."""

    id: int
    origin: str
    text: str = ""
    diagnostics: dict = field(default_factory=dict)
    block_position: int | None = None  # its place among the candidates of its round's block (0: first)
    branch: int | None = None  # a token tree's sibling it was, at its node (0: the chain's own token)
    lookup: bool = False  # drafted by the prompt lookup's branch of the tree
    bonus: bool = False
    drawn_from: str | None = None  # a correction's distribution: "residual", or the verifier's own
    # The candidates checked and rejected at its place before it, in the order they were checked
    # (the draft's own token first), each with its own check: `id`, the proposer's probability, the
    # divergence, the rule's numbers. A correction replaced them all; a kept sibling the ones before it.
    replaced: list[dict] = field(default_factory=list)

    @classmethod
    def kept(cls, token: int, origin: str, figures: dict, position: int, branch: int, replaced: list[dict],
             lookup: bool = False) -> "TokenRecord":
        """A candidate its check kept (or csd rescued), with the siblings rejected before it."""
        return cls(token, origin, diagnostics=figures, block_position=position, branch=branch, lookup=lookup,
                   replaced=replaced)

    @classmethod
    def correction(cls, token: int, verifier: str, figures: dict, position: int, drawn_from: str,
                   replaced: list[dict]) -> "TokenRecord":
        """The verifier's draw in place of every candidate checked at its place."""
        return cls(token, verifier, diagnostics=figures, block_position=position, drawn_from=drawn_from,
                   replaced=replaced)

    @classmethod
    def bonus_token(cls, token: int, verifier: str, figures: dict, position: int) -> "TokenRecord":
        """The verifier's next token after a path it kept whole."""
        return cls(token, verifier, diagnostics=figures, block_position=position, bonus=True)

    @property
    def is_correction(self) -> bool:
        """Drawn by the verifier in place of the candidates at its place (not a bonus token)."""
        return self.drawn_from is not None

    @property
    def checked(self) -> bool:
        """A token of a verified block: a kept candidate, a correction or a bonus token."""
        return self.block_position is not None

    def figures(self) -> dict:
        """Its numbers and what it is, by the JSON's names (`replaced` apart)."""
        place = {"position_in_block": self.block_position, "branch": self.branch, "drawn_from": self.drawn_from}
        return {**self.diagnostics, **{key: value for key, value in place.items() if value is not None},
                **({"bonus": True} if self.bonus else {}), **({"lookup": True} if self.lookup else {})}

    def to_dict(self) -> dict:
        return {"id": self.id, "text": self.text, "origin": self.origin, **self.figures(),
                **({"replaced": self.replaced} if self.replaced or self.is_correction else {})}

    @property
    def replaced_candidates(self) -> list[int]:
        return [candidate["id"] for candidate in self.replaced]

    @property
    def replaced_sources(self) -> list[str]:
        """Where each replaced candidate came from: the draft's chain, a sibling the tree added, or
        the prompt lookup's branch (a node of a width-2 tree can hold three)."""
        return [candidate_source(c) for c in self.replaced]

    @property
    def stage_one(self) -> dict:
        """PyramidSD: the qualifier's record of this token at stage one (its check, by the JSON's
        names, the draft candidates it replaced under `replaced`); {} for other tokens."""
        return self.diagnostics.get(STAGE_ONE_RECORD) or {}

    @property
    def stage_one_check(self) -> dict:
        """PyramidSD: the qualifier's figures of this token at stage one, its rejected candidates apart."""
        return {key: value for key, value in self.stage_one.items() if key != "replaced"}

    def own_figures(self) -> dict:
        """`figures()` without PyramidSD's stage-one record (`stage_one`)."""
        return {key: value for key, value in self.figures().items() if key != STAGE_ONE_RECORD}

    @property
    def stage_one_replaced(self) -> list[dict]:
        """PyramidSD: the draft's candidates the qualifier rejected before it kept or wrote this token."""
        return stage_one_replaced(self.diagnostics)

    @property
    def check(self) -> RuleCheck:
        """Its own check's numbers (a kept candidate's, or csd's rescued one's; empty for others)."""
        return RuleCheck.of(self.diagnostics)

    @property
    def replaced_checks(self) -> list[RuleCheck]:
        return [RuleCheck.of(candidate) for candidate in self.replaced]


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

    @property
    def rule_check(self) -> RuleCheck:
        return RuleCheck.of(self.checks)

    @property
    def branch(self) -> int:
        """Its sibling's place at the node in a token tree (0: the chain's own candidate)."""
        return self.checks.get("branch", 0)


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

    # What a round's `extra` may carry, as fields (the JSON keeps them in `extra`): the views read
    # these, never the keys.
    @property
    def tree(self) -> dict | None:
        """The token tree the round verified: its `tokens`, `parents` and the kept `path`."""
        return self.extra.get("tree")

    @property
    def qualifier_trees(self) -> list[dict]:
        """PyramidSD: the trees its qualifier walked in stage one, one per qualifier round."""
        return self.extra.get("qualifier_trees", [])

    @property
    def feature_read(self) -> dict | None:
        """A feature draft's round: which target layers its head read, and from where."""
        return self.extra.get("feature_draft")

    @property
    def draft_pieces(self) -> list[str] | None:
        """A draft with a vocabulary of its own: the text pieces it proposed."""
        return self.extra.get("draft_pieces")

    @property
    def ngram_match(self) -> int | None:
        """A prompt-lookup round: the n of the n-gram it matched (0: none)."""
        return self.extra.get("ngram_match")

    def to_dict(self) -> dict:
        out = asdict(self)
        out["tokens"] = [t.to_dict() for t in self.tokens]
        return out
