"""Seconds per forward pass of each loaded model, by the number of new tokens it was fed,
recorded as runs go. Speculative decoding's prediction needs the target's one-token step T(1),
which a speculative run itself never takes; on a CPU a pass over K+1 tokens costs well over T(1).
"""

import statistics
import time
import weakref
from collections import deque

import torch
from transformers import DynamicCache

# A pass's cost depends on what else the machine is doing (on a desktop, the browser showing the
# run): a run's costs are compared with passes from the last FRESH_SECONDS only, as a CLI run's
# are with the passes of its own process.
FRESH_SECONDS = 30.0

_seconds: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # model -> {new tokens: deque}


def record(model, new_tokens: int, seconds: float) -> None:
    passes = _seconds.setdefault(model, {}).setdefault(new_tokens, deque(maxlen=64))
    passes.append((time.monotonic(), seconds))


def clear() -> None:
    _seconds.clear()


def typical(model, new_tokens: int) -> float | None:
    """The median of the recent passes of `model` over `new_tokens` new tokens (None if none in
    the last FRESH_SECONDS)."""
    since = time.monotonic() - FRESH_SECONDS
    recent = [seconds for at, seconds in _seconds.get(model, {}).get(new_tokens, ()) if at >= since]
    return statistics.median(recent) if recent else None


def single_step_seconds(model, context: int = 64, passes: int = 4) -> float:
    """T(1), measured on a throwaway cache if no pass in the last FRESH_SECONDS recorded it."""
    if typical(model, 1) is None:
        cache = DynamicCache(config=model.config)
        ids = torch.zeros(1, context, dtype=torch.long, device=model.device)
        with torch.inference_mode():
            model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
            for _ in range(passes + 1):  # the first pass warms up
                started = time.perf_counter()
                model(input_ids=ids[:, :1], past_key_values=cache, use_cache=True, logits_to_keep=1)
                record(model, 1, time.perf_counter() - started)
    return typical(model, 1)
