"""An int8 twin of a CPU float32 draft: its linear layers with int8 weights (one scale per output
channel) and activations quantized per call (torch's dynamic int8 kernels).

A one-token draft step reads every weight once, so on a CPU it runs at memory speed: int8 reads a
quarter of the bytes, and a small draft's int8 weights fit in the last-level cache. On a 2-core
EPYC (AVX-512 with VNNI) the embedded draft's step fell from about 0.21 to 0.11 of a target step
(`bench/results/speed_levers.md`); CPUs with AVX2 only run fbgemm's AVX2 kernels (not measured).

Speculative decoding stays exact: its rule weighs the target's p against the q of the draft that
proposed the tokens, whatever that draft computes. The twin shares the loaded draft's embeddings,
norms and output layer (nothing is copied but the int8 weights) and leaves the loaded draft
unchanged for every other method and run.

torch 2.13 marks its quantized tensors deprecated (the fast int8 CPU kernels, fbgemm's, take no
other input; its int8 weight-only product runs ten times slower here); the pinned torch has
them, and where a torch or CPU lacks them the option is ignored.
"""

import copy
import threading
import warnings
import weakref

import torch
from torch import nn

from .prepacked import PrepackedLinear


class Int8Linear(nn.Module):
    """A linear layer for CPU inference: int8 weight, float32 input and output."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None):
        super().__init__()
        self.out_features, self.in_features = weight.shape
        scales = (weight.abs().amax(dim=1).clamp(min=1e-12) / 127).double()
        zero_points = torch.zeros(len(scales), dtype=torch.long)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*quantized tensor creation functions.*deprecated")
            quantized = torch.quantize_per_channel(weight.float(), scales, zero_points, 0, torch.qint8)
        self.packed = torch.ops.quantized.linear_prepack(quantized, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # reduce_range: 7-bit activations, so that AVX2's 16-bit pairwise sums cannot saturate
        return torch.ops.quantized.linear_dynamic(x, self.packed, True)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


def dense_weight(linear: nn.Module) -> torch.Tensor:
    """The [out, in] float weight of an nn.Linear or a PrepackedLinear."""
    if linear.weight is not None:
        return linear.weight.detach()
    # oneDNN's blocked layout has no public inverse; the product with the identity reads the
    # weight back exactly (each output is one weight plus zeros)
    identity = torch.eye(linear.in_features)
    return torch.ops.mkldnn._linear_pointwise(identity, linear.packed_weight, None, "none", [], "").T.contiguous()


def applies(model) -> bool:
    """Whether int8 applies: a float32 model on an x86 CPU, in one piece (GPUs, half precision and
    models that accelerate spread with its forward hooks keep their own)."""
    return (model.device.type == "cpu" and model.dtype == torch.float32 and not hasattr(model, "hf_device_map")
            and torch.backends.quantized.engine in ("x86", "fbgemm"))


_twins: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_lock = threading.Lock()  # concurrent runs share the models


def int8_twin(model, with_output_layer: bool = False):
    """`model` with int8 copies of its linear layers (built once per model), its output layer
    excepted unless `with_output_layer` (a draft model's output layer is the pruned head's to
    quantize, draft_vocab.py; a feature draft's scores its own vocabulary and has no pruned head);
    `model` itself where int8 does not apply."""
    if not applies(model):
        return model
    with _lock:
        if model not in _twins:
            with torch.no_grad():
                _twins[model] = _twin(model, None if with_output_layer else model.get_output_embeddings())
        return _twins[model]


def clear() -> None:
    with _lock:
        _twins.clear()


def _twin(module: nn.Module, output_layer: nn.Module) -> nn.Module:
    if module is output_layer:
        return module
    if type(module) in (nn.Linear, PrepackedLinear):
        return Int8Linear(dense_weight(module), module.bias)
    twin = copy.copy(module)  # shares parameters and buffers; only the children are new
    twin._modules = {name: _twin(child, output_layer) for name, child in module._modules.items()}
    return twin
