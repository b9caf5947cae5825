"""Divergences between next-token distributions, vectorized over leading dimensions.

`p` is the target (verifier) distribution and `q` the draft's, as in the papers. Natural log:
JS is in [0, ln 2], TV in [0, 1], KL is unbounded.
"""

import math

import torch

MAXIMUM = {"js": math.log(2), "tv": 1.0, "kl": math.inf, "kl-draft": math.inf}
LABELS = {
    "js": "JS(target, draft)",
    "tv": "TV(target, draft)",
    "kl": "KL(target || draft)",
    "kl-draft": "KL(draft || target)",
}


def kl(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """KL(p || q); terms with p = 0 contribute 0, p > 0 with q = 0 give inf."""
    ratio = torch.where(p > 0, p / q, torch.ones_like(p))
    return torch.where(p > 0, p * torch.log(ratio), torch.zeros_like(p)).sum(-1).clamp_min(0)


def js(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    m = (p + q) / 2
    return ((kl(p, m) + kl(q, m)) / 2).clamp(0, math.log(2))


def tv(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    return ((p - q).abs().sum(-1) / 2).clamp(0, 1)


def divergence(name: str, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Div(p, q) by name: js | tv | kl (= KL(p||q)) | kl-draft (= KL(q||p))."""
    if name == "kl-draft":
        return kl(q, p)
    return {"js": js, "tv": tv, "kl": kl}[name](p, q)
