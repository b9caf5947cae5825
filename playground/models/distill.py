"""Students made of some of a target's layers, trained as low-rank weight deltas.

A student keeps the target's embeddings (frozen, tied to the output head) and a subset of its
decoder layers. The first `frozen` of them stay exactly the target's; training changes each linear
layer above them by a low-rank delta `B @ A` and retrains their RMSNorm weights and the final norm.
Only those deltas and norms are stored (a few MB instead of the full layers); `assemble_student`
rebuilds a plain LlamaForCausalLM from the target plus the deltas. Because the bottom is frozen,
training can start from the target's own hidden states after `frozen` layers (`top_forward`).

File format (safetensors, metadata `{"format": "lowrank-delta-v1", "layers": "0,1,29"}`):
`layers.{i}.{module}.lora_a` [rank, in], `layers.{i}.{module}.lora_b` [out, rank],
`layers.{i}.{norm}.weight`, `norm.weight`; `i` is the student's layer index. Layers without
entries are the target's unchanged. A student with a vocabulary of its own (the BPE drafter) also
stores `embed_tokens.weight` [its vocabulary, hidden]: its embedding, tied to its output head.
"""

import copy
import pathlib

import torch
from safetensors.torch import load_file, save_file
from torch import nn

FORMAT = "lowrank-delta-v1"
EMBEDDING = "embed_tokens.weight"  # only in the file of a student with its own vocabulary
LINEAR_MODULES = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                  "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
NORM_MODULES = ("input_layernorm", "post_attention_layernorm")


class LowRankDelta(nn.Module):
    """A frozen linear layer plus a trainable delta `B @ A` (B starts at zero: no change).

    peft's LoRA would do the same with a dependency the Space does not otherwise need, its own
    tensor names in the shipped files and an alpha/rank scale; merging is one product here."""

    def __init__(self, base: nn.Linear, rank: int, generator: torch.Generator):
        super().__init__()
        self.base = base.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.randn(rank, base.in_features, generator=generator)
                                   / base.in_features ** 0.5)
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))

    def forward(self, x):
        return self.base(x) + (x @ self.lora_a.T) @ self.lora_b.T


def with_vocabulary(model, embeddings: torch.Tensor, trainable: bool = False):
    """`model` with `embeddings` [vocabulary, hidden] as its input embedding, tied to its output head:
    a student with a vocabulary of its own."""
    weight = embeddings.to(model.model.norm.weight.dtype).clone()
    model.model.embed_tokens = nn.Embedding.from_pretrained(weight, freeze=not trainable)
    model.lm_head = nn.Linear(weight.shape[1], weight.shape[0], bias=False)
    model.lm_head.weight = model.model.embed_tokens.weight
    model.config.vocab_size = weight.shape[0]
    return model


def _submodule_parent(layer: nn.Module, path: str):
    parent_path, _, attr = path.rpartition(".")
    return layer.get_submodule(parent_path), attr


def truncated_copy(target, layers: list[int]):
    """A deep copy of `target` keeping only the decoder layers at `layers` (in that order)."""
    student = copy.deepcopy(target)
    student.model.layers = nn.ModuleList(student.model.layers[i] for i in layers)
    for new_index, layer in enumerate(student.model.layers):
        layer.self_attn.layer_idx = new_index
    student.config.num_hidden_layers = len(layers)
    if getattr(student.config, "layer_types", None):
        student.config.layer_types = [student.config.layer_types[i] for i in layers]
    return student


def trainable_student(target, layers: list[int], frozen: int, rank: int, seed: int):
    """A float32 student for training: trainable deltas and norms in the layers above `frozen`."""
    student = truncated_copy(target, layers).float().requires_grad_(False)
    generator = torch.Generator().manual_seed(seed)
    for layer in student.model.layers[frozen:]:
        for path in LINEAR_MODULES:
            parent, attr = _submodule_parent(layer, path)
            setattr(parent, attr, LowRankDelta(getattr(parent, attr), rank, generator))
        for norm in NORM_MODULES:
            getattr(layer, norm).weight.requires_grad_(True)
    student.model.norm.weight.requires_grad_(True)
    return student


def top_forward(student, hidden: torch.Tensor, frozen: int) -> torch.Tensor:
    """The student's final normed hidden states, given the hidden states after its `frozen` layers.

    Causal attention without a mask: pad sequences on the right and ignore the padded positions.
    """
    position_ids = torch.arange(hidden.shape[1]).unsqueeze(0)
    position_embeddings = student.model.rotary_emb(hidden, position_ids=position_ids)
    for layer in student.model.layers[frozen:]:
        hidden = layer(hidden, attention_mask=None, position_ids=position_ids,
                       position_embeddings=position_embeddings)
    return student.model.norm(hidden)


def extract_deltas(student, frozen: int) -> dict[str, torch.Tensor]:
    """The trained tensors of a `trainable_student`, named as in the file format."""
    tensors = {"norm.weight": student.model.norm.weight}
    for i, layer in enumerate(student.model.layers):
        if i < frozen:
            continue
        for path in LINEAR_MODULES:
            module = layer.get_submodule(path)
            tensors[f"layers.{i}.{path}.lora_a"] = module.lora_a
            tensors[f"layers.{i}.{path}.lora_b"] = module.lora_b
        for norm in NORM_MODULES:
            tensors[f"layers.{i}.{norm}.weight"] = getattr(layer, norm).weight
    return {name: tensor.detach().to(torch.bfloat16).contiguous() for name, tensor in tensors.items()}


def save_deltas(path: pathlib.Path, layers: list[int], tensors: dict[str, torch.Tensor]) -> None:
    save_file(tensors, str(path), metadata={"format": FORMAT, "layers": ",".join(map(str, layers))})


def load_deltas(path: pathlib.Path) -> tuple[list[int], dict[str, torch.Tensor]]:
    from safetensors import safe_open  # noqa: PLC0415

    with safe_open(str(path), framework="pt") as handle:
        metadata = handle.metadata()
    if metadata.get("format") != FORMAT:
        raise ValueError(f"{path}: expected format {FORMAT}, got {metadata.get('format')!r}")
    return [int(i) for i in metadata["layers"].split(",")], load_file(str(path))


@torch.no_grad()
def assemble_student(target, layers: list[int], deltas: dict[str, torch.Tensor]):
    """A plain LlamaForCausalLM: the target's layers at `layers`, with the deltas merged in (and
    the stored embedding of a student with its own vocabulary)."""
    student = truncated_copy(target, layers)
    if EMBEDDING in deltas:
        with_vocabulary(student, deltas[EMBEDDING])
    student.model.norm.weight.copy_(deltas["norm.weight"])
    for i, layer in enumerate(student.model.layers):
        if f"layers.{i}.{NORM_MODULES[0]}.weight" not in deltas:
            continue  # a frozen layer: the target's own
        for path in LINEAR_MODULES:
            weight = layer.get_submodule(path).weight
            delta = deltas[f"layers.{i}.{path}.lora_b"].float() @ deltas[f"layers.{i}.{path}.lora_a"].float()
            weight.copy_(weight.float() + delta)
        for norm in NORM_MODULES:
            getattr(layer, norm).weight.copy_(deltas[f"layers.{i}.{norm}.weight"])
    return student
