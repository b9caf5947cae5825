"""How many generations run at once and how many may wait, from the device and the environment.

On a CPU, generations share the same cores: running several at once only makes each slower, so
one runs and the rest wait in a visible queue. A GPU overlaps small batch-1 runs well.
`PLAYGROUND_CONCURRENCY` and `PLAYGROUND_QUEUE_SIZE` override the defaults.
"""

import os

import torch


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else default


def queue_settings() -> dict:
    default_concurrency = 4 if torch.cuda.is_available() else 1
    return {"default_concurrency_limit": _env_int("PLAYGROUND_CONCURRENCY", default_concurrency),
            "max_size": _env_int("PLAYGROUND_QUEUE_SIZE", 32)}
