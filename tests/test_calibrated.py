"""Calibrated SD (seed 003, Algorithm 1): reduction to SD, rescue conditions, the memory."""

import argparse
import json
import math

import pytest
import torch

import playground
from playground.deploy.prompt_guard import format_prompt
from playground.measure.calibrate import DEFAULT_CORPUS, calibrate, read_corpus, register
from playground.methods.correction_memory import CorrectionMemory, load_memory

PROMPT = "hello there"
PAIR = ("tiny-target", "tiny-draft")


def run(family, method, **options):
    options.setdefault("max_new_tokens", 60)
    options.setdefault("temperature", 1.0)
    return playground.generate(PROMPT, target=family["target"], draft=family["draft"], method=method, **options)


def ids(result):
    return [t.id for t in result.tokens]


@pytest.fixture
def memory():
    return CorrectionMemory(*PAIR)


@pytest.mark.parametrize("levers", [{}, {"draft_vocab": 8}, {"draft_confidence": 0.0, "draft_int8": False}],
                         ids=["defaults", "pruned-head", "levers-off"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lambda_infinity_is_standard_sd_when_sampling(family, seed, levers):
    """The paper's limit with every other setting at its default (and the pruned head the tiny
    family's default cannot reach): the same draws, token for token."""
    calibrated = run(family, "csd", lambda_=math.inf, seed=seed, candidates=4, **levers)
    standard = run(family, "sd", seed=seed, candidates=4, **levers)
    assert calibrated.config.to_dict() | {"method": "sd", "lambda_": math.inf} \
        == standard.config.to_dict() | {"lambda_": math.inf}
    assert ids(calibrated) == ids(standard)
    assert calibrated.stats.accepted == standard.stats.accepted
    assert "rescued" not in {t.origin for t in calibrated.tokens}


def test_rescued_tokens_met_both_conditions(family, memory):
    result = run(family, "csd", lambda_=1, gate_tau=0.05, max_new_tokens=150, seed=4, correction_memory=memory)
    rescued = [(i, t) for i, t in enumerate(result.tokens) if t.origin == "rescued"]
    assert rescued, "the tiny family should produce some rescues at lambda = 1"
    sequence = format_prompt(family["target"].tokenizer, PROMPT, True) + ids(result)
    start = len(sequence) - len(result.tokens)
    with torch.inference_mode():
        logits = family["target"].model(input_ids=torch.tensor([sequence])).logits[0, start - 1:-1].float()
    for i, token in rescued:
        d = token.diagnostics
        assert d["is_freq"] and d["is_safe"] and d["memory_count"] >= 1
        gap = float(logits[i, token.id] - logits[i, d["correction"]])  # Eq. 3 on raw logits
        assert d["logit_gap"] == pytest.approx(gap, abs=1e-3)
        assert gap >= math.log(0.05)
    # a rejected candidate that was not rescued failed at least one condition
    for token in result.tokens:
        if token.is_correction:  # the rescue was tried on the first candidate, the draft's own token
            assert not (token.replaced[0]["is_freq"] and token.replaced[0]["is_safe"])


@pytest.mark.parametrize("tree_width", [1, 2], ids=["chain", "tree"])
def test_memory_counts_every_rejection_and_the_counts_replay(family, memory, tree_width):
    """One count per rescue attempt: a chain's rejected candidate, a tree's node whose candidates
    were all rejected (paired with the draft's own token, the first)."""
    result = run(family, "csd", lambda_=2, gate_tau=0.01, max_new_tokens=120, seed=5, candidates=5,
                 correction_memory=memory, tree_width=tree_width)
    rejections = sum((False in s.accepted_flags) + s.extra["rescued"] for s in result.steps)
    assert memory.total == rejections == result.steps[-1].extra["memory_rejections"]
    seen = CorrectionMemory(*PAIR)
    for token in result.tokens:  # memory_count is the count before this rejection
        tried = token.replaced[0] if token.is_correction else token.diagnostics  # a rescued token is the draft's own
        if "correction" in tried:
            draft_token = tried.get("id", token.id)
            assert tried["memory_count"] == seen.count(draft_token, tried["correction"])
            seen.update(draft_token, tried["correction"])
    assert seen.counts == memory.counts


def test_rescued_tokens_count_as_accepted(family):
    """In a chain every drafted candidate is checked until one is rejected: with every rejection
    rescued, all are accepted."""
    result = run(family, "csd-gate", gate_tau=0.0, candidates=4, max_new_tokens=40, tree_width=1)
    assert result.stats.acceptance_rate == 1.0
    assert "rescued" in {t.origin for t in result.tokens}


def test_memory_ablation_rescues_on_frequency_alone(family, memory):
    result = run(family, "csd-memory", lambda_=0, candidates=4, max_new_tokens=40, correction_memory=memory,
                 tree_width=1)
    assert result.stats.acceptance_rate == 1.0
    assert all(t.diagnostics["is_freq"] for t in result.tokens if t.origin == "rescued")


@pytest.mark.parametrize(("method", "options"), [("csd-gate", {"gate_tau": 0.0}), ("csd-memory", {"lambda_": 0})])
def test_on_a_tree_a_rescue_that_always_passes_ends_every_round_on_its_bonus(family, memory, method, options):
    """A tree's siblings beside the kept path are drafted and never accepted, so its acceptance
    rate stays under 1; but every node whose candidates were all rejected is rescued: each round
    keeps its whole path (rescued tokens count as accepted) and ends on the bonus token."""
    result = run(family, method, candidates=4, max_new_tokens=40, correction_memory=memory, tree_width=2, **options)
    assert "rescued" in {t.origin for t in result.tokens}
    assert all(all(step.accepted_flags) for step in result.steps)
    assert all(t.bonus for t in result.tokens if t.origin == "target")
    for step in result.steps[:-1]:  # the last step's tokens may be cut at EOS or the length limit
        assert step.accepted == sum(t.origin in ("draft", "rescued") for t in step.tokens) == len(step.tokens) - 1


def test_save_and_load_round_trip(tmp_path, family):
    memory = CorrectionMemory(*PAIR, {(3, 4): 5, (7, 2): 1})
    path = memory.save(tmp_path / "memory.json")
    loaded = load_memory(path, *PAIR)
    assert loaded.counts == memory.counts and loaded.pair == memory.pair
    assert loaded.top_pairs(1) == [(3, 4, 5)]
    tokenizer = family["target"].tokenizer
    assert loaded.top_pairs(1, tokenizer) == [(tokenizer.decode([3]), tokenizer.decode([4]), 5)]


def test_a_memory_for_another_pair_is_refused(tmp_path, family):
    path = CorrectionMemory("other-target", "tiny-draft", {(3, 4): 5}).save(tmp_path / "memory.json")
    with pytest.raises(playground.PlaygroundError, match="calibrated for target 'other-target'"):
        load_memory(path, *PAIR)
    with pytest.raises(playground.PlaygroundError, match="calibrated for"):
        run(family, "csd", memory=str(path))


def test_a_loaded_memory_starts_the_run(tmp_path, family):
    calibrated = CorrectionMemory(*PAIR)
    calibrated.observe(run(family, "sd", max_new_tokens=200, seed=9).tokens)
    path = calibrated.save(tmp_path / "memory.json")
    def rescued(**memory):  # over a few seeds: one run's rescues are few and depend on its draws
        return sum(run(family, "csd", lambda_=3, gate_tau=0.01, seed=seed, **memory).stats.origins["rescued"]
                   for seed in range(4, 10))
    assert rescued(memory=str(path)) > rescued()


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "malformed"),
    (json.dumps({"format": "csd-correction-memory", "version": 1, "target": "t", "draft": "d",
                 "pairs": [[1, 2, -3]]}), "positive count"),
    (json.dumps({"format": "csd-correction-memory", "version": 9, "target": "t", "draft": "d",
                 "pairs": []}), "unsupported version"),
])
def test_malformed_memory_files_give_one_line_errors(tmp_path, content, message):
    path = tmp_path / "memory.json"
    path.write_text(content)
    with pytest.raises(playground.PlaygroundError, match=message) as error:
        load_memory(path)
    assert "\n" not in str(error.value)


