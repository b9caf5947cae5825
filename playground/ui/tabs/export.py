"""Downloads: the last run as JSON (the CLI's contract) and its charts as one HTML file, written
to the session's download folder (downloads.py). Each counts against the visitor's downloads per
minute and is refused while the app's files fill their disk (disk.py). In public mode the charts'
page loads plotly.js from its CDN (a page of the charts' data, about 100 KB, instead of 4.8 MB)."""

import gradio as gr

from ...deploy.limits import current_limits
from ...errors import PlaygroundError
from ...models.policy import public_mode
from ..sharing import disk
from ..sharing.session import Session, Sessions
from ..views import charts, render
from ..views.error_status import error_status

NOTHING_YET = "nothing to export yet: generate first"


def offered(session: Session, suffix: str, text: str) -> str:
    """The path of a fresh download of `text` for the session's visitor, or a one-line refusal
    (PlaygroundError) past their downloads per minute or the disk's limit."""
    disk.check_room("a download")
    session.admit_export(current_limits().exports_per_minute)
    return session.downloads.write(suffix, text)


class Exports:
    """The export buttons' handlers: (file path or None, status)."""

    def __init__(self, sessions: Sessions):
        self.sessions = sessions

    def export_json(self, key: str):
        session = self.sessions.get(key)
        if session.run is None:
            return None, render.status_html(NOTHING_YET, "error")
        return self._offer(session, ".json", lambda: session.run.to_json(evidence=True, indent=1))

    def export_charts(self, key: str):
        session = self.sessions.get(key)
        if session.run is None:
            return None, render.status_html(NOTHING_YET, "error")

        def page():
            return charts.figures_html(charts.all_figures(session.run, session.timeline), plotly_js=not public_mode())
        return self._offer(session, ".html", page)

    @staticmethod
    def _offer(session: Session, suffix: str, text) -> tuple:
        try:
            return offered(session, suffix, text()), gr.skip()
        except PlaygroundError as error:
            return None, error_status(error)
