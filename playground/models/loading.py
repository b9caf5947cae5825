"""Model specs, loading, the process-wide model cache, and tokenizer compatibility.

A spec is one of: an embedded name (see `playground.models.embedded`), a local directory, a `.gguf`
file, or a Hugging Face hub id. Loaded models are shared read-only by every run in the process.
"""

import os
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from ..decoding.cache import check_rollback_support
from ..decoding.prepacked import prepack_linears
from ..errors import PlaygroundError
from .feature_draft import is_feature_draft, load_feature_draft
from .policy import check_allowed, check_fits

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class LoadedModel:
    spec: str
    model: torch.nn.Module
    tokenizer: object
    device: str
    dtype: str

    @property
    def memory_bytes(self) -> int:
        tensors = [*self.model.parameters(), *self.model.buffers()]  # prepacked weights are buffers
        return sum(t.numel() * t.element_size() for t in tensors)


_loaded: dict[tuple, LoadedModel] = {}
_lock = threading.Lock()


def pick_device(override: str | None = None) -> str:
    if override is None or override == "auto":
        return _best_device()
    kind, _, index = str(override).partition(":")
    if kind not in ("cpu", "cuda", "mps") or (index and (kind != "cuda" or not index.isdigit())):
        raise PlaygroundError(f"unknown device {override!r}: choose cpu, cuda, cuda:N, mps or auto")
    if kind == "cuda" and not torch.cuda.is_available():
        raise PlaygroundError(f"device {override!r} is not available: this machine has no CUDA GPU that torch "
                              "can use; choose cpu (or auto)")
    if kind == "cuda" and index and int(index) >= torch.cuda.device_count():
        raise PlaygroundError(f"device {override!r} does not exist: this machine has "
                              f"{torch.cuda.device_count()} CUDA device(s), cuda:0 first")
    if kind == "mps" and not torch.backends.mps.is_available():
        raise PlaygroundError("device 'mps' is not available on this machine: choose cpu (or auto)")
    return override


def _best_device() -> str:
    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def pick_dtype(device: str, override: str | None = None) -> str:
    if override and override != "auto":
        if override not in DTYPES:
            raise PlaygroundError(f"unknown dtype {override!r}: choose one of {', '.join(DTYPES)} or auto")
        return override
    if device.startswith("cuda"):
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    return "float16" if device == "mps" else "float32"


def refuse_empty(role: str, spec) -> None:
    """An empty model name is a mistake, not a request for the default: omit the role for that."""
    if isinstance(spec, str) and not spec.strip():
        raise PlaygroundError(f"empty {role} model: name one, or leave --{role} out for the embedded family")


def load_model(spec: str, device: str | None = None, dtype: str | None = None,
               device_map: str | None = None, trust_remote_code: bool = False) -> LoadedModel:
    """Load (or fetch from the process-wide cache) a causal LM and its tokenizer."""
    if not spec or not str(spec).strip():
        raise PlaygroundError("empty model spec: give an embedded name, a local path or a hub id")
    check_allowed(spec, trust_remote_code)
    device = pick_device(device)
    dtype = pick_dtype(device, dtype)
    key = (spec, device, dtype, device_map, trust_remote_code)
    with _lock:
        if key not in _loaded:
            _loaded[key] = _load_uncached(spec, device, dtype, device_map, trust_remote_code)
        return _loaded[key]


def unload_all() -> None:
    with _lock:
        _loaded.clear()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _load_uncached(spec, device, dtype, device_map, trust_remote_code) -> LoadedModel:
    folder, extra = resolve_spec(spec)
    kwargs = dict(extra, dtype=DTYPES[dtype], trust_remote_code=trust_remote_code)
    try:
        if not device_map:
            check_fits(spec, estimate_memory_bytes(spec, dtype), device)
        if is_feature_draft(folder):
            return _loaded_head(spec, folder, device, dtype)
        tokenizer = AutoTokenizer.from_pretrained(folder, **extra, trust_remote_code=trust_remote_code)
        if device_map:
            model = AutoModelForCausalLM.from_pretrained(folder, device_map=device_map, **kwargs)
        else:
            model = AutoModelForCausalLM.from_pretrained(folder, **kwargs).to(device)
    except PlaygroundError:
        raise
    except torch.OutOfMemoryError as error:
        raise PlaygroundError(f"out of memory while loading {spec!r} on {device}: choose a smaller model or "
                              "free memory") from error
    except Exception as error:  # noqa: BLE001  (tokenizers, safetensors, gguf, accelerate: each fails its own way)
        raise PlaygroundError(_not_loadable_message(spec, folder, error)) from error
    model.eval()
    if not device_map:
        prepack_linears(model)
    check_rollback_support(model, spec)
    return LoadedModel(spec, model, tokenizer, str(model.device), dtype)


