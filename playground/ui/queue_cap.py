"""At most `runs_at_once` runs (generate, compare, step, race) of one visitor in Gradio's queue,
waiting or running; one more is refused in one line when it asks to join.

The queue is shared by everyone (PLAYGROUND_QUEUE_SIZE waiting events): without a cap, a few
dozen clients of one visitor, each with its own session, filled it and every other visitor was
told "Queue is full". The visitor's count is read from the queue's own events at each join, so
nothing is left to leak when an event ends, is cancelled or its client goes away.
"""

import asyncio

from ..limits import current_limits
from .visitors import visitor_address

# Gradio answers "error" with 400 and the message, which the page shows as the event's error;
# its "queue_full" (503) would show its own words ("This application is currently busy").
REFUSED = "error"


def refusal(limit: int) -> str:
    return (f"this deployment runs at most {limit} of a visitor's runs at once (waiting or running): wait for "
            "one to finish")


def cap_runs_per_visitor(demo, run_names: set[str]) -> None:
    """Cap the runs each visitor holds in `demo`'s queue; `run_names` are the API names of the
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
        limit = current_limits().runs_at_once
        if not limit or not _is_run(queue, body, run_names):
            return await push(body, request, username)
        async with joining:  # counted and joined as one step: two requests at once cannot both pass
            visitor = visitor_address(request)
            if _runs_held(queue, visitor, run_names) >= limit:
                return False, refusal(limit), REFUSED
            return await push(body, request, username)

    queue.push = push_within_cap


def _is_run(queue, body, run_names: set[str]) -> bool:
    fn = queue.blocks.fns.get(body.fn_index) if body.fn_index is not None else None
    return fn is not None and fn.api_name in run_names


def _runs_held(queue, visitor: str, run_names: set[str]) -> int:
    """The visitor's run events the queue holds: pushed and not yet ended."""
    return sum(1 for event in list(queue.event_ids_to_events.values())
               if event.fn.api_name in run_names and visitor_address(event.request) == visitor)
