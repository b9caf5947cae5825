"""How often a round waits for a value on the host (a GPU's sync points), counted on the CPU."""

import pytest
import torch

import playground
from playground.measure.host_syncs import HostSyncCounter, syncs_per_round

PROMPT = "the cat sat on the mat"


def sd_rounds(family, method="sd", **options) -> tuple[list[int], list]:
    """Syncs per round, and the rounds themselves, of one run (sd unless named) at t = 0.7."""
    steps = []
    roles = playground.METHODS[method].roles
    models = {role: family[role] for role in ("target", "draft", "qualifier") if role in roles}

    def counted():
        for step, _ in playground.stream(PROMPT, method=method, **models,
                                         max_new_tokens=24, temperature=0.7, seed=3, **options):
            steps.append(step)
            yield step
    per_round, _ = syncs_per_round(counted())
    return per_round, steps


def test_the_counter_counts_reads_of_a_value_and_nothing_else():
    values = torch.arange(6.0)
    with HostSyncCounter() as counter:
        doubled = values * 2  # stays a tensor
        doubled.argmax()
    assert counter.total == 0
    with HostSyncCounter() as counter:
        float(doubled[1])
        doubled.tolist()
        doubled.nonzero()
    assert counter.by_kind == {"item": 1, "tolist": 1, "nonzero": 1}


@pytest.mark.parametrize("width", [1, 2, 3], ids=["chain", "tree2", "tree3"])
def test_a_round_waits_twice_when_its_shape_is_fixed(family, width):
    """With no confidence stop the draft is read once, at the end of its block, and the checks once."""
    per_round, steps = sd_rounds(family, tree_width=width, draft_confidence=0.0)
    assert len(per_round) > 3 and max(per_round) <= 2, per_round
    assert any(step.drafted > width for step in steps)  # real blocks were drafted and checked


@pytest.mark.parametrize("method", ["csd", "fsd", "tli"])
@pytest.mark.parametrize("width", [1, 2], ids=["chain", "tree2"])
def test_every_method_on_the_walk_waits_twice_a_round(family, method, width):
    """The walk is every method's: its draft read once, its checks once (csd's rescue reads
    nothing more; the first round also sets tli's vocabulary map up)."""
    per_round, steps = sd_rounds(family, method, tree_width=width, draft_confidence=0.0)
    assert len(per_round) > 3 and max(per_round[1:]) <= 2, per_round
    assert method != "csd" or any(t.origin == "rescued" or t.is_correction for s in steps for t in s.tokens)


def test_a_pyramid_round_waits_twice_per_qualifier_round_and_once_for_the_target(family):
    per_round, steps = sd_rounds(family, "psd-f", tree_width=2, draft_confidence=0.0)
    allowed = [2 * step.extra["qualifier_rounds"] + 1 for step in steps]
    assert len(per_round) > 2 and all(s <= a for s, a in zip(per_round, allowed)), (per_round, allowed)


def test_a_prompt_lookup_round_waits_once(family):
    """The lookup drafts on the host from ids it already has: only the checks are read."""
    per_round, steps = sd_rounds({**family, "draft": "ngram"})
    assert max(per_round) <= 1 and any(step.drafted for step in steps), per_round


def test_a_confidence_stop_reads_once_per_drafted_token(family):
    """Stopping after a doubted token is the host's decision: one read per draft forward, plus the checks."""
    per_round, steps = sd_rounds(family, tree_width=2, draft_confidence=0.5)
    forwards = [step.forwards["draft"] for step in steps]
    assert all(syncs <= drafted + 1 for syncs, drafted in zip(per_round, forwards)), (per_round, forwards)


def test_the_evidence_is_read_only_when_someone_looks(family):
    per_round, steps = sd_rounds(family, tree_width=2, draft_confidence=0.0)
    with HostSyncCounter() as counter:
        checks = list(steps[0].evidence)
    assert counter.total == 1 and checks and all(e.top["p"] for e in checks)
