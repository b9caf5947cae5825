"""Sampling SD is lossless: the first two generated tokens follow the target's exact joint
distribution. Tiny vocabulary so the joint is enumerable; a chi-square test at level 1e-3."""

import itertools
from dataclasses import replace

import pytest
import torch

import playground
from playground.decoding.cache import KVRunner
from playground.decoding.draft_vocab import pruned_head
from playground.decoding.ngram import PromptLookup
from playground.decoding.sampling import Sampler
from playground.methods import METHODS, Decoding, drafting, walk
from playground.methods.draft_levers import draft_runner, draft_setup
from playground.models.tiny import char_tokenizer, loaded, tiny_llama

from .forked import counts_over_seeds

pytestmark = pytest.mark.slow  # thousands of sampled runs per test

SAMPLES = 1500
ALPHA = 1e-3  # a correct sampler fails this test once in a thousand seeds-of-the-suite


@pytest.fixture(scope="module")
def small_family():
    tokenizer = char_tokenizer("abcd")  # 6 tokens with <unk> and <eos>
    vocab = len(tokenizer)
    # eos id outside the vocabulary: every run yields exactly two tokens
    target = tiny_llama(vocab, layers=1, hidden=32, seed=11, eos_token_id=vocab + 1)
    draft = tiny_llama(vocab, layers=1, hidden=32, seed=12, eos_token_id=vocab + 1)
    for model in (target, draft):
        model.lm_head.weight.data.mul_(0.15)  # soften: the joint must have no near-empty cells
    return loaded("t", target, tokenizer), loaded("d", draft, tokenizer)


def exact_joint(target, settings, prompt_text="abc") -> dict[tuple[int, int], float]:
    sampler = Sampler(**settings)
    prompt = target.tokenizer(prompt_text).input_ids
    with torch.no_grad():
        first = sampler.probs(target.model(torch.tensor([prompt])).logits[0, -1])
        joint = {}
        for x1 in range(first.shape[0]):
            second = sampler.probs(target.model(torch.tensor([prompt + [x1]])).logits[0, -1])
            for x2 in range(second.shape[0]):
                joint[(x1, x2)] = float(first[x1] * second[x2])
    return joint


def sampled_pairs(family, settings, samples=SAMPLES, draft_sampling="sample", draft_vocab=0, every_lever=False,
                  prompt_text="abc", by_lookup=False, tree_width=1, method="sd") -> dict[tuple[int, int], int]:
    """Two-token SD runs, one per seed, driven straight through the method (no engine, so no
    stop at EOS). `every_lever`: the draft as the engine sets it up with the int8 layers, the
    pruned head of `draft_vocab` tokens and confidence-ended blocks (the RunConfig default).
    `by_lookup`: prompt-lookup drafts instead of the draft model; `tree_width` > 1: a token tree;
    `method`: sd, or another lossless method run through the same walk (csd at lambda = inf, tli)."""
    target, draft = family
    config = playground.RunConfig(method=method, lambda_=float("inf"), candidates=2, max_new_tokens=2,
                                  draft_sampling=draft_sampling,
                                  draft_vocab=draft_vocab, tree_width=tree_width, **settings)
    prompt = target.tokenizer(prompt_text).input_ids
    head = pruned_head(draft.model, draft.tokenizer, draft_vocab) if draft_vocab else None
    setup = draft_setup(config, METHODS["sd"], draft) if every_lever else None
    assert setup is None or (setup.config.draft_int8 and setup.config.draft_confidence > 0), setup

    def count(seeds: range) -> dict[tuple[int, int], int]:
        counts = {}
        for seed in seeds:
            drafter = draft_runner(setup.config, draft) if setup else KVRunner(draft.model, "draft", head=head)
            ctx = Decoding(config if setup is None else setup.config, Sampler(seed=seed, **settings),
                           KVRunner(target.model, "target"), list(prompt), len(prompt),
                           draft=None if by_lookup else drafter,
                           lookup=PromptLookup() if by_lookup else None, target_tokenizer=target.tokenizer,
                           draft_tokenizer=draft.tokenizer)
            emitted = []
            for step in METHODS[method].run(ctx):
                emitted += [t.id for t in step.tokens]
                ctx.ids += [t.id for t in step.tokens]
                if len(emitted) >= 2:
                    break
            counts[tuple(emitted[:2])] = counts.get(tuple(emitted[:2]), 0) + 1
        return counts
    return counts_over_seeds(count, samples)