def test_missing_memory_file_is_a_clear_error(tmp_path):
    with pytest.raises(playground.PlaygroundError, match="not found"):
        load_memory(tmp_path / "absent.json")


def test_calibration_counts_the_rejections_of_standard_sd(tmp_path, family):
    assert len(read_corpus(DEFAULT_CORPUS)) >= 50
    memory = CorrectionMemory(*PAIR)
    counted = calibrate(["hello there", "what is it?"], memory, target=family["target"], draft=family["draft"],
                        progress=False, max_new_tokens=30, temperature=0)
    assert counted == memory.total > 0
    reference = sum(1 for prompt in ("hello there", "what is it?") for t in playground.generate(
        prompt, target=family["target"], draft=family["draft"], method="sd", max_new_tokens=30).tokens
        if t.origin == "target" and not t.bonus)  # the corrections, chain or tree
    assert counted == reference
    with pytest.raises(playground.PlaygroundError, match="this memory is for target"):
        calibrate(["hi"], CorrectionMemory("other", "tiny-draft"), target=family["target"], draft=family["draft"])
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["calibrate", "--out", str(tmp_path / "m.json"), "--limit", "2"])
    assert args.limit == 2 and args.run


def test_corpus_errors_are_one_line(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n")
    with pytest.raises(playground.PlaygroundError, match="no prompts"):
        read_corpus(empty)
    with pytest.raises(playground.PlaygroundError, match="not found"):
        read_corpus(tmp_path / "absent.txt")


def test_a_given_memory_keeps_learning_across_runs(family, memory):
    run(family, "csd", max_new_tokens=30, correction_memory=memory)
    after_one = memory.total
    run(family, "csd", max_new_tokens=30, seed=1, correction_memory=memory)
    assert 0 < after_one < memory.total


def test_without_a_given_memory_every_run_starts_from_an_empty_one(family, memory):
    """No memory hides in the process: a run learns only into the memory its caller gives it."""
    run(family, "csd", max_new_tokens=30, correction_memory=memory)
    first, second = (run(family, "csd", lambda_=1, gate_tau=0.0, max_new_tokens=60, seed=4) for _ in range(2))
    assert ids(first) == ids(second)
    for result in (first, second):
        rejections = sum((False in s.accepted_flags) + s.extra["rescued"] for s in result.steps)
        assert result.steps[-1].extra["memory_rejections"] == rejections > 0
