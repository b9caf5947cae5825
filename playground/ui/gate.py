"""What reaches the app other than through Gradio's queue, where the per-visitor caps are kept.

Gradio leaves its REST routes (`POST /gradio_api/run/<api_name>`, which run an event at once, past
the queue) open unless it sees a Hugging Face Space (SYSTEM=spaces with SPACE_ID): every other
public deployment (PLAYGROUND_PUBLIC=1, SPACE_ID alone) was open. Here they are closed whenever
the app is public, whatever asked for them open (`queue(api_open=True)` included).
"""

import gradio as gr

from ..policy import public_mode


class GuardedBlocks(gr.Blocks):
    """gr.Blocks whose routes past the queue are closed while the app is public."""

    @property
    def api_open(self) -> bool:  # Gradio reads it at each request
        return self._api_open and not public_mode()

    @api_open.setter
    def api_open(self, value: bool) -> None:
        self._api_open = value
