"""The app's model work, all on one long-lived thread.

Each thread that enters an OpenMP parallel region keeps its own pool of OpenMP threads, and once
more of them exist than CPUs, libgomp throttles their spinning: every region then wakes its idle
workers through the kernel. Gradio runs handlers on a pool of worker threads, so a run on one of
them, once another had run one, decoded about 25% slower than the same run through the CLI
(`bench/results/README.md`). Loading, generating and scoring through this one thread keeps one
pool. Every call waits for its visitor's turn (turns.py): visitors' runs interleave here round by
round, a Compare's or Race's runs too.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .turns import Turns

_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="models")
_on_model_thread = threading.local()
_DONE = object()
turns = Turns()  # the app's one model thread is shared in turns


def call(doing: str, function, *args, **kwargs):
    """`function(*args, **kwargs)`, run on the model thread (directly when already there) in a turn
    of nobody in particular; `doing` says what it does to a run that waits for it ("loading a model")."""
    return call_as("", None, function, *args, doing=doing, **kwargs)


def call_as(visitor: str, charge, function, *args, doing: str = "", **kwargs):
    """`function(*args, **kwargs)` on the model thread, in a turn of `visitor`'s; `charge(seconds)`
    (or None) is told the turn's length; `doing` what it does, where it is no run's round."""
    if getattr(_on_model_thread, "value", False):
        return function(*args, **kwargs)
    with turns.turn(visitor, charge, doing) as held:
        result, held.cpu = _executor.submit(_marked, function, *args, **kwargs).result()
        return result


def iterate(generator, visitor: str = "", charge=None):
    """`generator`'s items, each computed on the model thread in a turn of `visitor`'s; closing
    this closes it there."""
    try:
        while (item := call_as(visitor, charge, next, generator, _DONE)) is not _DONE:
            yield item
    finally:
        call_as(visitor, None, generator.close)


def _marked(function, *args, **kwargs):
    """(`function`'s result, the model thread's CPU seconds computing it)."""
    _on_model_thread.value = True
    started = time.thread_time()
    return function(*args, **kwargs), time.thread_time() - started
