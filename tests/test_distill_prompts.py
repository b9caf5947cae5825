"""The embedded students' training prompts never include a held-out prompt, so the agreement that
tests/test_embedded.py re-measures is measured on prompts the recipe did not train on."""

import torch
from distill_prompts import HELD_OUT, extra_prompts, is_held_out, training_prompts
from embedded_recipe import data

SEED = 20261122


def test_templated_prompts_are_distinct_and_not_held_out():
    base = training_prompts(640, SEED)
    extra = extra_prompts(1920, SEED, exclude=base)
    assert len(set(base)) == 640 and len(set(extra)) == 1920
    assert not set(base) & set(extra)
    assert not any(is_held_out(prompt) for prompt in base + extra)


def test_held_out_check_ignores_case_spacing_and_punctuation():
    prompt = HELD_OUT[0]
    assert is_held_out(prompt) and is_held_out(prompt.upper().replace(" ", "  ").rstrip("?!."))
    assert not is_held_out(prompt + " And of Spain?")


def test_prompt_sets_are_reproducible():
    assert training_prompts(64, SEED) == training_prompts(64, SEED) != training_prompts(64, SEED + 1)


def test_the_stored_questions_the_target_wrote_are_distinct_and_not_held_out():
    questions = torch.load(data.DATA_DIR / "prompts-self.pt")
    assert len(set(questions)) == len(questions) >= data.SELF_PROMPTS
    assert not any(is_held_out(question) for question in questions)


def test_a_longer_stored_run_of_questions_serves_a_smaller_count(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "DATA_DIR", tmp_path)
    monkeypatch.setattr(data, "SELF_PROMPTS", 2)
    torch.save(["one two three", "four five six", "seven eight nine"], tmp_path / "prompts-self.pt")
    assert data.own_prompts(target=None, tokenizer=None) == ["one two three", "four five six"]
