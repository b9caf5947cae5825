"""sd as the registry offers it: every draft shape (the chain, a token tree, a prompt lookup's
chain) verified by token_trees.py, a chain being a tree of width 1."""

from .base import DRAFT_LEVERS, Method
from .token_trees import tree_steps

SD = Method("sd", tree_steps, "standard speculative decoding: lossless, residual resampling + bonus token",
            options=("candidates", "draft_sampling"), levers=(*DRAFT_LEVERS, "tree_width"), drafts_by_lookup=True)
