"""What the three heterogeneous-vocabulary methods share."""

import torch

from ...decoding.sampling import one_hot_argmax
from ...decoding.step import PairFigures
from ...models.loading import vocabulary_relation
from ..base import Decoding


def draft_probs(ctx: Decoding, logits: torch.Tensor) -> torch.Tensor:
    """The distribution the drafter actually samples from: the user's settings, then argmax when
    the draft proposes greedily."""
    q = ctx.sampler.probs(logits)
    return one_hot_argmax(q) if ctx.config.draft_sampling == "greedy" else q


def pair_figures(ctx: Decoding, **method_figures) -> PairFigures:
    """The run's first step's `pair`: whether the pair could have used plain `sd`, and the
    method's own figures (PairFigures' fields)."""
    same = vocabulary_relation(ctx.target_tokenizer, ctx.draft_tokenizer) == "same"
    sizes = {f"{role}_vocabulary": len(tokenizer) for role, tokenizer in (("target", ctx.target_tokenizer),
                                                                          ("draft", ctx.draft_tokenizer))
             if hasattr(tokenizer, "__len__")}
    return PairFigures(same_vocabulary=same, **sizes, **method_figures)


def same_vocabulary_note(run) -> str | None:
    """The CLI's one-line hint when a heterogeneous method ran on a pair that shares a vocabulary."""
    if run.pair is None or not run.pair.same_vocabulary:
        return None
    return (f"note: the target and draft share one vocabulary; `--method sd` verifies the same pair "
            f"token by token, without {run.method}'s re-tokenization")


def string_summary(steps) -> dict:
    """Run-level string figures from the steps' `extra`: characters of draft text accepted per
    step, steps whose re-tokenization needed the look-behind realignment, characters the drafter
    re-tokenized, and for slrs the psi enumeration sizes (tree nodes) and cap hits."""
    extras = [step.extra for step in steps]
    enumerated = [nodes for extra in extras for nodes in extra.get("psi_enumerated", [])]
    count = max(len(extras), 1)
    return {
        "chars_accepted_per_step": sum(extra.get("chars_accepted", 0) for extra in extras) / count,
        "realigned_steps": sum(extra.get("realignments", 0) for extra in extras),
        "realigned_share": sum(extra.get("realignments", 0) for extra in extras) / count,
        "draft_resync_chars": sum(extra.get("draft_resync_chars", 0) for extra in extras),
        "psi_enumerations": len(enumerated),
        "psi_enumerated_mean": sum(enumerated) / len(enumerated) if enumerated else None,
        "psi_enumerated_max": max(enumerated, default=None),
        "psi_cap_hits": sum(extra.get("psi_cap_hits", 0) for extra in extras),
    }
