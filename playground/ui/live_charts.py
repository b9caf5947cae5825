"""The Generate tab's charts while a run streams, and complete once it ends.

They ride on their own event, not on the run's stream. Gradio's page does work for every output
of a streamed event at every update, sent or skipped (it snapshots each one's value), so seven
plots on the run's stream made watching the text cost the page more than drawing it. Instead a
timer on the page asks for the charts while a run is queued or streaming (`live_charts`); they
go out when the page can afford to draw them (`pacing.ChartPacing`), once more with every point
when the run has ended, and then the timer stops. Only the running charts (LIVE) stream: the
others summarise the whole run, and each chart drawn costs the page tens of milliseconds. API
callers ask for the last run's complete charts the same way (`/charts`).
"""

import gradio as gr

from . import charts
from .session import Sessions

LIVE_POINTS = 120  # points per line in a streamed chart
LIVE = ("chart-acceptance", "chart-speed")  # the charts drawn while a run streams


def _all_skipped() -> list:
    return [gr.skip()] * len(charts.CHARTS)


class LiveCharts:
    def __init__(self, sessions: Sessions):
        self.sessions = sessions

    def live_charts(self, key: str) -> tuple:
        """(*figures or skips, the timer's update): the live charts when due, the complete ones
        once after a run ends, and the timer switched off once nothing is queued or streaming."""
        session = self.sessions.get(key)
        if session.final_charts_due:
            session.final_charts_due = False
            return (*self.final(key), self._timer(session))
        if session.streaming > 0 and session.run is not None and session.charts.wanted():
            session.charts.sending()
            return (*self._live(session), gr.skip())
        return (*_all_skipped(), self._timer(session))

    def final(self, key: str) -> list:
        """Every chart of the session's last run, with every point (skips before its first run)."""
        session = self.sessions.get(key)
        if session.run is None:
            return _all_skipped()
        return charts.all_figures(session.run, session.timeline)

    @staticmethod
    def _live(session) -> list:
        return [charts.thinned(make(session.run, session.timeline), LIVE_POINTS) if elem_id in LIVE else gr.skip()
                for elem_id, make in charts.CHARTS]

    @staticmethod
    def _timer(session):
        busy = session.streaming > 0 or session.final_charts_due or session.stale_runs.queued
        return gr.skip() if busy else gr.Timer(active=False)

    def start(self) -> gr.Timer:
        """A run was triggered from the page: ask for its charts until it ends."""
        return gr.Timer(active=True)

    def show_charts(self, key: str, shown: bool) -> None:
        """The charts panel was opened or closed: closed charts wait for the run's end."""
        self.sessions.get(key).charts.shown = shown

    def charts_drawn(self, key: str) -> None:
        """The page has drawn the last charts it received: it can afford the next ones."""
        self.sessions.get(key).charts.page_drew()
