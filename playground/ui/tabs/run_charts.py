"""The Generate tab's plotly charts, drawn once a run has ended.

While a run streams, its running acceptance and tokens/s are small lines in the stats panel
(sparklines.py). Plotly charts stay out of the stream: on a desktop the page shares the model's
cores, and each plotly figure the page redrew took it about a tenth of a second, which slowed the
very run it showed (browser/CLI 0.74x with the two running charts redrawn live, 0.86x without).
They ride on their own event, which follows the run's once it has ended: Gradio's page does work
for every output of a streamed event at every update, sent or skipped. API callers ask for the
last run's charts with `/charts`.
"""

import gradio as gr

from ..sharing.session import Sessions
from ..views import charts


class RunCharts:
    def __init__(self, sessions: Sessions):
        self.sessions = sessions

    def after_run(self, key: str) -> list:
        """Every chart of the run that just ended, once, each hidden where the method gives it no
        data (ar has no acceptance); skips if a newer run has started since."""
        session = self.sessions.get(key)
        if not session.final_charts_due or session.run is None:  # a Load may have cleared the run since
            return [gr.skip()] * len(charts.CHARTS)
        session.final_charts_due = False
        return [gr.update(value=figure, visible=has_data(figure)) for figure in self.final(key)]

    def final(self, key: str) -> list:
        """Every chart of the session's last run (skips before its first run)."""
        session = self.sessions.get(key)
        if session.run is None:
            return [gr.skip()] * len(charts.CHARTS)
        return charts.all_figures(session.run, session.timeline)


def has_data(figure) -> bool:
    """Whether any trace of the figure has a point with a value."""
    return any(any(value is not None for value in (trace.y if trace.y is not None else ())) for trace in figure.data)
