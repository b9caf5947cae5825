"""A sampling test's seeds split over the cores its process may use (under `pytest -n N`, its share
of the machine's: the other workers run tests too). Each worker is a forked copy of the test's
process (its models, and any patch the test made, as they are) that counts its share of the seeds
with one torch thread, as DataLoader workers do. The counts are the ones a single loop over every
seed gives; only the wall time changes. With one core to use, or without fork (Windows), one loop."""

import multiprocessing
import os
from collections import Counter

import torch

_count = None  # the function the forked workers run, set just before they fork


def _counted(seeds: range) -> Counter:
    return Counter(_count(seeds))


def _one_thread() -> None:
    torch.set_num_threads(1)


def counts_over_seeds(count, samples: int) -> dict:
    """`count(seeds)` -> {outcome: count} over `range(samples)`, summed over the workers' shares."""
    global _count
    workers = min((os.cpu_count() or 1) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", 1)), 4)
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return dict(count(range(samples)))
    _count = count
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=_one_thread)
    try:
        shares = pool.map(_counted, [range(first, samples, workers) for first in range(workers)])
    finally:
        _count = None
        # Not `with Pool`, which ends the workers by SIGTERM: a worker inherits the test process's
        # handlers (the CLI's raises SystemExit), and one that exits mid-queue can leave the queue's
        # lock held, so the pool waited forever for its sibling. Closed, each leaves at the queue's end.
        pool.close()
        pool.join()
    return dict(sum(shares, Counter()))
