"""The Generate tab's plotly charts, drawn once a run has ended.

While a run streams, its running acceptance and tokens/s are small lines in the stats panel
(sparklines.py). Plotly charts stay out of the stream: on a desktop the page shares the model's
cores, and each plotly figure the page redrew took it about a tenth of a second, which slowed the
very run it showed (browser/CLI 0.74x with the two running charts redrawn live, 0.86x without).
They ride on their own event, not the run's: Gradio's page does work for every output of a
streamed event at every update, sent or skipped. A timer on the page asks for them while a run is
queued or streaming (`poll`); they come once, complete, after the run has ended, and then the
timer stops. API callers ask for the last run's charts with `/charts`.
"""

import gradio as gr

from . import charts
from .session import Sessions


class RunCharts:
    def __init__(self, sessions: Sessions):
        self.sessions = sessions

    def poll(self, key: str) -> tuple:
        """(*figures or skips, the timer's update): every chart once after a run ends, and the
        timer switched off once nothing is queued or streaming."""
        session = self.sessions.get(key)
        if session.final_charts_due:
            session.final_charts_due = False
            return (*self.final(key), self._timer(session))
        return (*[gr.skip()] * len(charts.CHARTS), self._timer(session))

    def final(self, key: str) -> list:
        """Every chart of the session's last run (skips before its first run)."""
        session = self.sessions.get(key)
        if session.run is None:
            return [gr.skip()] * len(charts.CHARTS)
        return charts.all_figures(session.run, session.timeline)

    @staticmethod
    def _timer(session):
        busy = session.streaming > 0 or session.final_charts_due or session.stale_runs.queued
        return gr.skip() if busy else gr.Timer(active=False)

    def start(self) -> gr.Timer:
        """A run was triggered from the page: ask for its charts until it ends."""
        return gr.Timer(active=True)
