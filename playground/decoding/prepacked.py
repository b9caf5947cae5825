"""Linear layers whose weights oneDNN reorders once, at load time, for CPU inference.

torch's default CPU kernel re-reads or repacks a weight on every call, so a product with 2-6 rows
(a verification pass over K+1 tokens) costs 2-3x a one-row product, and even one row runs below
memory speed. With the weight prepacked, on a 2-core EPYC (AVX-512) (fp32, weights streamed from memory),
one row costs about half and six rows about 1.2x one row (`bench/results/speed_levers.md`).
Each row's result is also bitwise the same whatever the number of rows, so a verification pass
sees exactly the logits that one-token decoding sees.
"""

import os

import torch
from torch import nn


class PrepackedLinear(nn.Module):
    """`nn.Linear` for inference with its weight in oneDNN's blocked layout. The dense weight is
    dropped unless `keep_weight` (an output layer: tied to the embeddings, or pruned per run)."""

    def __init__(self, linear: nn.Linear, keep_weight: bool = False):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        packed = torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), None)
        self.register_buffer("packed_weight", packed, persistent=False)
        self.weight = linear.weight if keep_weight else None
        self.bias = linear.bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self.packed_weight, self.bias, "none", [], "")

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, prepacked"


def enabled() -> bool:
    """On unless PLAYGROUND_PREPACK=0 (for measuring what it is worth)."""
    return os.environ.get("PLAYGROUND_PREPACK", "1") != "0" and torch.backends.mkldnn.is_available()


def prepack_linears(model: nn.Module) -> int:
    """Replace every plain nn.Linear of a float32 CPU model; returns how many were replaced.
    Leaves the model as it was where oneDNN cannot pack (another dtype or device, an old CPU)."""
    if not enabled():
        return 0
    targets = [(parent, name, child) for parent in model.modules()
               for name, child in parent.named_children()
               if type(child) is nn.Linear and child.weight.device.type == "cpu"
               and child.weight.dtype == torch.float32]
    output_layer = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    try:
        replacements = [(parent, name, PrepackedLinear(child, keep_weight=child is output_layer))
                        for parent, name, child in targets]
    except RuntimeError:  # oneDNN refused this CPU or layout: keep torch's kernels
        return 0
    for parent, name, packed in replacements:
        setattr(parent, name, packed)
    return len(replacements)
