"""Entry point for a Hugging Face Space or a desktop: build the playground UI and launch it.

Listens where `server_address()` says: GRADIO_SERVER_NAME and GRADIO_SERVER_PORT (or PORT), else
127.0.0.1:7860 on a desktop and 0.0.0.0:7860 on a Space. On a Space the embedded models are
prepared in the background from the start.

ZeroGPU is not used: `spaces.GPU` runs each decorated call in a forked process, and the handlers
keep each visitor's run, stop signal and correction memory in this process, which a fork's
changes never reach. Without the decorator, a ZeroGPU Space runs the app on its CPU.
"""

import threading

from playground.models import embedded
from playground.space import on_space
from playground.ui import build_demo, launch_options
from playground.ui.sharing.server_settings import queue_settings, quiet_queue, server_address

demo = build_demo()

if on_space():  # start preparing the embedded models now, so the first visitor waits less
    threading.Thread(target=embedded.ensure_prepared, name="prepare-embedded", daemon=True).start()

if __name__ == "__main__":
    host, port = server_address()
    quiet_queue(demo.queue(**queue_settings())).launch(server_name=host, server_port=port, **launch_options())
