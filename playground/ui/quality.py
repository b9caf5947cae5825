"""Quality proxies for the compare view, measured against the target model.

- token agreement: the share of positions where a run's tokens equal the target-only run's;
- target log-likelihood: the target's mean log-probability of the run's text after the prompt,
  from one forward over prompt + text (higher is closer to what the target would write).
"""

import torch

from ..engine import format_prompt
from ..models import LoadedModel


def target_ids(run, target: LoadedModel) -> list[int]:
    """The run's output as target token ids (re-tokenized if another model's vocabulary made it)."""
    if run.stats.target_role == "target":
        return [t.id for t in run.tokens]
    return target.tokenizer(run.text, add_special_tokens=False).input_ids


def token_agreement(ids: list[int], reference: list[int]) -> float | None:
    longest = max(len(ids), len(reference))
    if not longest:
        return None
    return sum(a == b for a, b in zip(ids, reference)) / longest


@torch.no_grad()
def target_log_likelihood(target: LoadedModel, prompt: str, ids: list[int], chat_template: bool) -> float | None:
    if not ids:
        return None
    prompt_ids = format_prompt(target.tokenizer, prompt, chat_template)
    sequence = torch.tensor([prompt_ids + ids], device=target.model.device)
    logits = target.model(sequence).logits[0, len(prompt_ids) - 1:-1].float()
    log_probs = torch.log_softmax(logits, dim=-1)
    chosen = log_probs.gather(-1, torch.tensor(ids, device=logits.device)[:, None])
    return float(chosen.mean())
