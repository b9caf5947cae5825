"""The app's model work, all on one long-lived thread.

Each thread that enters an OpenMP parallel region keeps its own pool of OpenMP threads, and once
more of them exist than CPUs, libgomp throttles their spinning: every region then wakes its idle
workers through the kernel. Gradio runs handlers on a pool of worker threads, so a run on one of
them, once another had run one, decoded about 25% slower than the same run through the CLI
(`bench/results/README.md`). Loading, generating and scoring through this one thread keeps one
pool. Visitors' streamed runs interleave here step by step; a Compare or Race column holds the
thread for its whole generation. `in_use()` says whether any run holds or waits for it.
"""

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="models")
_on_model_thread = threading.local()
_DONE = object()


class _Users:
    """How many calls and streamed runs hold or wait for the model thread."""

    def __init__(self):
        self._lock, self._count = threading.Lock(), 0

    @contextmanager
    def using(self):
        with self._lock:
            self._count += 1
        try:
            yield
        finally:
            with self._lock:
                self._count -= 1

    def any(self) -> bool:
        return self._count > 0


_users = _Users()
# A streamed run counts as a user from its start to its end, not only during each step's call (it
# leaves the thread between steps while the page shows them); a step-mode run, paused between
# rounds, counts only while a round runs.
streaming = _users.using


def in_use() -> bool:
    """A run streams, or a call runs or waits, on the model thread."""
    return _users.any()


def call(function, *args, **kwargs):
    """`function(*args, **kwargs)`, run on the model thread (directly when already there)."""
    if getattr(_on_model_thread, "value", False):
        return function(*args, **kwargs)
    with _users.using():
        return _executor.submit(_marked, function, *args, **kwargs).result()


def iterate(generator):
    """`generator`'s items, each computed on the model thread; closing this closes it there."""
    try:
        while (item := call(next, generator, _DONE)) is not _DONE:
            yield item
    finally:
        call(generator.close)


def _marked(function, *args, **kwargs):
    _on_model_thread.value = True
    return function(*args, **kwargs)
