"""A pruned draft output layer (FR-Spec, Zhao et al. 2025): the draft scores only the N most
frequent tokens and gives every other token the logit -inf, so q = 0 there.

Speculative decoding stays exact: a token the draft cannot propose costs nothing in the
min(1, p/q) test, and the residual norm(max(0, p - q)) over the full vocabulary gives it back all
of its target probability. What pruning buys is a cheaper draft step: the embedded draft's
49,152 x 576 output layer is most of its cost.

Which tokens: for the embedded SmolLM2 vocabulary, the ranking counted on the target's own answers
(`scripts/count_draft_vocab.py`, shipped in `assets/embedded/`); for any other vocabulary the lowest
ids: a BPE vocabulary numbers its tokens in merge order, and merges are learned most frequent
first. The end-of-text tokens are always kept: a draft must be able to propose the end of an answer.
"""

import hashlib
import json
import pathlib
import threading
import weakref

import torch
from torch import nn

from ..errors import PlaygroundError
from .int8_draft import Int8Linear
from .prepacked import PrepackedLinear

RANKING_FILE = pathlib.Path(__file__).resolve().parents[2] / "assets" / "embedded" / "smollm2-token-ranking.json"
_digests: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_rankings: dict = {}


def vocabulary_digest(tokenizer) -> str:
    """Identifies a vocabulary (every token string and its id), whichever tokenizer object holds it."""
    if tokenizer not in _digests:
        items = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False)
        _digests[tokenizer] = hashlib.sha256(items.encode()).hexdigest()[:16]
    return _digests[tokenizer]


def ranked_token_ids(tokenizer, vocab_size: int) -> list[int]:
    """Every token id, the most frequent first."""
    if "shipped" not in _rankings:
        _rankings["shipped"] = json.loads(RANKING_FILE.read_text()) if RANKING_FILE.exists() else None
    shipped = _rankings["shipped"]
    if shipped and shipped["vocab_size"] == vocab_size and tokenizer is not None \
            and shipped["vocabulary"] == vocabulary_digest(tokenizer):
        return shipped["token_ids"]
    return list(range(vocab_size))


class PrunedHead(nn.Module):
    """The model's output layer restricted to `token_ids`; logits of all other ids are -inf."""

    def __init__(self, output_weight: torch.Tensor, token_ids: list[int], vocab_size: int, int8: bool = False):
        super().__init__()
        self.vocab_size = vocab_size
        self.register_buffer("token_ids", torch.tensor(token_ids, device=output_weight.device), persistent=False)
        rows = nn.Linear(output_weight.shape[1], len(token_ids), bias=False, device=output_weight.device,
                         dtype=output_weight.dtype)
        rows.weight.data = output_weight.detach()[self.token_ids].clone()
        self.rows = Int8Linear(rows.weight, None) if int8 else _prepacked_or(rows)

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
_heads_lock = threading.Lock()
HEADS_KEPT = 2  # per model: each size is a copy of part of the output layer (about 19 MB for 8192 rows)


def pruned_head(model, tokenizer, size: int, int8: bool = False) -> PrunedHead | None:
    """The draft's output layer pruned to its `size` most frequent tokens and its end-of-text
    tokens, with int8 weights if `int8` (kept for the HEADS_KEPT settings used last, so that a
    sweep over sizes cannot fill the memory); None when `size` covers the whole vocabulary."""
    vocab_size = model.config.get_text_config().vocab_size
    if size >= vocab_size:
        return None
    _check_supported(model)
    with _heads_lock:  # concurrent runs share the models
        heads = _heads.setdefault(model, {})
        key = (size, int8)
        if key not in heads:
            kept = set(ranked_token_ids(tokenizer, vocab_size)[:size])
            kept |= {i for i in _eos_ids(model, tokenizer) if i < vocab_size}
            heads[key] = PrunedHead(model.get_output_embeddings().weight, sorted(kept), vocab_size, int8)
        heads[key] = heads.pop(key)  # the most recently used last
        while len(heads) > HEADS_KEPT:
            heads.pop(next(iter(heads)))
        return heads[key]


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
