"""How many generations run at once and how many may wait, from the device and the environment.

On a CPU, generations share the same cores: running several at once only makes each slower, so
one runs and the rest wait in a visible queue. A GPU overlaps small batch-1 runs well.
`PLAYGROUND_CONCURRENCY` and `PLAYGROUND_QUEUE_SIZE` override the defaults.
"""

import os

import torch

from ..space import on_space


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else default


def queue_settings() -> dict:
    default_concurrency = 4 if torch.cuda.is_available() else 1
    return {"default_concurrency_limit": _env_int("PLAYGROUND_CONCURRENCY", default_concurrency),
            "max_size": _env_int("PLAYGROUND_QUEUE_SIZE", 32)}


def server_address() -> tuple[str, int]:
    """Where to listen, by Gradio's conventions: GRADIO_SERVER_NAME and GRADIO_SERVER_PORT (or
    PORT). By default 127.0.0.1 on a desktop, Gradio's own default, so that nothing else on the
    network reaches the playground; 0.0.0.0 on a Space, whose proxy must reach it."""
    name = os.environ.get("GRADIO_SERVER_NAME") or ("0.0.0.0" if on_space() else "127.0.0.1")
    port = os.environ.get("GRADIO_SERVER_PORT") or os.environ.get("PORT") or "7860"
    if not port.strip().isdigit() or not 0 < int(port) < 65536:
        raise SystemExit(f"server port {port!r} is not a port number: set GRADIO_SERVER_PORT to 1-65535")
    return name, int(port)
