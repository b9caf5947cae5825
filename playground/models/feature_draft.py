"""A feature draft (EAGLE-3, docs/rules.md "Feature drafts"): one decoder layer that drafts from
the target's own hidden states instead of from tokens alone.

What it reads, per position t: the target's hidden states at three depths (the inputs of layers
`layer_ids`, low, middle and high), joined by one linear map `fc` (3 x target width -> width), and
the embedding of token t+1 (the target's own embedding table). Its layer's attention takes both,
each normalised, side by side (2 x width). Its output, before the final norm, is the feature its
next step reads in place of the target's (the target has not seen the drafted token yet); after
the norm, `lm_head` scores a reduced draft vocabulary, mapped to the target's ids by `d2t`
(target id = draft id + d2t[draft id]; `t2d` marks the target ids the draft can propose).

Stored in the public EAGLE-3 format (a Llama config with `draft_vocab_size`; tensors `fc.weight`,
`midlayer.*`, `norm.weight`, `lm_head.weight`, `d2t`, `t2d`), so published heads load too.
"""

import json
import pathlib

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from torch.nn import functional as F
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm, LlamaRotaryEmbedding, apply_rotary_pos_emb

from ..errors import PlaygroundError

WEIGHTS = "model.safetensors"
ARCHITECTURE = "LlamaForCausalLMEagle3"


