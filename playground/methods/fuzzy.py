"""Fuzzy speculative decoding (Holsman et al., seed 000): accept a candidate when the divergence
between the target's and the draft's raw distributions is below a threshold T; on rejection
sample the target's own distribution (not the residual). Lossy by design; T = 0 accepts nothing.
"""

from .acceptance import RandomControl, Threshold
from .base import Decoding, Method

# A divergence test accepts a candidate whatever the probability the draft gave its own token, so
# ending a block at a doubted token (draft_confidence) drops candidates the rule would likely keep
# (fsd at temperature 0.7 on the embedded family: 1.33x ar with it, 1.56x without); and the paper's
# divergence is over the draft's whole q, which a pruned head sets to 0 outside its tokens
# (bench/results/every_method*). Divergence rules draft full blocks with the full head (int8
# layers still) unless asked otherwise.
FULL_BLOCKS = {"draft_confidence": 0.0, "draft_vocab": 0}
from .speculative import Candidate, Verdict, speculative_steps


def fuzzy_check(ctx: Decoding, threshold: float):
    """Seed 000, Section 3: accept iff Div(P_target, P_draft) < T, else sample P_target."""
    def check(c: Candidate) -> Verdict:
        diagnostics = {"tau": threshold, "comparison": "<"}
        test = Threshold(ctx.config.divergence, c.divergence, threshold, "<")
        if test.held:
            return Verdict(True, diagnostics=diagnostics, test=test)
        return Verdict(False, replacement=ctx.sampler.draw(c.p), diagnostics=diagnostics, test=test)
    return check


def random_check(ctx: Decoding, rate: float):
    """Seed 000, Figure 6 control: accept a random fraction of candidates, ignoring divergence."""
    def check(c: Candidate) -> Verdict:
        diagnostics = {"accept_prob": rate, "random_accept": rate}
        test = RandomControl(rate, ctx.sampler.uniform())
        if test.held:
            return Verdict(True, diagnostics=diagnostics, test=test)
        return Verdict(False, replacement=ctx.sampler.draw(c.p), diagnostics=diagnostics, test=test)
    return check


def fuzzy(ctx: Decoding):
    rate = ctx.config.random_accept
    check = random_check(ctx, rate) if rate >= 0 else fuzzy_check(ctx, ctx.config.tau)
    yield from speculative_steps(ctx, check)


FSD = Method("fsd", fuzzy, "fuzzy SD: accept when Div(target, draft) < tau; lossy, tunable",
             options=("candidates", "draft_sampling", "tau", "divergence", "random_accept"),
             lossless=False, divergence_on_draft=True, drafts_by_lookup=True, defaults=FULL_BLOCKS)