def chi_square_p_value(counts, expected_probs, samples=SAMPLES) -> float:
    """Pearson's test; cells with expected count < 5 are pooled into one."""
    statistic, cells, pooled_expected, pooled_observed = 0.0, 0, 0.0, 0
    for pair, probability in expected_probs.items():
        expected, observed = probability * samples, counts.get(pair, 0)
        if expected < 5:
            pooled_expected += expected
            pooled_observed += observed
            continue
        statistic += (observed - expected) ** 2 / expected
        cells += 1
    if pooled_expected > 0:
        statistic += (pooled_observed - pooled_expected) ** 2 / pooled_expected
        cells += 1
    dof = torch.tensor((cells - 1) / 2, dtype=torch.float64)
    return float(torch.special.gammaincc(dof, torch.tensor(statistic / 2, dtype=torch.float64)))


def test_a_draw_follows_its_distribution_and_never_picks_a_token_without_mass():
    sampler, probs = Sampler(temperature=1.0, seed=5), torch.tensor([0.0, 0.1, 0.0, 0.45, 0.25, 0.2, 0.0])
    draws = [sampler.draw(probs) for _ in range(SAMPLES)]
    assert set(draws) == {1, 3, 4, 5}
    counts = {token: draws.count(token) for token in set(draws)}
    assert chi_square_p_value(counts, {token: float(p) for token, p in enumerate(probs) if p > 0}) > ALPHA
    assert {sampler.draw(torch.tensor([0.0, 0.0, 1.0])) for _ in range(20)} == {2}


SETTINGS = [
    {"temperature": 1.0},
    {"temperature": 0.7, "top_p": 0.9},
]


@pytest.mark.parametrize("settings", SETTINGS, ids=["t1", "t0.7-top_p0.9"])
def test_sampling_sd_matches_target_joint_distribution(small_family, settings):
    p_value = chi_square_p_value(sampled_pairs(small_family, settings), exact_joint(small_family[0], settings))
    assert p_value > ALPHA


def test_the_test_detects_a_wrong_residual(small_family, monkeypatch):
    monkeypatch.setattr(walk, "residual", lambda p, q: p)  # where the walk takes its residual
    settings = SETTINGS[0]
    p_value = chi_square_p_value(sampled_pairs(small_family, settings), exact_joint(small_family[0], settings))
    assert p_value < ALPHA


def test_greedy_drafting_is_lossless_when_q_is_the_one_hot_it_sampled(small_family):
    settings = SETTINGS[0]
    counts = sampled_pairs(small_family, settings, draft_sampling="greedy")
    assert chi_square_p_value(counts, exact_joint(small_family[0], settings)) > ALPHA


def test_the_test_detects_argmax_drafting_with_the_soft_q_in_the_ratio(small_family, monkeypatch):
    """The classic trap: draft by argmax but divide by the draft's soft distribution."""
    real_checks = walk.check_nodes

    def checks_with_soft_q(ctx, rule, drafted, p, p_raw, roles):
        return real_checks(ctx, rule, replace(drafted, q=drafted.q_raw), p, p_raw, roles)
    monkeypatch.setattr(walk, "check_nodes", checks_with_soft_q)  # the checks the walk runs with
    settings = SETTINGS[0]  # at temperature 1, q_raw is exactly the soft q
    counts = sampled_pairs(small_family, settings, draft_sampling="greedy")
    assert chi_square_p_value(counts, exact_joint(small_family[0], settings)) < ALPHA


def test_pruned_draft_head_is_lossless(small_family):
    """FR-Spec: the draft can propose only 3 of the 6 tokens (q = 0 for the rest, where p > 0);
    the residual over the full vocabulary must give those tokens back their probability."""
    settings = SETTINGS[0]
    counts = sampled_pairs(small_family, settings, draft_vocab=3)
    assert any(token >= 3 for pair in counts for token in pair if token != 1)  # pruned tokens still occur
    assert chi_square_p_value(counts, exact_joint(small_family[0], settings)) > ALPHA


@pytest.mark.parametrize("settings", SETTINGS, ids=["t1", "t0.7-top_p0.9"])
def test_sd_with_every_drafting_lever_is_lossless(small_family, settings):
    """int8 draft layers, a head pruned to 3 of 6 tokens and confidence-ended blocks at once."""
    counts = sampled_pairs(small_family, settings, draft_vocab=3, every_lever=True)
    assert chi_square_p_value(counts, exact_joint(small_family[0], settings)) > ALPHA


