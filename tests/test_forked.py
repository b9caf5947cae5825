"""The sampling tests' fork split counts what one loop over the seeds counts."""

import os

import pytest

from .forked import counts_over_seeds


def outcome_and_process(seeds: range) -> dict:
    counts = {}
    for seed in seeds:
        key = (seed % 3, os.getpid())
        counts[key] = counts.get(key, 0) + 1
    return counts


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: the seeds are never split")
def test_the_split_counts_what_one_loop_counts(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)  # as under `pytest -n 0`
    counts = counts_over_seeds(outcome_and_process, 100)
    outcomes = {}
    for (outcome, _), n in counts.items():
        outcomes[outcome] = outcomes.get(outcome, 0) + n
    assert outcomes == {0: 34, 1: 33, 2: 33}
    assert os.getpid() not in {process for _, process in counts}, "counted by forked workers, not in this process"


def test_a_process_with_one_core_to_use_counts_in_one_loop(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(os.cpu_count() or 1))
    assert {process for _, process in counts_over_seeds(outcome_and_process, 10)} == {os.getpid()}
