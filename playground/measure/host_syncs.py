"""Count the points where decoding waits for a tensor's value on the host (a GPU's sync points),
on any device, CPU included: `.item()`, `int()`/`float()` of a tensor, `nonzero`, copies of a
tensor to the CPU (as they reach torch's dispatcher) and `.tolist()` (which on a CPU reads memory
without the dispatcher, so it is counted at the method; on a GPU its own copy to the CPU is part of
that one count). A run on a CPU shows where a GPU run would stall, without a GPU."""

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode

SYNCING_OPS = {torch.ops.aten._local_scalar_dense.default: "item", torch.ops.aten.nonzero.default: "nonzero",
               torch.ops.aten.equal.default: "equal", torch.ops.aten.is_nonzero.default: "is_nonzero"}


class HostSyncCounter(TorchDispatchMode):
    """`with HostSyncCounter() as syncs: ...` then `syncs.total`, `syncs.by_kind`."""

    def __init__(self):
        super().__init__()
        self.by_kind: Counter = Counter()
        self._tolist = torch.Tensor.tolist
        self._in_tolist = False

    def __enter__(self):
        tolist = self._tolist

        def counted_tolist(tensor):
            self.by_kind["tolist"] += 1
            self._in_tolist = True
            try:
                return tolist(tensor)
            finally:
                self._in_tolist = False
        torch.Tensor.tolist = counted_tolist
        return super().__enter__()

    def __exit__(self, *exc):
        torch.Tensor.tolist = self._tolist
        return super().__exit__(*exc)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in SYNCING_OPS:
            self.by_kind[SYNCING_OPS[func]] += 1
        elif func is torch.ops.aten._to_copy.default and str(kwargs.get("device", "")) == "cpu" and not self._in_tolist:
            self.by_kind["copy to cpu"] += 1
        return func(*args, **kwargs)

    @property
    def total(self) -> int:
        return sum(self.by_kind.values())


def syncs_per_round(steps) -> tuple[list[int], Counter]:
    """Drive a method's step iterator, counting host syncs per yielded round (the round's drafting
    and verification; what the consumer does with a step is not counted)."""
    per_round, kinds, iterator = [], Counter(), iter(steps)
    while True:
        with HostSyncCounter() as counter:
            step = next(iterator, None)
        if step is None:
            return per_round, kinds
        per_round.append(counter.total)
        kinds.update(counter.by_kind)
