"""What one visitor may hold in Gradio's queue at once, waiting or running: at most `runs_at_once`
runs (generate, compare, step, race), at most `events_at_once` events of every kind that waits
for a worker or the model (runs, charts, the Toy's rounds, step mode, exports, uploads, loads...),
and at most QUICK_EVENTS_FACTOR times that of the events the layout runs without a concurrency
limit (a status line, a control's change, the heartbeat: each holds a server thread while it
runs). One more is refused in one line when it asks to join.

The queue is shared by everyone (PLAYGROUND_QUEUE_SIZE waiting events) and so are the server's
threads: without a cap, a few dozen clients of one visitor, each with its own session, filled the
queue with runs, or one address with 60 chart or Toy events, and every other visitor was told
"Queue is full". The visitor's counts are read from the queue's own events at each join, so
nothing is left to leak when an event ends, is cancelled or its client goes away.
"""

import asyncio

from ...deploy.limits import current_limits
from .visitors import visitor_address

# Gradio answers "error" with 400 and the message, which the page shows as the event's error;
# its "queue_full" (503) would show its own words ("This application is currently busy").
REFUSED = "error"
# A slider dragged with "re-run when a control changes" sends a burst of change events at once
QUICK_EVENTS_FACTOR = 4


def refusal(limit: int, what: str = "runs") -> str:
    return (f"this deployment runs at most {limit} of a visitor's {what} at once (waiting or running): wait for "
            "one to finish")


def cap_events_per_visitor(demo, run_names: set[str]) -> None:
    """Cap the events each visitor holds in `demo`'s queue; `run_names` are the API names of the
    run events (the page's and the API's). `demo.queue()` makes a new queue: the cap follows it."""
    make_queue = demo.queue

    def queue(*args, **kwargs):
        queued = make_queue(*args, **kwargs)
        _cap(demo._queue, run_names)
        return queued

    demo.queue = queue
    if getattr(demo, "_queue", None) is not None:
        _cap(demo._queue, run_names)


def _cap(queue, run_names: set[str]) -> None:
    if not hasattr(queue, "push") or not hasattr(queue, "event_ids_to_events"):
        return  # another Gradio's queue: left as it is
    push, joining = queue.push, asyncio.Lock()

    async def push_within_cap(body, request, username):
        fn = queue.blocks.fns.get(body.fn_index) if body.fn_index is not None else None
        if fn is None:
            return await push(body, request, username)
        async with joining:  # counted and joined as one step: two requests at once cannot both pass
            refused = _over_cap(queue, fn, visitor_address(request), run_names)
            if refused:
                return False, refused, REFUSED
            return await push(body, request, username)

    queue.push = push_within_cap


def _kind(queue, fn, run_names: set[str]) -> str:
    """"run", "event" (one that waits for a worker) or "quick" (one without a concurrency limit)."""
    if fn.api_name in run_names:
        return "run"
    limit = queue.default_concurrency_limit if fn.concurrency_limit == "default" else fn.concurrency_limit
    return "quick" if limit is None else "event"


def _over_cap(queue, fn, visitor: str, run_names: set[str]) -> str | None:
    """The refusal of one more event like `fn` from `visitor`, or None while it is within the limits."""
    limits = current_limits()
    held = [_kind(queue, event.fn, run_names) for event in list(queue.event_ids_to_events.values())
            if visitor_address(event.request) == visitor]
    kind = _kind(queue, fn, run_names)
    if kind == "quick":
        quick = limits.events_at_once * QUICK_EVENTS_FACTOR
        return refusal(quick, "status and control events") if quick and held.count("quick") >= quick else None
    if limits.runs_at_once and kind == "run" and held.count("run") >= limits.runs_at_once:
        return refusal(limits.runs_at_once)
    if limits.events_at_once and len(held) - held.count("quick") >= limits.events_at_once:
        return refusal(limits.events_at_once, "events")
    return None
