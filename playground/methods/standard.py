"""Standard speculative decoding (Leviathan et al. 2023, Chen et al. 2023; seed 001): keep each
candidate with min(1, p(x) / q(x)), else draw from the residual (docs/rules.md, "Standard SD"),
over every draft shape through the one walk (walk.py)."""

from .base import Decoding, Method
from .rules import ResidualRatio
from .walk import rounds


def standard(ctx: Decoding):
    yield from rounds(ctx, ResidualRatio())


SD_OPTIONS = ("candidates", "draft_sampling", "divergence")  # what SD's rule and drafting read, and its variants'
SD = Method("sd", standard, "standard speculative decoding: lossless, residual resampling + bonus token",
            options=SD_OPTIONS, drafts_by_lookup=True)
