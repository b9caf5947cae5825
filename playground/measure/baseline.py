"""The outside baseline: transformers' own assisted generation on the same model pair.

`model.generate(assistant_model=...)` reads the candidate length from the ASSISTANT's generation
config, not from the keyword passed to `generate`, and by default stops drafting early when the
assistant's confidence falls below 0.4. To compare like with like at candidate length K we set
`num_assistant_tokens=K`, schedule "constant" and the confidence threshold of our run (0: off) on
the assistant's config for the duration of the call, and restore it afterwards.

Different vocabularies go through transformers' universal assisted generation
(`assistant_tokenizer=` and `tokenizer=`); it may refuse or crash on some pairs and settings, so
callers catch and record the error.
"""

import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import torch

from ..models.loading import LoadedModel, vocabulary_relation

ASSISTANT_SETTINGS = ("num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold")


@dataclass
class BaselineRun:
    ids: list[int]  # the generated token ids, prompt excluded
    seconds: float

    @property
    def tokens_per_second(self) -> float:
        return len(self.ids) / self.seconds if self.seconds else 0.0


@contextmanager
def constant_candidates(assistant, k: int, confidence: float = 0.0):
    """Make the assistant draft up to k tokens per step (stopping below `confidence`) in the block."""
    config = assistant.generation_config
    saved = {name: getattr(config, name, None) for name in ASSISTANT_SETTINGS}
    config.num_assistant_tokens, config.num_assistant_tokens_schedule = k, "constant"
    config.assistant_confidence_threshold = confidence
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(config, name, value)


def assisted_generate(target: LoadedModel, draft: LoadedModel | None, prompt_ids: list[int], *,
                      candidates: int, max_new_tokens: int, temperature: float = 0.0,
                      top_k: int = 0, top_p: float = 1.0, seed: int = 0,
                      confidence: float = 0.0, prompt_lookup: bool = False) -> BaselineRun:
    """transformers' generate on the target, assisted by `draft` (None: plain autoregressive, or
    with `prompt_lookup` its prompt-lookup decoding of up to `candidates` tokens); `confidence` is
    transformers' assistant_confidence_threshold (our `draft_confidence`)."""
    input_ids = torch.tensor([prompt_ids], device=target.model.device)
    kwargs = dict(max_new_tokens=max_new_tokens, attention_mask=torch.ones_like(input_ids),
                  pad_token_id=target.tokenizer.eos_token_id, **_sampling_kwargs(temperature, top_k, top_p))
    if prompt_lookup:
        kwargs["prompt_lookup_num_tokens"] = candidates
    if draft is not None:
        kwargs["assistant_model"] = draft.model
        if vocabulary_relation(target.tokenizer, draft.tokenizer) != "same":
            kwargs.update(tokenizer=target.tokenizer, assistant_tokenizer=draft.tokenizer)
    torch.manual_seed(seed)
    with _assistant_context(draft, candidates, confidence), torch.inference_mode():
        start = time.perf_counter()
        output = target.model.generate(input_ids, **kwargs)
        seconds = time.perf_counter() - start
    return BaselineRun(output[0, len(prompt_ids):].tolist(), seconds)


def _assistant_context(draft: LoadedModel | None, k: int, confidence: float):
    return constant_candidates(draft.model, k, confidence) if draft is not None else nullcontext()


def _sampling_kwargs(temperature: float, top_k: int, top_p: float) -> dict:
    if temperature == 0:
        return {"do_sample": False, "temperature": None, "top_k": None, "top_p": None}
    return {"do_sample": True, "temperature": temperature, "top_k": top_k or None, "top_p": top_p}
