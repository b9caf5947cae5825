"""PyramidSD (seed 002): limits of both thresholds, reductions to other methods, counts, caches."""

import math
from collections import Counter

import pytest
import torch

import playground
from playground.config import RunConfig
from playground.decoding.divergence import divergence
from playground.decoding.sampling import Sampler
from playground.decoding.speed.cost_model import predicted_throughput
from playground.deploy.prompt_guard import format_prompt
from playground.engine import _decoding, make_config
from playground.methods import METHODS, Decoding
from playground.methods.draft_levers import draft_setup
from playground.methods.pyramid import ASSISTED_RULES, pyramid_summary

from .forked import counts_over_seeds
from .walk_checks import check_candidate

PROMPT = "hello there"


def run(family, method, qualifier=None, **options):
    options.setdefault("max_new_tokens", 40)
    options.setdefault("temperature", 0)
    return playground.generate(PROMPT, target=family["target"], draft=family["draft"],
                               qualifier=qualifier or family["qualifier"], method=method, **options)


def ids(result):
    return [t.id for t in result.tokens]


@pytest.mark.parametrize("method", ["psd-f", "psd-a"])
def test_tau_t_zero_emits_only_target_tokens_and_matches_target_greedy(family, method):
    result = run(family, method, tau_t=0.0, tau_q=0.6)
    assert {t.origin for t in result.tokens} == {"target"}
    assert ids(result) == ids(run(family, "ar"))


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_psd_f_tau_q_zero_lets_no_draft_token_reach_the_target(family, temperature):
    result = run(family, "psd-f", tau_q=0.0, tau_t=1.0, temperature=temperature)
    assert "draft" not in {t.origin for t in result.tokens}
    assert sum(step.extra["qualifier_accepted"] for step in result.steps) == 0


@pytest.mark.parametrize(("draft_length", "qualifier_length"), [(1, 1), (2, 5), (3, 6), (4, 3)])
def test_psd_a_with_the_target_as_qualifier_is_target_greedy(family, draft_length, qualifier_length):
    result = run(family, "psd-a", qualifier=family["target"], draft_length=draft_length,
                 qualifier_length=qualifier_length, tau_t=0.5)
    assert ids(result) == ids(run(family, "ar"))


@pytest.mark.parametrize("tau", [0.3, 0.55, 0.7])
def test_psd_f_with_the_draft_as_qualifier_is_fsd_with_tau_t(family, tau):
    """Q = D: stage 1 passes D's own continuation (Div(Q, D) = 0), and stage 2 is FSD between T
    and D with K = l_Q, token for token when greedy. The reduction needs D as loaded, full blocks
    and chains: a confidence-ended block ends fsd's verification round but not PyramidSD's
    collection, an int8 D is not the qualifier D, and fsd's walk may keep a sibling where stage 2
    verifies the one chain stage 1 collected. (Sampling, the two differ in the draws they make:
    every walk draws each of its rows' final tokens up front, and stage 1 is a walk of its own.)"""
    same_draft = {"draft_confidence": 0.0, "draft_int8": False, "tree_width": 1}
    pyramid = run(family, "psd-f", qualifier=family["draft"], tau_q=0.1, tau_t=tau, draft_length=2,
                  qualifier_length=5, seed=7, **same_draft)
    fuzzy = run(family, "fsd", tau=tau, candidates=5, seed=7, **same_draft)
    assert ids(pyramid) == ids(fuzzy)
    assert pyramid.stats.accepted == fuzzy.stats.accepted


def test_psd_f_with_the_target_as_qualifier_applies_the_fsd_rule_with_tau_q(family):
    """Q = T, tau_T above JS's maximum: a draft token is kept iff Div(P_T, P_D) <= tau_Q, every
    other token is the target's greedy choice. (Not token for token equal to `fsd`: T's bonus
    after each stage 2 sits where fsd would draft again.)"""
    tau_q = 0.55
    result = run(family, "psd-f", qualifier=family["target"], tau_q=tau_q, tau_t=1.0,
                 max_new_tokens=60, tree_width=1)
    sequence = format_prompt(family["target"].tokenizer, PROMPT, True) + ids(result)
    start = len(sequence) - len(result.tokens)
    target_logits = full_logits(family["target"], sequence)[start - 1:-1]
    draft_logits = full_logits(family["draft"], sequence)[start - 1:-1]
    js = divergence("js", torch.softmax(target_logits, -1), torch.softmax(draft_logits, -1))
    origins = [t.origin for t in result.tokens]
    assert "draft" in origins and "target" in origins
    for i, token in enumerate(result.tokens):
        if token.origin == "draft":
            assert token.id == int(draft_logits[i].argmax())
            assert js[i] <= tau_q + 1e-5
        else:
            assert token.id == int(target_logits[i].argmax())


