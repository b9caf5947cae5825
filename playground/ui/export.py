"""Downloads: the last run as JSON (the CLI's contract) and its charts as one HTML file."""

import tempfile
from pathlib import Path

import gradio as gr

from . import charts, render
from .session import Sessions

NOTHING_YET = "nothing to export yet: generate first"


def write_download(suffix: str, text: str) -> str:
    """A fresh file for Gradio to offer as a download; returns its path."""
    folder = Path(tempfile.mkdtemp(prefix="playground-"))
    path = folder / f"run{suffix}"
    path.write_text(text, encoding="utf-8")
    return str(path)


class Exports:
    """The export buttons' handlers: (file path or None, status)."""

    def __init__(self, sessions: Sessions):
        self.sessions = sessions

    def export_json(self, key: str):
        run = self.sessions.get(key).run
        if run is None:
            return None, render.status_html(NOTHING_YET, "error")
        return write_download(".json", run.to_json(evidence=True, indent=1)), gr.skip()

    def export_charts(self, key: str):
        session = self.sessions.get(key)
        if session.run is None:
            return None, render.status_html(NOTHING_YET, "error")
        return write_download(".html", charts.figures_html(charts.all_figures(session.run, session.timeline))), \
            gr.skip()
