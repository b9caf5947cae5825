"""The quality proxies against a direct computation on a real (tiny) model."""

import torch

from playground.measure.quality import mean_log_likelihood


def test_mean_log_likelihood_is_the_mean_log_probability_of_the_generated_tokens_only(family):
    model = family["target"].model
    prompt, generated = [3, 4, 5], [6, 7, 8, 9]
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([prompt + generated])).logits[0].float(), dim=-1)
    expected = sum(float(logprobs[len(prompt) - 1 + i, token]) for i, token in enumerate(generated)) / len(generated)
    assert abs(mean_log_likelihood(model, prompt, generated) - expected) < 1e-5
    assert mean_log_likelihood(model, prompt, []) is None
