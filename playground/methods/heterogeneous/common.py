"""What the three heterogeneous-vocabulary methods share."""

import torch

from ...models import vocabulary_relation
from ...sampling import one_hot_argmax
from ..base import Decoding

HETEROGENEOUS_METHODS = ("slem", "tli", "slrs")


def draft_probs(ctx: Decoding, logits: torch.Tensor) -> torch.Tensor:
    """The distribution the drafter actually samples from: the user's settings, then argmax when
    the draft proposes greedily."""
    q = ctx.sampler.probs(logits)
    return one_hot_argmax(q) if ctx.config.draft_sampling == "greedy" else q


def pair_figures(ctx: Decoding) -> dict:
    """Step.extra of a run's first step: whether the pair could have used plain `sd`."""
    return {"same_vocabulary": vocabulary_relation(ctx.target_tokenizer, ctx.draft_tokenizer) == "same"}


def same_vocabulary_note(run) -> str | None:
    """The CLI's one-line hint when a heterogeneous method ran on a pair that shares a vocabulary."""
    if run.method not in HETEROGENEOUS_METHODS or not run.steps:
        return None
    if not run.steps[0].extra.get("same_vocabulary"):
        return None
    return (f"note: the target and draft share one vocabulary; `--method sd` verifies the same pair "
            f"token by token, without {run.method}'s re-tokenization")
