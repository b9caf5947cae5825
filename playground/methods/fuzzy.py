"""Fuzzy speculative decoding (Holsman et al., seed 000): accept a candidate when the divergence
between the target's and the draft's raw distributions is below a threshold T; on rejection
sample the target's own distribution (not the residual). Lossy by design; T = 0 accepts nothing.
On a token tree the walk keeps the first child, in draft order, that passes (docs/rules.md, "Fuzzy SD").
"""

from .base import Decoding, Method
from .rules import DivergenceThreshold, RandomAcceptance
from .walk import rounds

# A divergence test accepts a candidate whatever the probability the draft gave its own token, so
# ending a block at a doubted token (draft_confidence) drops candidates the rule would likely keep
# (fsd at temperature 0.7 on the embedded family: 1.33x ar with it, 1.56x without); and the paper's
# divergence is over the draft's whole q, which a pruned head sets to 0 outside its tokens
# (bench/results/every_method*). Divergence rules draft full blocks with the full head (int8
# layers still) unless asked otherwise. And a chain: a divergence tests a position (the target's
# and the draft's distributions there), so a sibling meets nearly the test its chain token failed
# and buys only a longer verification pass (bench/results/method_shapes: fsd at tree width 2 ran
# 0.84-0.85x its chain on chat prompts; 0.93-1.15x on edit prompts, where the lookup branch pays).
DIVERGENCE_DRAFT = {"draft_confidence": 0.0, "draft_vocab": 0, "tree_width": 1}


def fuzzy(ctx: Decoding):
    """Seed 000, Section 3: accept iff Div(P_target, P_draft) < T, else sample P_target; or the
    Figure 6 control, which accepts a random fraction of candidates whatever their divergence."""
    rate = ctx.config.random_accept
    rule = RandomAcceptance(rate) if rate >= 0 else DivergenceThreshold(ctx.config.divergence, ctx.config.tau, "<")
    yield from rounds(ctx, rule)


FSD = Method("fsd", fuzzy, "fuzzy SD: accept when Div(target, draft) < tau; lossy, tunable",
             options=("candidates", "draft_sampling", "tau", "divergence", "random_accept"),
             lossless=False, divergence_on_draft=True, drafts_by_lookup=True, defaults=DIVERGENCE_DRAFT)
