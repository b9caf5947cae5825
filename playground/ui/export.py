"""Downloads: the last run as JSON (the CLI's contract) and its charts as one HTML file, written
to the session's download folder (downloads.py)."""

import gradio as gr

from . import charts, render
from .session import Sessions

NOTHING_YET = "nothing to export yet: generate first"


class Exports:
    """The export buttons' handlers: (file path or None, status)."""

    def __init__(self, sessions: Sessions):
        self.sessions = sessions

    def export_json(self, key: str):
        session = self.sessions.get(key)
        if session.run is None:
            return None, render.status_html(NOTHING_YET, "error")
        return session.downloads.write(".json", session.run.to_json(evidence=True, indent=1)), gr.skip()

    def export_charts(self, key: str):
        session = self.sessions.get(key)
        if session.run is None:
            return None, render.status_html(NOTHING_YET, "error")
        figures = charts.all_figures(session.run, session.timeline)
        return session.downloads.write(".html", charts.figures_html(figures)), gr.skip()