def _loaded_head(spec: str, folder: str, device: str, dtype: str) -> LoadedModel:
    """A feature draft (EAGLE-3 head): it drafts only beside the target it was trained on, whose
    tokenizer its folder must hold (published heads come without one)."""
    if not any((Path(folder) / name).is_file() for name in ("tokenizer.json", "tokenizer.model", "vocab.json")):
        raise PlaygroundError(f"the feature draft {spec!r} has no tokenizer: copy its target's tokenizer files "
                              f"(tokenizer.json, tokenizer_config.json) into {folder}")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    head = load_feature_draft(folder, DTYPES[dtype]).to(device)
    prepack_linears(head)
    return LoadedModel(spec, head, tokenizer, str(head.device), dtype)


def resolve_spec(spec: str) -> tuple[str, dict]:
    """(folder or hub id, extra from_pretrained kwargs) for a spec."""
    from . import embedded  # noqa: PLC0415  (embedded imports heavy build helpers lazily)

    if spec in embedded.EMBEDDED_MODELS:
        return str(embedded.embedded_path(spec)), {}
    path = Path(spec).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise PlaygroundError(f"GGUF file not found: {spec}")
        return str(path.parent), {"gguf_file": path.name}
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise PlaygroundError(f"{spec} has no config.json: give a folder saved by transformers' "
                                  "save_pretrained (config, tokenizer and weights)")
        return str(path), {}
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:
        raise PlaygroundError(f"local model path not found: {spec}")
    return spec, {}


def _not_loadable_message(spec: str, folder: str, error: Exception) -> str:
    """What went wrong, named: 'offline' only for a hub id that is not cached."""
    if Path(folder).exists():
        what = "not a readable GGUF file" if spec.endswith(".gguf") else "the folder does not load"
        return f"cannot load model {spec!r}: {what} ({_first_line(error)}): check or re-save its files"
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    where = "offline, and it is not in the local Hugging Face cache" if offline else _first_line(error)
    return (f"cannot load model {spec!r} ({where}): pass an embedded name (see `python -m playground "
            "models`) or a local directory, or download it first (gated models need an accepted "
            "license and `hf auth login`)")


def _first_line(error: Exception, limit: int = 160) -> str:
    line = next((text.strip() for text in str(error).splitlines() if text.strip()), type(error).__name__)
    return line if len(line) <= limit else line[:limit - 1] + "…"


def model_config(spec: str):
    """The model's config without loading weights (None if not available locally)."""
    try:
        folder, extra = resolve_spec(spec)
        return AutoConfig.from_pretrained(folder, **extra)
    except (OSError, ValueError, PlaygroundError):
        return None


def vocabulary_relation(target_tokenizer, draft_tokenizer) -> str:
    """'same' when both tokenizers map every token string to the same id, else 'different'."""
    if target_tokenizer is draft_tokenizer:
        return "same"
    same = _vocabulary(target_tokenizer) == _vocabulary(draft_tokenizer)
    return "same" if same else "different"


_vocabularies: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _vocabulary(tokenizer) -> dict:
    """get_vocab() builds a new dict on every call (about 0.1 s for a 49k vocabulary, paid by every
    generate() call that checks its pair): build it once per tokenizer."""
    if tokenizer not in _vocabularies:
        _vocabularies[tokenizer] = tokenizer.get_vocab()
    return _vocabularies[tokenizer]


def estimate_memory_bytes(spec: str, dtype: str = "bfloat16") -> int | None:
    """Weight bytes of `spec` at `dtype`, computed from its config on the meta device (no weights
    are read). None when the config is not available locally."""
    from accelerate.utils import compute_module_sizes  # noqa: PLC0415

    config = model_config(spec)
    if config is None:
        return None
    # torch's meta device, not accelerate's init_empty_weights: under the latter transformers does
    # not tie the output layer to the embeddings, and a tied model would count them twice.
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=DTYPES[dtype])
    return compute_module_sizes(model)[""]


def available_offline(spec: str) -> bool:
    """True when `spec` can load without the network (embedded and prepared, local, or cached)."""
    from huggingface_hub import try_to_load_from_cache  # noqa: PLC0415

    try:
        folder, _ = resolve_spec(spec)
    except PlaygroundError:
        return False
    if Path(folder).is_dir():
        return True
    return isinstance(try_to_load_from_cache(folder, "config.json"), str)
