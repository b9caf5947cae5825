"""A pruned draft output layer (FR-Spec, Zhao et al. 2025): the draft scores only the N most
frequent tokens and gives every other token the logit -inf, so q = 0 there.

Speculative decoding stays exact: a token the draft cannot propose costs nothing in the
min(1, p/q) test, and the residual norm(max(0, p - q)) over the full vocabulary gives it back all
of its target probability. What pruning buys is a cheaper draft step: the embedded draft's
49,152 x 576 output layer is most of its cost.

Which tokens: for the embedded SmolLM2 vocabulary, the ranking counted on the target's own answers
(`scripts/count_draft_vocab.py`); for any other vocabulary, the lowest ids, which in a BPE
vocabulary are the earliest, most frequent merges.
"""

import functools
import json
import pathlib
import weakref

import torch
from torch import nn

from .errors import PlaygroundError
from .prepacked import PrepackedLinear

FREQUENCY_FILE = pathlib.Path(__file__).resolve().parent.parent / "assets" / "embedded" / "smollm2-token-frequencies.json"


@functools.cache
def _embedded_ranking() -> tuple[int, tuple[int, ...]]:
    record = json.loads(FREQUENCY_FILE.read_text())
    return record["vocab_size"], tuple(record["token_ids"])


def ranked_token_ids(tokenizer, vocab_size: int) -> list[int]:
    """Token ids, most frequent first, covering the whole output layer."""
    embedded_size, embedded = _embedded_ranking() if FREQUENCY_FILE.exists() else (0, ())
    counted = list(embedded) if vocab_size == embedded_size and _is_smollm2(tokenizer) else []
    seen = set(counted)
    return counted + [i for i in range(vocab_size) if i not in seen]


def _is_smollm2(tokenizer) -> bool:
    return tokenizer is not None and tokenizer.convert_tokens_to_ids("<|im_end|>") == 2 and len(tokenizer) == 49152


class PrunedHead(nn.Module):
    """The model's output layer restricted to `token_ids`; logits of all other ids are -inf."""

    def __init__(self, output_weight: torch.Tensor, token_ids: list[int], vocab_size: int):
        super().__init__()
        self.vocab_size = vocab_size
        self.register_buffer("token_ids", torch.tensor(token_ids, device=output_weight.device), persistent=False)
        rows = nn.Linear(output_weight.shape[1], len(token_ids), bias=False, device=output_weight.device,
                         dtype=output_weight.dtype)
        rows.weight.data = output_weight.detach()[self.token_ids].clone()
        self.rows = _prepacked_or(rows)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        scores = self.rows(hidden)
        logits = scores.new_full((*scores.shape[:-1], self.vocab_size), -torch.inf)
        return logits.index_copy_(-1, self.token_ids, scores)


def _prepacked_or(linear: nn.Linear) -> nn.Module:
    if linear.weight.device.type != "cpu" or linear.weight.dtype != torch.float32:
        return linear
    try:
        return PrepackedLinear(linear)
    except RuntimeError:
        return linear


_heads: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def pruned_head(model, tokenizer, size: int) -> PrunedHead:
    """The draft's output layer pruned to its `size` most frequent tokens (built once per model and
    size) plus its end-of-text tokens, which a draft must be able to propose."""
    _check_supported(model)
    heads = _heads.setdefault(model, {})
    if size not in heads:
        vocab_size = model.config.get_text_config().vocab_size
        ranked = ranked_token_ids(tokenizer, vocab_size)[:size]
        eos = [i for i in _eos_ids(model, tokenizer) if i < vocab_size and i not in ranked]
        heads[size] = PrunedHead(model.get_output_embeddings().weight, sorted(ranked + eos), vocab_size)
    return heads[size]


def _eos_ids(model, tokenizer) -> list[int]:
    configured = getattr(model.generation_config, "eos_token_id", None)
    ids = configured if isinstance(configured, list) else [configured]
    return [i for i in [*ids, getattr(tokenizer, "eos_token_id", None)] if i is not None]


def _check_supported(model) -> None:
    config = model.config.get_text_config()
    scaled = getattr(config, "final_logit_softcapping", None) or getattr(config, "logit_scale", None) \
        or getattr(config, "logits_scaling", None)
    if scaled or getattr(model.get_output_embeddings(), "weight", None) is None:
        raise PlaygroundError(f"draft_vocab cannot prune {type(model).__name__}'s output layer (it scales its "
                              "logits or has no plain output weight): use draft_vocab 0 with this draft")
