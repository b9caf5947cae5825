"""`python -m playground calibrate`: pre-fill CSD's correction memory by running standard SD over an
unlabeled corpus and counting every (rejected draft token, correction) pair (seed 003, Section
4.2, "Phase 1: Prior Calibration"); save it as JSON for `--memory`.
"""

import tempfile
from pathlib import Path

from ..errors import PlaygroundError
from ..methods.correction_memory import CorrectionMemory, load_memory

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "assets" / "calibration_corpus.txt"
MAX_CORPUS_BYTES = 16 * 1024 * 1024


def read_corpus(path: str | Path = DEFAULT_CORPUS) -> list[str]:
    """One prompt per line; blank lines and lines starting with '#' are skipped."""
    path = Path(path)
    if not path.is_file():
        raise PlaygroundError(f"corpus {path} not found: give a text file with one prompt per line")
    if path.stat().st_size > MAX_CORPUS_BYTES:
        raise PlaygroundError(f"corpus {path} is over {MAX_CORPUS_BYTES} bytes: use a smaller sample")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise PlaygroundError(f"corpus {path} is not UTF-8 text") from None
    prompts = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not prompts:
        raise PlaygroundError(f"corpus {path} has no prompts: write one prompt per line")
    return prompts


def calibrate(prompts: list[str], memory: CorrectionMemory, *, target=None, draft=None, progress: bool = True,
              **generate_options) -> int:
    """Run standard SD on each prompt and count the rejections into `memory` (with csd's drafting
    levers, which are sd's, so that calibration sees the rejections csd will see). The models default
    to the memory's pair (specs); loaded models may be given instead, with the same specs.
    Returns the number of rejections counted."""
    from tqdm import tqdm  # noqa: PLC0415

    from ..engine import generate, make_config  # noqa: PLC0415  (keeps `--help` fast)
    from ..models.loading import LoadedModel, load_model  # noqa: PLC0415

    target, draft = target or memory.target, draft or memory.draft
    if (_spec(target), _spec(draft)) != memory.pair:
        raise PlaygroundError(f"this memory is for target {memory.target!r} and draft {memory.draft!r}, "
                              f"not {_spec(target)!r} and {_spec(draft)!r}: start a new memory for that pair")
    # Bad settings and models fail here, in one line, before the progress bar is drawn.
    loading = {k: generate_options.pop(k) for k in ("device", "dtype", "device_map") if k in generate_options}
    make_config(method="sd", **generate_options)
    target, draft = (m if isinstance(m, LoadedModel) else load_model(m, **loading) for m in (target, draft))
    counted = 0
    bar = tqdm(prompts, desc="calibrating", unit="prompt", disable=not progress)
    for prompt in bar:
        run = generate(prompt, target=target, draft=draft, method="sd", **generate_options)
        counted += memory.observe(run.tokens)
        bar.set_postfix(rejections=memory.total, pairs=len(memory.counts))
    return counted


def _spec(model) -> str:
    return getattr(model, "spec", model)


def register(subparsers) -> None:
    parser = subparsers.add_parser("calibrate", help="build a CSD correction memory by running SD over a corpus")
    parser.add_argument("--target", help="target model (default: the embedded target)")
    parser.add_argument("--draft", help="draft model (default: the embedded draft)")
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="text file, one prompt per line")
    parser.add_argument("--out", required=True, help="where to write the memory JSON")
    parser.add_argument("--memory", help="an existing memory for the same pair to extend")
    parser.add_argument("--limit", type=int, default=0, help="use only the first N prompts (0: all)")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="tokens generated per prompt")
    parser.add_argument("--candidates", type=int, default=6, help="candidate length K (the paper's gamma = 6)")
    parser.add_argument("--temperature", type=float, default=0.0, help="sampling temperature; 0 means greedy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", help="cpu, cuda, mps (default: best available)")
    parser.add_argument("--dtype", help="float32, bfloat16, float16 (default: by device)")
    parser.set_defaults(run=_run)


def check_writable(path: Path) -> None:
    """Before a long run, make sure its result can be saved where asked."""
    if path.is_dir():
        raise PlaygroundError(f"--out {path} is a directory: give a file name, e.g. {path / 'memory.json'}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):  # unnamed where the OS allows: nothing is left behind
            pass
    except OSError as error:
        raise PlaygroundError(f"cannot write --out {path} ({error.strerror or error}): choose another place") from None


def _model(role: str, given: str | None) -> str:
    from ..models.default_family import DEFAULT_FAMILY  # noqa: PLC0415
    from ..models.loading import refuse_empty  # noqa: PLC0415

    refuse_empty(role, given)
    return given or DEFAULT_FAMILY[role]


def _run(args) -> int:
    check_writable(Path(args.out))
    target, draft = _model("target", args.target), _model("draft", args.draft)
    memory = load_memory(args.memory, target, draft) if args.memory else CorrectionMemory(target, draft)
    prompts = read_corpus(args.corpus)
    if args.limit > 0:
        prompts = prompts[:args.limit]
    counted = calibrate(prompts, memory, max_new_tokens=args.max_new_tokens, candidates=args.candidates,
                        temperature=args.temperature, seed=args.seed, device=args.device, dtype=args.dtype)
    path = memory.save(args.out)
    print(f"{counted} rejections from {len(prompts)} prompts; memory holds {memory.total} rejections "
          f"in {len(memory.counts)} pairs -> {path}")
    return 0