@pytest.mark.parametrize("settings", SETTINGS, ids=["t1", "t0.7-top_p0.9"])
def test_prompt_lookup_drafts_are_lossless(small_family, settings):
    """q one-hot on the looked-up token: accepted with p(x), else drawn from p without x."""
    target = small_family[0]
    counts = sampled_pairs(small_family, settings, prompt_text="abcab", by_lookup=True)
    assert chi_square_p_value(counts, exact_joint(target, settings, "abcab")) > ALPHA


def test_the_test_detects_a_residual_limited_to_the_pruned_vocabulary(small_family, monkeypatch):
    def pruned_residual(p, q):
        kept = (p - q).clamp_min(0) * (q > 0)
        return kept / kept.sum() if kept.sum() > 0 else q
    monkeypatch.setattr(walk, "residual", pruned_residual)
    settings = SETTINGS[0]
    counts = sampled_pairs(small_family, settings, draft_vocab=3)
    assert chi_square_p_value(counts, exact_joint(small_family[0], settings)) < ALPHA


TREE_SAMPLES = 5000
TREES = {  # settings, how the draft proposes, tree width, every lever, prompt
    "t1-width3": ({"temperature": 1.0}, "sample", 3, False, "abc"),
    "t0.7-top_p0.9-width4": ({"temperature": 0.7, "top_p": 0.9}, "sample", 4, False, "abc"),
    "t1-greedy-draft-width3": ({"temperature": 1.0}, "greedy", 3, False, "abc"),
    "t0.7-every-lever-width4": ({"temperature": 0.7}, "sample", 4, True, "abc"),
    "t1-width2-lookup-branch": ({"temperature": 1.0}, "sample", 2, False, "abcab"),  # "ab" occurred: a lookup branch
}


@pytest.mark.parametrize("name", TREES)
def test_token_tree_verification_is_lossless(small_family, name):
    """Siblings drawn without replacement from q (or picked by the draft's ranking when it drafts
    greedily) and a prompt lookup's branch, tried by recursive rejection sampling; the second
    token comes from the accepted node's own row of the tree pass."""
    settings, draft_sampling, width, every_lever, prompt = TREES[name]
    counts = sampled_pairs(small_family, settings, samples=TREE_SAMPLES, draft_sampling=draft_sampling,
                           tree_width=width, every_lever=every_lever, draft_vocab=3 if every_lever else 0,
                           prompt_text=prompt)
    assert chi_square_p_value(counts, exact_joint(small_family[0], settings, prompt), TREE_SAMPLES) > ALPHA


@pytest.mark.parametrize("method", ["csd", "tli"])
def test_the_other_lossless_methods_on_a_token_tree(small_family, method):
    """csd at lambda = inf and tli (its intersection here the whole vocabulary) verify trees
    through the same walk as sd: their output follows the target too (n = 5,000)."""
    settings = SETTINGS[0]
    counts = sampled_pairs(small_family, settings, samples=TREE_SAMPLES, tree_width=3, method=method)
    assert chi_square_p_value(counts, exact_joint(small_family[0], settings), TREE_SAMPLES) > ALPHA


def test_the_test_detects_the_iid_rule_on_siblings_drawn_without_replacement(small_family, monkeypatch):
    """The trap named in docs/rules.md, "Token trees": dividing by q itself, not by q without the earlier siblings."""
    real_siblings = drafting._siblings

    def siblings_claiming_q(ctx, q, q_raw, drawn, n):
        tokens, _, exist = real_siblings(ctx, q, q_raw, drawn, n)
        return tokens, [q] * n, exist
    monkeypatch.setattr(drafting, "_siblings", siblings_claiming_q)
    settings = SETTINGS[0]
    counts = sampled_pairs(small_family, settings, samples=TREE_SAMPLES, tree_width=3)
    assert chi_square_p_value(counts, exact_joint(small_family[0], settings), TREE_SAMPLES) < ALPHA


def test_joint_is_a_distribution(small_family):
    joint = exact_joint(small_family[0], SETTINGS[1])
    assert abs(sum(joint.values()) - 1) < 1e-5
    assert len(joint) == len(list(itertools.product(range(6), repeat=2)))
