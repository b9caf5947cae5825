"""Output layers padded past the tokenizer (e.g. Qwen2.5 0.5B: 151,936 rows, 7B: 152,064, one
tokenizer of 151,665 ids): padded ids are never emitted, and `verify_block` cutting p and q to the
smaller vocabulary drops only zeros, so it cannot change a divergence or an accept decision."""

import pytest
import torch

import playground
from playground.decoding.cache import KVRunner
from playground.decoding.divergence import SCALES, divergence
from playground.decoding.sampling import Sampler, raw_probs, residual
from playground.models.tiny import loaded, tiny_llama

PROMPT = "hello there"
TARGET_PADDING, DRAFT_PADDING = 13, 5


def padded(tokenizer, padding: int, seed: int, layers: int, hidden: int):
    """A tiny model whose output layer has `padding` extra rows, each a loud copy of a real row:
    unmasked, the padded ids would take much of the probability mass."""
    model = tiny_llama(len(tokenizer) + padding, layers=layers, hidden=hidden, seed=seed)
    with torch.no_grad():
        model.lm_head.weight[len(tokenizer):] = 3 * model.lm_head.weight[2:2 + padding]
    return model


@pytest.fixture(scope="module")
def padded_pair(tokenizer):
    return (loaded("padded-target", padded(tokenizer, TARGET_PADDING, 1, 2, 64), tokenizer),
            loaded("padded-draft", padded(tokenizer, DRAFT_PADDING, 2, 1, 32), tokenizer))


def test_unmasked_padding_would_carry_real_mass(padded_pair, tokenizer):
    target, _ = padded_pair
    with torch.no_grad():
        logits = target.model(torch.tensor([tokenizer(PROMPT).input_ids])).logits[0, -1]
    assert float(raw_probs(logits)[len(tokenizer):].sum()) > 0.2  # so the next tests can fail


@pytest.mark.slow  # 24 runs
@pytest.mark.parametrize("method", ["ar", "sd", "fsd", "csd"])
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_padded_ids_are_never_emitted(padded_pair, tokenizer, method, temperature):
    target, draft = padded_pair
    for seed in range(3):
        run = playground.generate(PROMPT, target=target, draft=draft, method=method, temperature=temperature,
                                  max_new_tokens=40, seed=seed, tau=0.5, lambda_=1, draft_vocab=0)
        assert all(token.id < len(tokenizer) for token in run.tokens)
        candidates = [candidate for t in run.tokens for candidate in t.replaced_candidates]
        assert all(token < len(tokenizer) for token in candidates)


def test_greedy_sd_on_padded_models_is_still_the_target_alone(padded_pair):
    target, draft = padded_pair
    alone = playground.generate(PROMPT, target=target, method="ar", max_new_tokens=40)
    speculative = playground.generate(PROMPT, target=target, draft=draft, method="sd", max_new_tokens=40,
                                      draft_vocab=0, draft_confidence=0.0)
    assert [t.id for t in speculative.tokens] == [t.id for t in alone.tokens]


def test_cutting_to_the_smaller_vocabulary_cannot_change_a_decision(padded_pair, tokenizer):
    target, draft = padded_pair
    ids = tokenizer(PROMPT).input_ids
    sampler = Sampler(temperature=1.0)
    p_logits = KVRunner(target.model, tokens=len(tokenizer)).next_logits(ids)[-1]
    q_logits = KVRunner(draft.model, tokens=len(tokenizer)).next_logits(ids)[-1]
    p, p_raw, q, q_raw = sampler.probs(p_logits), raw_probs(p_logits), sampler.probs(q_logits), raw_probs(q_logits)
    assert p.shape[-1] == len(tokenizer) + TARGET_PADDING and q.shape[-1] == len(tokenizer) + DRAFT_PADDING
    assert float(p_raw[len(tokenizer):].sum()) == 0 and float(q_raw[len(tokenizer):].sum()) == 0
    cut = q.shape[-1]  # what verify_block keeps: the smaller vocabulary
    q_full = torch.nn.functional.pad(q_raw, (0, p.shape[-1] - cut))  # the draft's zeros made explicit
    for name in SCALES:
        assert float(divergence(name, p_raw[:cut], q_raw)) == pytest.approx(float(divergence(name, p_raw, q_full)),
                                                                             abs=1e-6)
    # the correction drawn on a rejection: the cut residual is the full one, no mass dropped
    q_processed_full = torch.nn.functional.pad(q, (0, p.shape[-1] - cut))
    assert torch.allclose(torch.nn.functional.pad(residual(p[:cut], q), (0, p.shape[-1] - cut)),
                          residual(p, q_processed_full))
    assert float(p[cut:].sum()) == 0  # the rows cut off held nothing
