"""Entry point for a Hugging Face Space or a desktop: build the playground UI and launch it.

Honours PORT and GRADIO_SERVER_NAME. On ZeroGPU (the `spaces` package present), the handlers
that run models are wrapped in `spaces.GPU`; elsewhere that decorator is not used.
"""

import os

from playground.ui import build_demo, launch_options
from playground.ui.serving import queue_settings


def gpu_decorator():
    try:
        import spaces  # noqa: PLC0415  (only on Hugging Face Spaces)
    except ImportError:
        return None
    return spaces.GPU(duration=120) if os.environ.get("SPACES_ZERO_GPU") else None


demo = build_demo(gpu=gpu_decorator())

if __name__ == "__main__":
    demo.queue(**queue_settings()).launch(server_name=os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0"),
                        server_port=int(os.environ.get("PORT", 7860)), **launch_options())
