"""The SD acceptance rule on seed 001's worked example, and the KV cache against recompute."""

from collections import Counter

import pytest
import torch

from playground.config import RunConfig
from playground.decoding.cache import KVRunner
from playground.decoding.sampling import Sampler, residual
from playground.methods import Decoding
from playground.methods.rules import ResidualRatio
from playground.models.tiny import tiny_llama

from .forked import counts_over_seeds
from .walk_checks import check_candidate

P = torch.tensor([0.6, 0.3, 0.1])  # target over {A, B, C}
Q = torch.tensor([0.4, 0.4, 0.2])  # draft


def check_for(seed=0):
    ctx = Decoding(RunConfig(temperature=1.0), Sampler(temperature=1.0, seed=seed), None, [], 0)
    return (lambda token: check_candidate(ctx, ResidualRatio(), token, P, Q).records[0]), ctx.sampler


def test_worked_example_acceptance_probabilities_and_residual():
    check, _ = check_for()
    records = [check(token) for token in range(3)]
    accept = [(r.diagnostics if r.origin == "draft" else r.replaced[0])["accept_prob"] for r in records]
    assert accept == pytest.approx([1.0, 0.75, 0.5])
    assert torch.equal(residual(P, Q), torch.tensor([1.0, 0.0, 0.0]))


@pytest.mark.slow
def test_worked_example_output_distribution_is_the_target():
    """Draw from q, verify, emit: the frequencies must be p (20,000 draws, 4-sigma tolerance)."""
    draws = 20_000

    def count(share: range) -> Counter:
        check, sampler = check_for(seed=7 + share.start)
        return Counter(check(sampler.draw(Q)).id for _ in share)
    emitted = counts_over_seeds(count, draws)
    counts = torch.tensor([emitted.get(token, 0) for token in range(3)], dtype=torch.float)
    tolerance = 4 * torch.sqrt(P * (1 - P) / draws)
    assert torch.all((counts / draws - P).abs() < tolerance)


def test_rollback_then_refeed_equals_full_recompute():
    model = tiny_llama(40, layers=2, hidden=32, seed=5)
    runner = KVRunner(model)
    sequence = list(range(2, 30))
    runner.next_logits(sequence[:20], positions=4)
    runner.next_logits(sequence[:12] + [7, 7, 7], positions=2)  # diverges at 12: rolls back
    runner.rollback(9)
    assert runner.cache.get_seq_length() == 9
    logits = runner.next_logits(sequence, positions=6)
    with torch.no_grad():
        full = model(torch.tensor([sequence])).logits[0, -6:]
    assert torch.allclose(logits, full, atol=1e-5)
    assert runner.cache.get_seq_length() == len(sequence)
