"""How often a streaming run refreshes its view: often enough to watch, rarely enough to cost
little. On a desktop the page shares the model's cores, and every refresh costs it CPU time
(receiving, updating, laying out, painting) that the model's threads lose: at ten text refreshes
and two live chart draws a second the page used a third of a core. Text and stats are paced by
what building them costs the server too (Gradio sends a view while the generator waits at its
yield).
"""

import time

TEXT_INTERVAL = 0.25  # at least this many seconds between text refreshes while generating...
STATS_INTERVAL = 1.0  # ...and between refreshes of the stats...
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