def test_psd_f_on_a_tree_keeps_only_draft_tokens_that_passed_stage_one(family):
    """Q = T as above, on a token tree in stage 1: a kept draft token may be a sibling, but each
    passed Div(P_T, its q) <= tau_Q, and every other token is the target's greedy choice."""
    tau_q = 0.55
    result = run(family, "psd-f", qualifier=family["target"], tau_q=tau_q, tau_t=1.0, max_new_tokens=60,
                 tree_width=2)
    sequence = format_prompt(family["target"].tokenizer, PROMPT, True) + ids(result)
    target_logits = full_logits(family["target"], sequence)[len(sequence) - len(result.tokens) - 1:-1]
    kept = [t for t in result.tokens if t.origin == "draft"]
    assert kept and any(t.diagnostics["qualifier_check"]["branch"] for t in kept)  # a sibling was kept
    assert all(t.diagnostics["qualifier_check"]["divergence"] <= tau_q for t in kept)
    assert all(t.id == int(target_logits[i].argmax()) for i, t in enumerate(result.tokens) if t.origin != "draft")


def full_logits(loaded, sequence):
    with torch.inference_mode():
        return loaded.model(input_ids=torch.tensor([sequence])).logits[0].float()


@pytest.mark.parametrize("tree_width", [1, 2])
def test_forward_counts_match_the_work_done(family, tree_width):
    calls = {role: 0 for role in ("target", "draft", "qualifier")}
    def counter(role):
        return lambda *_: calls.__setitem__(role, calls[role] + 1)

    hooks = [family[role].model.register_forward_pre_hook(counter(role)) for role in calls]
    try:
        result = run(family, "psd-a", temperature=1.0, draft_length=2, qualifier_length=5, max_new_tokens=50,
                     tree_width=tree_width)
    finally:
        for hook in hooks:
            hook.remove()
    timed = {"target": result.stats.account.timing_passes}  # the account's T(1) timings
    assert {role: sum(s.forwards[role] for s in result.steps) + timed.get(role, 0) for role in calls} == calls
    emitted = 0
    for step in result.steps:
        assert step.forwards["target"] == 1
        assert step.forwards["draft"] <= step.extra["qualifier_drafted"]  # a tree's siblings cost no forward
        assert step.forwards["draft"] == step.extra["qualifier_drafted"] or tree_width > 1
        assert step.forwards["qualifier"] == step.extra["qualifier_rounds"]
        assert step.drafted == min(5, 50 - emitted - 1)  # l_Q, or what the budget leaves
        assert step.extra["qualifier_rounds"] <= step.extra["qualifier_drafted"]
        emitted += len(step.tokens)
    siblings = sum(s.extra["qualifier_drafted"] - s.forwards["draft"] for s in result.steps)
    assert (siblings > 0) == (tree_width > 1)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["psd-f", "psd-a"])
def test_all_three_caches_match_a_full_recompute_after_a_long_run(family, method):
    # An int8 draft quantizes each call's activations with one scale, so a many-row recompute rounds
    # otherwise than one-row steps: the cache is checked on the float draft, with the other levers on.
    config = make_config(method=method, temperature=1.0, seed=3, max_new_tokens=150, tau_q=0.5, tau_t=0.6,
                         draft_length=3, qualifier_length=7, draft_int8=False, draft_confidence=0.6)
    drafting = draft_setup(config, METHODS[method], family["draft"])  # the draft as stream sets it up
    ctx = _decoding(drafting.config, family, format_prompt(family["target"].tokenizer, PROMPT, True), METHODS[method],
                    drafting.runner)
    for step in METHODS[method].run(ctx):
        ctx.ids.extend(t.id for t in step.tokens)
    assert ctx.remaining() == 0
    for runner in (ctx.target, ctx.draft, ctx.qualifier):
        cached = runner.next_logits(ctx.ids, positions=6).float()
        assert torch.allclose(cached, full_logits(family[runner.name], ctx.ids)[-6:], atol=1e-4)


def test_origins_follow_the_model_that_produced_each_kept_token(family):
    result = run(family, "psd-f", tau_q=0.55, tau_t=0.6, temperature=1.0, max_new_tokens=80, seed=1)
    for token in result.tokens:
        if token.origin in ("draft", "qualifier"):
            assert token.diagnostics["divergence"] <= 0.6  # passed stage 2
            assert "qualifier_check" in token.diagnostics
        if token.origin == "draft":
            assert token.diagnostics["qualifier_check"]["divergence"] <= 0.55  # passed stage 1
    assert set(result.stats.origins) <= {"draft", "qualifier", "target"}


