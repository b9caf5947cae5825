"""`python -m playground bench`: its flags, the checks made before any model loads, and the run
from flags to report (see `playground.measure.benchmark` for what is measured)."""

from pathlib import Path

import torch

from ...engine import make_config
from ...errors import PlaygroundError
from ...methods import METHODS
from ...models.embedded import EMBEDDED_MODELS
from ...models.loading import load_model, refuse_empty
from ...models.presets import DEFAULT_PRESET, load_presets
from ..quality import load_tasks
from .paired_runs import Bench, run_bench
from .summary import machine_info, write_report
from .sweep import expand_settings

DESCRIPTION = "every method against the target alone, over one prompt set"
DEFAULT_PROMPTS = Path(__file__).resolve().parents[3] / "assets" / "tasks.jsonl"
HETERO_DRAFT = "byte-draft"


def load_family(args) -> tuple[dict, dict[str, dict]]:
    """The models each role needs ({role: LoadedModel}), and the preset's per-method settings."""
    preset = load_presets().get(args.family or DEFAULT_PRESET)
    if preset is None:
        raise PlaygroundError(f"unknown family {args.family!r}: see `python -m playground models`")
    specs = {"target": preset.target, "draft": preset.draft, "qualifier": preset.qualifier,
             "hetero_draft": HETERO_DRAFT if preset.target in EMBEDDED_MODELS else None}
    for role in specs:
        refuse_empty(role, getattr(args, role))
    specs.update({role: getattr(args, role) for role in specs if getattr(args, role)})
    models = {role: load_model(spec, args.device, args.dtype) for role, spec in specs.items()
              if spec and role in needed_roles(args.methods)}
    return models, {name: preset.settings(name) for name in preset.methods}


def needed_roles(methods: list[str]) -> set[str]:
    roles = {"target", "draft"}
    for name in methods:
        spec = METHODS.get(name)
        roles.update(spec.roles if spec else ())
        if name == "hf-universal" or (spec and spec.vocabulary == "any"):
            roles.add("hetero_draft")
    return roles


def _csv_list(kind):
    return lambda text: [kind(part) for part in text.split(",") if part.strip()]


def register(subparsers) -> None:
    parser = subparsers.add_parser("bench", help="benchmark methods against ar: speed, acceptance, quality",
                                   description=DESCRIPTION)
    parser.add_argument("--family", default=DEFAULT_PRESET,
                        help="preset family name (see `python -m playground models`)")
    for role in ("target", "draft", "qualifier"):
        parser.add_argument(f"--{role}", help=f"{role} model override")
    parser.add_argument("--hetero-draft", dest="hetero_draft",
                        help="draft with its own vocabulary for slem/tli/slrs and hf-universal "
                             f"(default {HETERO_DRAFT})")
    parser.add_argument("--methods", type=_csv_list(str), default=["sd", "fsd", "hf-assisted"],
                        help="comma-separated: METHODS names, hf-assisted, hf-universal, hf-generate, hf-lookup "
                             "(ar always runs)")
    parser.add_argument("--taus", type=_csv_list(float), default=[0.1, 0.3, 0.5],
                        help="thresholds for fuzzy methods (fsd tau, psd tau_t)")
    parser.add_argument("--candidates", type=_csv_list(int), default=[5], help="candidate lengths K")
    parser.add_argument("--prompts", default=str(DEFAULT_PROMPTS), help="JSONL tasks or a text file, one prompt a line")
    parser.add_argument("--limit", type=int, help="use only the first N prompts")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-random-control", dest="random_control", action="store_false",
                        help="skip the fsd-random control")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--device")
    parser.add_argument("--dtype")
    parser.add_argument("--out", required=True, help="output directory")
    parser.set_defaults(run=_run)


def check_args(args) -> None:
    """Refuse bad settings before any model loads (a bench records a failed run and goes on)."""
    for name in ("threads", "repeats", "limit"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise PlaygroundError(f"--{name} must be at least 1, got {value}")
    for candidates in args.candidates:
        for tau in args.taus:
            make_config(method="fsd", candidates=candidates, tau=tau, max_new_tokens=args.max_new_tokens,
                        temperature=args.temperature, seed=args.seed)
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise PlaygroundError(f"--out {args.out} is a file: give a folder for the results")


def _run(args) -> int:
    check_args(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    tasks = load_tasks(args.prompts)[:args.limit]
    settings = expand_settings(args.methods, args.candidates, args.taus)
    options = {"max_new_tokens": args.max_new_tokens, "temperature": args.temperature, "seed": args.seed}
    models, method_options = load_family(args)
    bench = Bench(models, tasks, options, args.repeats, method_options)
    rows = run_bench(bench, settings, args.random_control and "fsd" in args.methods)
    info = {**machine_info(), "models": {r: m.spec for r, m in bench.models.items()}, **options,
            "repeats": args.repeats, "prompts": f"{args.prompts} ({len(tasks)})"}
    out = write_report(rows, Path(args.out), info)
    print(f"wrote {out}")
    return 0

