"""What every method shares: the run context it reads and the record it is registered with."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..config import RunConfig
from ..decoding.cache import KVRunner
from ..decoding.sampling import Sampler
from ..decoding.step import Step

# The drafting levers (see draft_levers.py): they belong to the draft, so every method that drafts
# with a model offers them, and a run records which of them ran.
DRAFT_LEVERS = ("draft_int8", "draft_vocab", "draft_confidence", "tree_width")


@dataclass
class Decoding:
    """The state of one generation. The engine appends every emitted token to `ids` between
    steps; methods read `ids` at the start of each step and never change it."""

    config: RunConfig
    sampler: Sampler
    target: KVRunner
    ids: list[int]
    prompt_length: int
    draft: KVRunner | None = None
    qualifier: KVRunner | None = None
    target_tokenizer: object = None
    draft_tokenizer: object = None
    state: dict = field(default_factory=dict)  # method-owned, per-run (e.g. CSD memory)
    lookup: object = None  # a draft without a model (ngram.PromptLookup), in the draft's place

    def remaining(self) -> int:
        return self.config.max_new_tokens - (len(self.ids) - self.prompt_length)

    def block_size(self, wanted: int) -> int:
        """Candidates to draft so that candidates + the target's own token fit the budget."""
        return max(0, min(wanted, self.remaining() - 1))

    def doubts(self, q_raw_row, token):
        """Whether the draft gave its own token less than `draft_confidence` (raw probability):
        a block ends there, since the later candidates are likely wasted work. A bool tensor on
        the row's device: `if ctx.doubts(...)` reads it; drafting.py keeps it there."""
        return q_raw_row[token] < self.config.draft_confidence


@dataclass(frozen=True)
class Method:
    """A decoding method as the rest of the playground sees it: what it runs, which models it
    needs, and what it reads. `options`: the RunConfig fields its rule reads beyond sampling;
    `levers`: the drafting levers its drafter takes (DRAFT_LEVERS for a model that drafts in
    blocks); `divergence_on_draft`: its rule compares the draft's q in a divergence; `defaults`:
    what it runs with when the caller names no value (the API, the CLI, the bench, the UI's
    controls on choosing it)."""

    name: str
    run: Callable[[Decoding], Iterator[Step]]
    summary: str
    roles: tuple[str, ...] = ("target", "draft")
    vocabulary: str = "same"  # "same": draft must share the target's vocabulary; "any": it need not
    options: tuple[str, ...] = ()
    levers: tuple[str, ...] = DRAFT_LEVERS
    lossless: bool = True
    divergence_on_draft: bool = False
    drafts_by_lookup: bool = False  # takes a prompt-lookup draft (`draft="ngram"`) in the draft's place
    defaults: dict = field(default_factory=dict)  # its own defaults of RunConfig fields, where they differ

    @property
    def reads(self) -> tuple[str, ...]:
        """Every RunConfig field the method reads beyond the ones every method reads."""
        return (*self.options, *self.levers)

    @property
    def drafts_by_features(self) -> bool:
        """Takes a feature draft (EAGLE-3): like a prompt lookup, it drafts right after the context
        the target has read, so the head finds the target's features of all of it."""
        return self.drafts_by_lookup

    @property
    def uses_memory(self) -> bool:
        return "memory" in self.options