def test_summary_predicts_throughput_from_the_measured_rates(family):
    result = run(family, "psd-f", tau_q=0.55, tau_t=0.6, temperature=1.0, max_new_tokens=60, seed=2)
    summary = pyramid_summary(result)
    assert summary["beta_tq"] == result.stats.acceptance_rate
    assert 0 < summary["beta_qd"] <= 1
    speeds = summary["tokens_per_second_by_model"]
    assert all(speed > 0 for speed in speeds.values())
    v_fsd_qd = predicted_throughput(summary["beta_qd"], 2, speeds["draft"], speeds["qualifier"])
    assert summary["predicted_tokens_per_second"] == pytest.approx(
        predicted_throughput(summary["beta_tq"], 6, v_fsd_qd, speeds["target"]))
    assert summary["measured_tokens_per_second"] > 0
    # Leviathan's tokens per verification, sum of beta^i for i = 0..l, is not always above the
    # paper's beta * (l + 1) (it is below at beta 0.19, l 6): check the formula, not an order
    v_fsd_qd = predicted_throughput(summary["beta_qd"], 2, speeds["draft"], speeds["qualifier"], "leviathan")
    assert summary["predicted_tokens_per_second_leviathan"] == pytest.approx(
        predicted_throughput(summary["beta_tq"], 6, v_fsd_qd, speeds["target"], "leviathan"))


def test_predicted_throughput_is_the_papers_formula():
    # Section 3.3: beta * (l + 1) / (l / V_small + 1 / V_large)
    assert predicted_throughput(0.8, 4, 100.0, 20.0) == pytest.approx(0.8 * 5 / (4 / 100 + 1 / 20))
    assert predicted_throughput(1.0, 3, 0.0, 10.0) == 0.0
    # Leviathan's expectation counts the verifier's token: one per step at beta = 0
    assert predicted_throughput(0.0, 4, 100.0, 20.0, "leviathan") == pytest.approx(1 / (4 / 100 + 1 / 20))


@pytest.mark.parametrize("method", ["psd-f", "psd-a"])
def test_max_new_tokens_is_exact(family, method):
    for limit in (1, 2, 7, 13):
        result = run(family, method, tau_q=0.6, tau_t=0.7, max_new_tokens=limit, qualifier_length=5)
        assert len(result.tokens) == limit or (result.stop_reason == "eos" and len(result.tokens) < limit)


# Seed 001's example as a qualifier r over {A, B, C} checking a draft q.
R_TOY, Q_TOY = torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.4, 0.4, 0.2])


@pytest.mark.slow
@pytest.mark.parametrize("rule, keep_b", [("sample-qualifier", 0.3), ("residual", 0.75)])
def test_psd_a_stage_one_emits_a_draw_from_the_qualifier_under_either_rule(rule, keep_b):
    """By hand: the paper's rule keeps a drafted B only when r's own draw is B (r(B) = 0.3); the SD
    rule keeps it with min(1, r/q) = 0.75. Both emit tokens distributed as r. 20,000 draws, 4 sigma."""
    check, draws = ASSISTED_RULES[rule](), 20_000

    def count(share: range) -> Counter:
        ctx = Decoding(RunConfig(temperature=1.0, assisted_rule=rule), Sampler(temperature=1.0, seed=11 + share.start),
                       None, [], 0)
        counts = Counter()
        for _ in share:
            token = ctx.sampler.draw(Q_TOY)
            walk = check_candidate(ctx, check, token, R_TOY, Q_TOY)
            counts[walk.records[0].id] += 1
            counts["drafted B"] += token == 1
            counts["kept B"] += token == 1 and bool(walk.path)
        return counts
    counts = counts_over_seeds(count, draws)
    emitted = torch.tensor([counts.get(token, 0) for token in range(3)], dtype=torch.float)
    kept_b, drafted_b = counts["kept B"], counts["drafted B"]
    assert abs(kept_b / drafted_b - keep_b) < 4 * math.sqrt(keep_b * (1 - keep_b) / drafted_b)
    assert torch.all((emitted / draws - R_TOY).abs() < 4 * torch.sqrt(R_TOY * (1 - R_TOY) / draws))


def test_psd_a_runs_the_papers_rule_unless_told_otherwise():
    assert RunConfig().assisted_rule == "sample-qualifier"
    assert "assisted_rule" in METHODS["psd-a"].options and "assisted_rule" not in METHODS["psd-f"].options
