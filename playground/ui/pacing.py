"""How often a streaming run refreshes its view: often enough to watch, rarely enough to cost
little. On a desktop the page shares the model's cores, and every refresh costs it CPU time
(receiving, updating, laying out, painting) that the model's threads lose: at ten text refreshes
and two live chart draws a second the page used a third of a core. Text and stats are paced by
what building them costs the server too (Gradio sends a view while the generator waits at its
yield); live charts by what drawing them costs the page.
"""

import time
from dataclasses import dataclass

TEXT_INTERVAL = 0.25  # at least this many seconds between text refreshes while generating...
STATS_INTERVAL = 1.0  # ...and between refreshes of the stats...
REFRESH_SHARE = 0.04  # ...and longer if each kind of refresh would take over 4% of the run's time
CHART_INTERVAL = 0.5  # the page asks for live charts this often
PAGE_SHARE = 0.05  # live charts keep the page drawing at most this share of the time
DRAW_WAIT = 3.0  # seconds to wait for the page to say it drew live charts before sending more


class Pacer:
    """When to refresh a view: at most every `interval` seconds, and rarely enough that the
    refreshes cost at most `share` of the time."""

    def __init__(self, interval: float, share: float = REFRESH_SHARE):
        self.interval, self.share, self.next = interval, share, 0.0

    def due(self) -> bool:
        return time.monotonic() >= self.next

    def spent(self, seconds: float) -> None:
        self.next = time.monotonic() + max(self.interval, seconds / self.share)


@dataclass
class ChartPacing:
    """Whether the page can afford the next live charts: their panel is open, the page has said
    it drew the last ones (a Plot's change event), and at the last draw's measured cost the next
    keeps drawing under PAGE_SHARE of the page's time. A page that never says so (none, or one in
    the background) gets the next after DRAW_WAIT seconds."""

    shown: bool = True
    sent: float = 0.0  # time.monotonic() when live charts were last sent...
    drawn: float = 0.0  # ...when the page last said it had drawn them...
    draw_seconds: float = 0.0  # ...and how long after the sending it said so the first time

    def wanted(self) -> bool:
        now = time.monotonic()
        if not self.shown:
            return False
        if self.drawn < self.sent:
            return now - self.sent > DRAW_WAIT
        return now - self.drawn >= self.draw_seconds * (1 / PAGE_SHARE - 1)

    def new_run(self) -> None:
        """A new run's first charts go out at once, whatever the last run's cost."""
        self.sent = self.drawn = self.draw_seconds = 0.0

    def sending(self) -> None:
        self.sent = time.monotonic()

    def page_drew(self) -> None:
        now = time.monotonic()
        if self.drawn < self.sent:
            self.draw_seconds = now - self.sent
        self.drawn = now
