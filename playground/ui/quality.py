"""Quality proxies for the compare view, measured against the target model.

- token agreement: the share of positions where a run's tokens equal the target-only run's;
- target log-likelihood: the target's mean log-probability of the run's text after the prompt,
  from one forward over prompt + text (playground.quality), higher is closer to the target.
"""

from ..engine import format_prompt
from ..models import LoadedModel
from ..quality import mean_log_likelihood
from . import model_thread


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


def target_log_likelihood(target: LoadedModel, prompt: str, ids: list[int], chat_template: bool) -> float | None:
    prompt_ids = format_prompt(target.tokenizer, prompt, chat_template)
    return model_thread.call(mean_log_likelihood, target.model, prompt_ids, ids)
