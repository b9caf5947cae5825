"""The whole Gradio app on the tiny family (models/tiny.py), for tests and the bench scripts that
drive a real browser against it."""

from ..models.presets import Preset
from ..models.tiny import foreign_draft
from .layout import build_demo, launch_options
from .sharing.server_settings import quiet_queue


def launch_tiny_app(family: dict, **queue):
    """The whole Gradio app on the tiny family, on 127.0.0.1, with a second preset whose draft has
    another vocabulary. Returns (demo, url)."""
    by_spec = {m.spec: m for m in [*family.values(), foreign_draft()]}
    presets = [Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", "tiny test family", default_method="sd"),
               Preset("tiny-foreign", "tiny-target", "tiny-foreign-draft", "", "a draft with its own vocabulary",
                      default_method="slem")]
    demo = build_demo(loader=by_spec.__getitem__, presets=presets)
    _, url, _ = quiet_queue(demo.queue(**queue)).launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True,
                                           **launch_options())
    return demo, url
