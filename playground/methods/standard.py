"""sd as the registry offers it: the chain of speculative.py, or a token tree (token_trees.py)."""

from .base import DRAFT_LEVERS, Decoding, Method
from .speculative import sd_check, speculative_steps
from .token_trees import tree_steps


def standard(ctx: Decoding):
    if ctx.config.tree_width > 1:
        yield from tree_steps(ctx)
    else:
        yield from speculative_steps(ctx, sd_check(ctx))


SD = Method("sd", standard, "standard speculative decoding: lossless, residual resampling + bonus token",
            options=("candidates", "draft_sampling"), levers=(*DRAFT_LEVERS, "tree_width"), drafts_by_lookup=True)
