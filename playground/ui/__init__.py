"""The Gradio playground: `build_demo()` builds the app, `launch_options()` what launch() takes."""

from .layout import build_demo, launch_options

__all__ = ["build_demo", "launch_options"]