def default_layer_ids(target_layers: int) -> list[int]:
    """The depths the public heads read: a low, the middle and a high layer's input."""
    return [2, target_layers // 2, target_layers - 3]


class FeatureAttention(nn.Module):
    """Self-attention whose queries, keys and values read the joined (2 x width) input."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        width, self.heads, self.kv_heads = config.hidden_size, config.num_attention_heads, config.num_key_value_heads
        self.head_dim = getattr(config, "head_dim", None) or width // self.heads
        self.q_proj = nn.Linear(2 * width, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(2 * width, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(2 * width, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, width, bias=False)

    def forward(self, joined, rotary, past_keys=None, past_values=None, mask=None):
        """-> (output, this call's keys, values). `mask` (bool, True = may attend) covers the past
        keys then these; without one, the new positions see all the past and each other causally."""
        batch, length, _ = joined.shape

        def heads(projection, count):
            return projection(joined).view(batch, length, count, self.head_dim).transpose(1, 2)
        queries, keys, values = heads(self.q_proj, self.heads), heads(self.k_proj, self.kv_heads), \
            heads(self.v_proj, self.kv_heads)
        queries, keys = apply_rotary_pos_emb(queries, keys, *rotary)
        all_keys = keys if past_keys is None else torch.cat([past_keys, keys], dim=2)
        all_values = values if past_values is None else torch.cat([past_values, values], dim=2)
        if mask is None and length > 1:
            mask = causal_mask(length, all_keys.shape[2] - length, joined.device)
        out = F.scaled_dot_product_attention(queries, all_keys, all_values, attn_mask=mask, enable_gqa=True)
        return self.o_proj(out.transpose(1, 2).reshape(batch, length, -1)), keys, values


def causal_mask(length: int, past: int, device=None) -> torch.Tensor:
    """New positions see every past key and the new ones up to themselves."""
    return torch.ones(length, past + length, dtype=torch.bool, device=device).tril(past)


class FeatureLayer(nn.Module):
    """The one decoder layer: the feature is the residual stream; the token's embedding joins it
    only at the attention's input."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        width, eps = config.hidden_size, config.rms_norm_eps
        self.input_layernorm, self.hidden_norm = LlamaRMSNorm(width, eps), LlamaRMSNorm(width, eps)
        self.self_attn = FeatureAttention(config)
        self.post_attention_layernorm = LlamaRMSNorm(width, eps)
        self.mlp = LlamaMLP(config)

    def forward(self, embeds, features, rotary, past_keys=None, past_values=None, mask=None):
        joined = torch.cat([self.input_layernorm(embeds), self.hidden_norm(features)], dim=-1)
        attended, keys, values = self.self_attn(joined, rotary, past_keys, past_values, mask)
        residual = features + attended
        return residual + self.mlp(self.post_attention_layernorm(residual)), keys, values


class FeatureDraft(nn.Module):
    """The head. The token embeddings it reads are the target's (its caller looks them up)."""

    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.config = config
        target_width = getattr(config, "target_hidden_size", None) or config.hidden_size
        self.fc = nn.Linear(3 * target_width, config.hidden_size, bias=False)
        self.midlayer = FeatureLayer(config)
        self.norm = LlamaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.draft_vocab_size, bias=False)
        self.register_buffer("d2t", torch.zeros(config.draft_vocab_size, dtype=torch.long))
        self.register_buffer("t2d", torch.zeros(config.vocab_size, dtype=torch.bool))
        self.rotary = LlamaRotaryEmbedding(config)

    @property
    def device(self) -> torch.device:
        return self.norm.weight.device  # (its linear maps may be replaced by packed or int8 ones)

    @property
    def dtype(self) -> torch.dtype:
        return self.norm.weight.dtype

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    @property
    def layer_ids(self) -> list[int]:
        return list(self.config.eagle_config["eagle_aux_hidden_state_layer_ids"])

    def fuse(self, target_features: torch.Tensor) -> torch.Tensor:
        """The target's three depths (concatenated, 3 x target width) -> one feature."""
        return self.fc(target_features)

    def forward(self, features, embeds, positions, past_keys=None, past_values=None, mask=None):
        """One step over positions `positions`: `features` (fused target features, or this head's
        own earlier output) with the next tokens' embeddings -> (output features, keys, values)."""
        rotary = self.rotary(features, positions)
        return self.midlayer(embeds, features, rotary, past_keys, past_values, mask)

    def logits(self, output_features: torch.Tensor) -> torch.Tensor:
        """Scores over the draft vocabulary."""
        return self.lm_head(self.norm(output_features))

    def target_ids(self, draft_ids: torch.Tensor) -> torch.Tensor:
        return draft_ids + self.d2t[draft_ids]

    def save(self, directory: pathlib.Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        tensors = {name: tensor.detach().contiguous() for name, tensor in self.state_dict().items()
                   if not name.startswith("rotary.")}
        save_file(tensors, str(directory / WEIGHTS))
        (directory / "config.json").write_text(self.config.to_json_string())


def head_config(target_config, draft_vocab_size: int, layer_ids: list[int] | None = None) -> LlamaConfig:
    """A one-layer head's config for `target_config`: the target's widths, heads and rotary."""
    fields = {**target_config.to_dict(), "num_hidden_layers": 1, "architectures": [ARCHITECTURE],
              "draft_vocab_size": draft_vocab_size, "target_hidden_size": target_config.hidden_size,
              "tie_word_embeddings": False,
              "eagle_config": {"eagle_aux_hidden_state_layer_ids":
                               layer_ids or default_layer_ids(target_config.num_hidden_layers)}}
    return LlamaConfig(**{k: v for k, v in fields.items() if k not in ("model_type", "transformers_version")})


def is_feature_draft(directory) -> bool:
    """Whether a local directory holds an EAGLE-3 head (its config names the architecture)."""
    config = pathlib.Path(directory) / "config.json"
    if not config.is_file():
        return False
    try:
        return ARCHITECTURE in json.loads(config.read_text()).get("architectures", [])
    except (ValueError, AttributeError):
        return False


def load_feature_draft(directory, dtype: torch.dtype = torch.float32) -> FeatureDraft:
    """The head stored in `directory` (which target it reads is checked when a run pairs them)."""
    directory = pathlib.Path(directory)
    stored = json.loads((directory / "config.json").read_text())
    config = LlamaConfig(**{k: v for k, v in stored.items() if k not in ("model_type", "transformers_version")})
    config.draft_vocab_size = getattr(config, "draft_vocab_size", None) or config.vocab_size
    config.eagle_config = {**(getattr(config, "eagle_config", None) or {})}
    weights = load_file(str(directory / WEIGHTS))
    weights = {name.replace("layers.0.", "midlayer.").removeprefix("model."): t for name, t in weights.items()
               if not name.endswith("embed_tokens.weight")}  # a head's copy of the target's embeddings
    head = FeatureDraft(config)
    weights.setdefault("d2t", torch.zeros(config.draft_vocab_size, dtype=torch.long))
    weights.setdefault("t2d", torch.zeros(config.vocab_size, dtype=torch.bool))
    try:
        missing, unexpected = head.load_state_dict(weights, strict=False)
    except RuntimeError as error:  # a tensor whose shape is not the config's
        first = next((line.strip() for line in str(error).splitlines() if "size mismatch" in line), str(error))
        raise PlaygroundError(f"the feature draft in {directory} does not match its own config.json ({first}): "
                              "re-export it") from error
    missing = [m for m in missing if not m.startswith("rotary.")]
    if missing or unexpected:
        raise PlaygroundError(f"the feature draft in {directory} is not in the EAGLE-3 format: "
                              f"missing {missing[:3]}, unexpected {unexpected[:3]}: export it with fc, midlayer, "
                              "norm, lm_head and d2t")
    return head.to(dtype=dtype).eval()


def check_target(head: FeatureDraft, name: str, target_config) -> None:
    """Refuse, in one line naming both, a head made for another target than this one."""
    config = head.config
    target_width = getattr(config, "target_hidden_size", None) or config.hidden_size
    if target_width != target_config.hidden_size or config.vocab_size != target_config.vocab_size:
        raise PlaygroundError(
            f"the feature draft {name} reads a target of hidden size {target_width} and vocabulary "
            f"{config.vocab_size}; this target has {target_config.hidden_size} and {target_config.vocab_size}: "
            "use a head trained for this target")
    config.eagle_config.setdefault("eagle_aux_hidden_state_layer_ids",
                                   default_layer_ids(target_config.num_hidden_layers))
    layers = head.layer_ids
    # Ids are layer inputs (the public heads'); the layer count itself names the last layer's normed
    # output, as transformers' hidden states give it last.
    if len(layers) != 3 or not all(0 <= i <= target_config.num_hidden_layers for i in layers):
        raise PlaygroundError(f"the feature draft {name} reads target layers {layers}; this target has "
                              f"{target_config.num_hidden_layers}: use a head trained for this target")
