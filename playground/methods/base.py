"""What every method shares: the run context it reads and the record it is registered with."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..cache import KVRunner
from ..config import RunConfig
from ..sampling import Sampler
from ..step import Step


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

    def remaining(self) -> int:
        return self.config.max_new_tokens - (len(self.ids) - self.prompt_length)

    def block_size(self, wanted: int) -> int:
        """Candidates to draft so that candidates + the target's own token fit the budget."""
        return max(0, min(wanted, self.remaining() - 1))


@dataclass(frozen=True)
class Method:
    name: str
    run: Callable[[Decoding], Iterator[Step]]
    summary: str
    roles: tuple[str, ...] = ("target", "draft")
    vocabulary: str = "same"  # "same": draft must share the target's vocabulary; "any": it need not
    options: tuple[str, ...] = ()  # RunConfig fields this method reads, beyond sampling
    lossless: bool = True
