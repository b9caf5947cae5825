"""Who a visitor is, as a public deployment sees one, and what each visitor did in the last minute.

A Gradio session hash is chosen by the client: one person may send a fresh one with every
request, or end their own session (the page's unload event) whenever they like. The limits on
runs and uploads therefore count per visitor address, in tables that outlive sessions: on a
Space, the address its proxy added to `x-forwarded-for` (the proxy is the app's only caller),
else the address the connection came from.
"""

import os
import threading
import time
from collections import defaultdict, deque

from ...errors import PlaygroundError
from ...space import on_space

RATE_WINDOW_SECONDS = 60


def visitor_address(request) -> str:
    """The visitor's address from a gr.Request or a starlette request ("" when it has none)."""
    forwarded = _added_by_proxies(getattr(request, "headers", None) or {}, trusted_proxies())
    if forwarded:
        return forwarded
    client = getattr(request, "client", None)
    return getattr(client, "host", None) or ""


def trusted_proxies() -> int:
    """How many proxies in front of the app add to `x-forwarded-for`: PLAYGROUND_TRUSTED_PROXIES,
    else 1 on a Space (Hugging Face does not document its chain) and 0 elsewhere (the header is
    then the caller's own words, and ignored)."""
    setting = os.environ.get("PLAYGROUND_TRUSTED_PROXIES", "").strip()
    return int(setting) if setting.isdigit() else int(on_space())


def _added_by_proxies(headers, proxies: int) -> str:
    """The address the first of `proxies` trusted proxies added, or "". A proxy appends the
    address it was called from after whatever its caller sent in the header, so a visitor can
    write the entries on the left, never the last `proxies`. A header sent several times counts
    as one list, in order."""
    lines = headers.getlist("x-forwarded-for") if hasattr(headers, "getlist") else [headers.get("x-forwarded-for")]
    entries = [entry.strip() for line in lines if line for entry in line.split(",") if entry.strip()]
    return entries[-proxies] if 0 < proxies <= len(entries) else ""


class SessionKey(str):
    """A session's key (Gradio's session hash), carrying the address of the visitor who sent it."""

    visitor: str

    def __new__(cls, session_hash: str, visitor: str = ""):  # a copy (copy, pickle) passes the text alone
        key = super().__new__(cls, session_hash)
        key.visitor = visitor
        return key


def session_key(request) -> SessionKey:
    """The key a handler gets for a Gradio request: its session hash and its visitor."""
    return SessionKey(request.session_hash, visitor_address(request))


def visitor_of(key: str) -> str:
    """The visitor behind a session key; a bare key (tests, the share link's opening) is its own."""
    return getattr(key, "visitor", None) or key


class RateTable:
    """Start times of each visitor's recent actions within RATE_WINDOW_SECONDS, by visitor."""

    def __init__(self):
        self._times: dict[str, deque] = defaultdict(deque)
        self._lock = threading.Lock()

    def admit(self, visitor: str, count: int, per_minute: int, what: str) -> None:
        """Count `count` new actions of `visitor` against `per_minute` (0: no limit), or refuse
        them all in one line; `what` names the limit ("runs per minute per visitor")."""
        now = time.monotonic()
        with self._lock:
            self._forget_before(now - RATE_WINDOW_SECONDS)
            times = self._times[visitor]
            if per_minute and len(times) + count > per_minute:
                wait = RATE_WINDOW_SECONDS - (now - times[0]) if times else RATE_WINDOW_SECONDS
                raise PlaygroundError(f"this deployment allows {per_minute} {what}: try again in "
                                      f"{max(1, round(wait))} s")
            times.extend([now] * count)

    def recent(self, visitor: str) -> deque:
        """A copy of the visitor's start times within the window."""
        with self._lock:
            self._forget_before(time.monotonic() - RATE_WINDOW_SECONDS)
            return deque(self._times.get(visitor, ()))

    def __len__(self) -> int:
        return len(self._times)

    def _forget_before(self, cutoff: float) -> None:
        """Drop times older than `cutoff`, and the visitors left with none (the table stays as
        small as the last minute's visitors)."""
        for visitor in list(self._times):
            times = self._times[visitor]
            while times and times[0] < cutoff:
                times.popleft()
            if not times:
                del self._times[visitor]
