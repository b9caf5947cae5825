"""Entry point for a Hugging Face Space or a desktop: build the playground UI and launch it.

Listens where `server_address()` says: GRADIO_SERVER_NAME and GRADIO_SERVER_PORT (or PORT), else
127.0.0.1:7860 on a desktop and 0.0.0.0:7860 on a Space. On a Space the embedded models are
prepared in the background from the start. On ZeroGPU (the `spaces` package present), the
handlers that run models are wrapped in `spaces.GPU`; elsewhere that decorator is not used.
"""

import os
import threading

from playground import embedded
from playground.space import on_space
from playground.ui import build_demo, launch_options
from playground.ui.serving import queue_settings, server_address


def gpu_decorator():
    try:
        import spaces  # noqa: PLC0415  (only on Hugging Face Spaces)
    except ImportError:
        return None
    return spaces.GPU(duration=120) if os.environ.get("SPACES_ZERO_GPU") else None


demo = build_demo(gpu=gpu_decorator())

if on_space():  # start preparing the embedded models now, so the first visitor waits less
    threading.Thread(target=embedded.ensure_prepared, name="prepare-embedded", daemon=True).start()

if __name__ == "__main__":
    host, port = server_address()
    demo.queue(**queue_settings()).launch(server_name=host, server_port=port, **launch_options())
