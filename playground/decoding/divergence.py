"""Divergences between next-token distributions, vectorized over leading dimensions.

`p` is the verifier's distribution (the target, or the qualifier in PyramidSD's first stage) and
`q` the proposer's (the draft, or the qualifier in the second stage), as in the papers. Natural
log throughout. `SCALES` says, for each divergence, what exactly is computed, its bound, and where
a threshold slider should stop, so that a threshold means the number its source meant.
"""

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Scale:
    name: str  # what is computed, short, with {v} the verifier and {d} the proposer
    definition: str  # the same written out ("" when the name says it all)
    bound: float  # the largest value it can take; math.inf when unbounded
    # Where thresholds stop, in every entry point (config.option_range): past a bounded
    # divergence's maximum, so that the limit "accept every candidate" is in range.
    slider_max: float
    range_text: str  # the bound and log base, in words
    # Infinite wherever the proposer gives 0 to a token the verifier does not (a pruned draft head)
    needs_proposer_support: bool = False

    def label(self, verifier: str = "target", proposer: str = "draft") -> str:
        return self.name.format(v=verifier, d=proposer)

    def describe(self, verifier: str = "target", proposer: str = "draft") -> str:
        definition = f" = {self.definition}" if self.definition else ""
        return f"{self.label(verifier, proposer)}{definition.format(v=verifier, d=proposer)}; {self.range_text}"


SCALES = {
    "js": Scale("JS({v}, {d})", "1/2 KL({v} || M) + 1/2 KL({d} || M), M = ({v} + {d})/2", math.log(2),
                1.0, "natural log, from 0 to ln 2 = 0.693"),
    "tv": Scale("TV({v}, {d})", "1/2 sum |{v} - {d}|", 1.0, 2.0, "from 0 to 1"),
    "kl": Scale("KL({v} || {d})", "", math.inf, 5.0, "natural log, from 0, unbounded", True),
    "kl-draft": Scale("KL({d} || {v})", "", math.inf, 5.0, "natural log, from 0, unbounded"),
    # maxholsman/fsd, fsd_utils.py: "js_div" = 0.5 * (kl_div(log p, m) + kl_div(log q, m)), and torch's
    # kl_div(input, target) is KL(target || exp(input)). The FSD paper's thresholds live on this scale.
    "fsd-js": Scale("1/2 KL(M || {v}) + 1/2 KL(M || {d})", "the FSD authors' js_div, M = ({v} + {d})/2",
                    math.inf, 2.0, "natural log, from 0, unbounded", True),
}
MAXIMUM = {name: scale.bound for name, scale in SCALES.items()}


def kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(p || q); terms with p = 0 contribute 0, p > 0 with q = 0 give inf."""
    ratio = torch.where(p > 0, p / q, torch.ones_like(p))
    return torch.where(p > 0, p * torch.log(ratio), torch.zeros_like(p)).sum(-1).clamp_min(0)


def js(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    m = (p + q) / 2
    return ((kl(p, m) + kl(q, m)) / 2).clamp(0, math.log(2))


def fsd_js(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """The FSD authors' "js_div": the KLs point from the midpoint, so it is unbounded."""
    m = (p + q) / 2
    return (kl(m, p) + kl(m, q)) / 2


def tv(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    return ((p - q).abs().sum(-1) / 2).clamp(0, 1)


def divergence(name: str, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Div(p, q) by name, p the verifier: see SCALES for what each computes."""
    if name == "kl-draft":
        return kl(q, p)
    return {"js": js, "tv": tv, "kl": kl, "fsd-js": fsd_js}[name](p, q)
