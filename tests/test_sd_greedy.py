import copy
import math

import pytest
import torch

import playground
from playground.models.tiny import loaded


def run(family, method, prompt="hello there", **options):
    options = {"max_new_tokens": 40, "temperature": 0, "target": family["target"], "draft": family["draft"],
               "qualifier": family["qualifier"]} | options
    return playground.generate(prompt, method=method, **options)


def ids(result):
    return [t.id for t in result.tokens]


@pytest.fixture(scope="module")
def near_draft(family):
    """The target with noise on its output layer: it picks the target's greedy token often, not
    always. (The tiny family's own draft agrees with no greedy token of the target, so sd with it
    emits only the target's corrections: equal to ar whatever sd does with an accepted token.)"""
    model = copy.deepcopy(family["target"].model)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        weight = model.lm_head.weight
        weight.add_(torch.randn(weight.shape, generator=generator) * weight.std() * 2)
    return loaded("tiny-near-draft", model, family["target"].tokenizer)


def test_greedy_sd_matches_target_greedy(family, near_draft):
    reference = run(family, "ar")
    assert len(reference.tokens) == 40
    for k in (1, 3, 7):
        result = run(family, "sd", candidates=k, draft=near_draft)
        assert ids(result) == ids(reference), f"K={k}"
        # every path ran: kept draft tokens, corrections, and bonus tokens after fully kept blocks
        assert 0 < result.stats.accepted < result.stats.drafted, f"K={k}"
        assert any(t.bonus for t in result.tokens), f"K={k}"


@pytest.mark.parametrize("tree_width", [1, 3], ids=["chain", "tree"])
def test_greedy_fsd_threshold_zero_accepts_nothing_and_matches_target(family, tree_width):
    result = run(family, "fsd", tau=0.0, candidates=4, tree_width=tree_width)
    assert ids(result) == ids(run(family, "ar"))
    assert result.stats.accepted == 0
    assert {t.origin for t in result.tokens} == {"target"}


@pytest.mark.parametrize("tree_width", [1, 2], ids=["chain", "tree"])
def test_fsd_threshold_above_maximum_accepts_every_candidate(family, tree_width):
    """Every node passes, so each round keeps its first path whole (a tree's siblings are never
    needed) and the only target tokens are bonus tokens."""
    for divergence, tau in (("js", math.log(2) + 1e-3), ("tv", 1.001)):
        result = run(family, "fsd", tau=tau, divergence=divergence, candidates=4, tree_width=tree_width)
        assert all(check.verdict == "accepted" for step in result.steps for check in step.evidence)
        assert all(t.branch == 0 for t in result.tokens if t.origin == "draft")
        assert result.stats.acceptance_rate == 1.0 or tree_width > 1
        bonus = [t for t in result.tokens if t.origin == "target"]
        assert all(t.bonus for t in bonus)


def test_fsd_random_acceptance_control_accepts_about_its_rate(family):
    """Per candidate checked (on a tree, the walk checks a node's children until one passes)."""
    results = [run(family, "fsd", random_accept=0.5, candidates=4, max_new_tokens=200, seed=seed) for seed in range(4)]
    checks = [check for result in results for step in result.steps for check in step.evidence]
    assert len(checks) > 40 and 0.3 < sum(check.verdict == "accepted" for check in checks) / len(checks) < 0.7


# prompts whose greedy answers on the tiny family run past 13 tokens with each kind of block
@pytest.mark.parametrize(("draft_confidence", "prompt"), [(0.6, "once upon"), (0.0, "hello there")],
                         ids=["confidence-ended-blocks", "full-blocks"])
def test_max_new_tokens_is_exact_including_bonus_tokens(family, draft_confidence, prompt):
    for limit in (1, 2, 5, 13):
        result = run(family, "fsd", tau=1.0, candidates=4, max_new_tokens=limit, draft_confidence=draft_confidence,
                     prompt=prompt)
        assert len(result.tokens) == limit and result.stop_reason == "max_new_tokens"


def test_stats_agree_with_the_token_records(family, near_draft):
    """A chain drafts one candidate per draft forward."""
    result = run(family, "sd", draft=near_draft, candidates=3, temperature=1.0, max_new_tokens=60, tree_width=1)
    stats = agreeing_stats(result, family)
    assert stats["drafted"] == stats["forwards"]["draft"]


def test_a_trees_stats_agree_with_its_token_records(family, near_draft):
    """A tree's drafted candidates are its nodes: more than its draft forwards (the chain's),
    since siblings and the lookup branch cost none."""
    result = run(family, "sd", draft=near_draft, candidates=3, temperature=1.0, max_new_tokens=60, tree_width=2,
                 seed=1)  # seed 0 meets EOS after 17 tokens
    stats = agreeing_stats(result, family)
    assert stats["drafted"] == sum(len(step.extra["tree"]["tokens"]) for step in result.steps) \
        > stats["forwards"]["draft"]


def agreeing_stats(result, family) -> dict:
    """The run's statistics, checked against what its own tokens say, counted another way."""
    stats = result.stats.to_dict()
    corrections = sum(t.is_correction for t in result.tokens)
    bonuses = sum(bool(t.bonus) for t in result.tokens)
    assert stats["accepted"] == sum(t.origin == "draft" for t in result.tokens) > 0
    assert corrections > 0 and bonuses > 0
    assert stats["steps"] == stats["forwards"]["target"] == corrections + bonuses  # one of them ends each round
    assert stats["tokens"] == len(result.tokens) == 60
    assert stats["origin_counts"] == {"draft": stats["accepted"], "qualifier": 0, "target": corrections + bonuses,
                                      "rescued": 0}
    # per drafted block, how many draft tokens lead it
    leading = [next((i for i, t in enumerate(s.tokens) if t.origin != "draft"), len(s.tokens))
               for s in result.steps if s.drafted]
    assert stats["acceptance_length_histogram"] == {str(n): leading.count(n) for n in sorted(set(leading))}
    # as text.py shows it
    assert result.text == family["target"].tokenizer.decode(ids(result), skip_special_tokens=True)
    return stats
