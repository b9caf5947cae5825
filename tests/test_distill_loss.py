"""The students' training loss: KL from the target's top-k to the student, normalised over the
student's training vocabulary."""

import torch
from embedded_recipe.students import top_k_kl


def test_top_k_kl_is_torchs_kl_divergence_at_the_top_k_positions():
    generator = torch.Generator().manual_seed(0)
    hidden, weight = torch.randn(5, 8, generator=generator), torch.randn(12, 8, generator=generator)
    positions = torch.stack([torch.randperm(12, generator=generator)[:4] for _ in range(5)])
    top_logprobs = torch.randn(5, 4, generator=generator).log_softmax(-1)
    expected = torch.nn.functional.kl_div((hidden @ weight.T).log_softmax(-1).gather(-1, positions),
                                          top_logprobs, log_target=True, reduction="sum") / 5
    assert torch.allclose(top_k_kl(hidden, weight, positions, top_logprobs), expected, atol=1e-5)


def test_a_student_equal_to_the_teacher_over_its_vocabulary_has_zero_loss():
    weight = torch.eye(4)  # the student's logits are its hidden state
    hidden = torch.tensor([[2.0, 0.5, -1.0, 0.0], [0.0, 3.0, 1.0, -2.0]])
    positions = torch.tensor([[3, 0, 1, 2], [1, 2, 0, 3]])
    top_logprobs = hidden.log_softmax(-1).gather(-1, positions) + 0.7  # renormalised away
    assert abs(top_k_kl(hidden, weight, positions, top_logprobs).item()) < 1e-6
    assert top_k_kl(hidden.flip(-1), weight, positions, top_logprobs).item() > 0.1
