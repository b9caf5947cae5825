"""How often a streaming run refreshes its view: often enough to watch, rarely enough to cost
little (each refresh builds the view, and Gradio sends it while the generator waits at its yield)."""

import time

TEXT_INTERVAL = 0.1  # at least this many seconds between text refreshes while generating...
CHART_INTERVAL = 0.5  # ...and between chart refreshes (a gr.Plot resends the whole figure)...
REFRESH_SHARE = 0.04  # ...and longer if each kind of refresh would take over 4% of the run's time


class Pacer:
    """When to refresh a view: at most every `interval` seconds, and rarely enough that the
    refreshes cost at most `share` of the time."""

    def __init__(self, interval: float, share: float = REFRESH_SHARE):
        self.interval, self.share, self.next = interval, share, 0.0

    def due(self) -> bool:
        return time.monotonic() >= self.next

    def spent(self, seconds: float) -> None:
        self.next = time.monotonic() + max(self.interval, seconds / self.share)
