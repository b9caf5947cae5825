"""The log-likelihood behind Compare's quality figures, computed in chunks of positions: the same
number as one pass, without one pass's full-vocabulary logits for every position."""

import pytest
import torch

from playground.measure.quality import LIKELIHOOD_CHUNK, mean_log_likelihood


def one_pass_mean_log_likelihood(model, prompt: list[int], generated: list[int]) -> float:
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([prompt + generated])).logits[0].float(), dim=-1)
    return sum(float(logprobs[len(prompt) - 1 + i, token]) for i, token in enumerate(generated)) / len(generated)


def sequence(length: int, seed: int) -> list[int]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(2, 30, (length,), generator=generator).tolist()


@pytest.mark.parametrize("chunk", [1, 7, 150, LIKELIHOOD_CHUNK, 10_000])
def test_chunked_log_likelihood_equals_one_pass(family, chunk):
    model = family["target"].model
    prompt, generated = sequence(150, seed=1), sequence(200, seed=2)  # chunk edges inside prompt and answer
    expected = one_pass_mean_log_likelihood(model, prompt, generated)
    assert mean_log_likelihood(model, prompt, generated, chunk=chunk) == pytest.approx(expected, abs=1e-5)


def test_a_one_token_prompt_and_answer(family):
    model = family["target"].model
    expected = one_pass_mean_log_likelihood(model, [5], [6])
    assert mean_log_likelihood(model, [5], [6], chunk=1) == pytest.approx(expected, abs=1e-5)


def test_no_pass_builds_logits_for_more_positions_than_a_chunk(family):
    model = family["target"].model
    widest = []
    hook = model.lm_head.register_forward_hook(lambda _module, _inputs, logits: widest.append(logits.shape[1]))
    try:
        mean_log_likelihood(model, sequence(300, seed=3), sequence(200, seed=4))
    finally:
        hook.remove()
    assert max(widest) <= LIKELIHOOD_CHUNK
