"""How many generations run at once and how many may wait, from the device and the environment.

On a CPU, generations share the same cores: running several at once only makes each slower, so
one runs and the rest wait in a visible queue. A GPU overlaps small batch-1 runs well.
`PLAYGROUND_CONCURRENCY` and `PLAYGROUND_QUEUE_SIZE` override the defaults.
"""

import os

import torch

from ...space import on_space


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else default


def queue_settings() -> dict:
    default_concurrency = 4 if torch.cuda.is_available() else 1
    return {"default_concurrency_limit": _env_int("PLAYGROUND_CONCURRENCY", default_concurrency),
            "max_size": _env_int("PLAYGROUND_QUEUE_SIZE", 32)}


# Gradio's queue looks for work every millisecond while it is idle or all its workers are busy
# (and for progress every 10 ms): a thousand wake-ups a second of the server's event loop, each
# taking the GIL from the running generation between its tensor operations. Through gradio_client
# (sd, embedded family, 2 cores, 6 alternating pairs) polling every 20 ms ran faster in every pair
# (bench/results/README.md, "The page vs the CLI").
QUEUE_POLL_SECONDS = 0.02
PROGRESS_POLL_SECONDS = 0.1


def quiet_queue(demo):
    """`demo` (queued) with its queue polling every QUEUE_POLL_SECONDS; a Gradio without these
    settings keeps its own (tests/test_ui_e2e.py notices)."""
    queue = getattr(demo, "_queue", None)
    if queue is not None and hasattr(queue, "sleep_when_free"):
        queue.sleep_when_free, queue.progress_update_sleep_when_free = QUEUE_POLL_SECONDS, PROGRESS_POLL_SECONDS
    return demo


def server_address() -> tuple[str, int]:
    """Where to listen, by Gradio's conventions: GRADIO_SERVER_NAME and GRADIO_SERVER_PORT (or
    PORT). By default 127.0.0.1 on a desktop, Gradio's own default, so that nothing else on the
    network reaches the playground; 0.0.0.0 on a Space, whose proxy must reach it."""
    name = os.environ.get("GRADIO_SERVER_NAME") or ("0.0.0.0" if on_space() else "127.0.0.1")
    port = os.environ.get("GRADIO_SERVER_PORT") or os.environ.get("PORT") or "7860"
    if not port.strip().isdigit() or not 0 < int(port) < 65536:
        raise SystemExit(f"server port {port!r} is not a port number: set GRADIO_SERVER_PORT to 1-65535")
    return name, int(port)
