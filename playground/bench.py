"""`python -m playground bench`: every method against the target alone, over one prompt set.

For each setting (method x candidate length x threshold) and each prompt, `ar` and the method run
back to back, and the order alternates per repeat, so that machine drift (other jobs, heat) hits
both sides of each ratio alike. Speedup is the median of these paired ratios, never a ratio of
averages taken at different times. Methods come from `METHODS` by name, so a new method is
benchmarked as soon as it is registered. Two names are the bench's own:
`hf-assisted` (transformers' `generate(assistant_model=...)` with the same draft and K, see
`playground.baseline`), `hf-universal` (the same with `assistant_tokenizer=`, on the
heterogeneous draft) and `hf-generate` (transformers' `generate` on the target alone: our `ar`
against the library's own loop). Passing `fsd` also runs its random-acceptance control `fsd-random`
(seed 000, Figure 6): fsd with `random_accept` set to the probability with which each fsd
setting accepted an examined candidate (`candidate_acceptance`), so the draft shares match.

Outputs in --out: `runs.csv` (one row per run, columns below), `summary.md`, `summary.csv`, and
plotly charts (`accuracy_vs_speed.html`, `agreement_vs_speed.html`, `random_control.html`,
`speedup_vs_candidates.html`).

runs.csv columns:
  setting              the setting's label, e.g. "fsd K=5 tau=0.3" ("ar" for the reference runs)
  method               METHODS name, "fsd-random", "hf-assisted", "hf-universal" or "hf-generate"
  candidates           K (empty for ar)
  tau                  the method's threshold (tau; tau_t for psd), empty if it has none
  random_accept        acceptance probability of the fsd-random control, else empty
  prompt_id, repeat    the task's id and the 0-based repeat index
  tokens, seconds      tokens generated and wall-clock seconds of the call (prefill included)
  tokens_per_second    tokens / seconds
  ar_tokens_per_second tokens/s of the ar run paired with this one (ar rows: their own)
  speedup              tokens_per_second / ar_tokens_per_second (ar rows: 1)
  acceptance_rate      accepted / drafted candidates (ours only)
  candidate_acceptance accepted / examined candidates (those up to each block's first rejection)
  mean_acceptance_length  tokens per target forward, bonus included (ours only)
  expected_speedup     Leviathan's prediction from the measured acceptance and cost ratio
  share_draft, share_qualifier, share_target, share_rescued   token origin shares
  exact_match          1 if the output equals the target-only (ar) output for the prompt
  first_divergence     first token position where it differs from that output (empty if equal)
  log_likelihood       the target's mean log-probability per generated token
  correct              1/0 from the answer check (empty when the prompt has no answers)
  error                the exception, when a run failed (then the measures are empty)
"""

from pathlib import Path

from .errors import PlaygroundError
from .presets import DEFAULT_PRESET

DEFAULT_PROMPTS = Path(__file__).resolve().parent.parent / "assets" / "tasks.jsonl"
HETERO_DRAFT = "byte-draft"
BASELINES = ("hf-assisted", "hf-universal", "hf-generate")  # the bench's own names, beside METHODS


def load_family(args) -> tuple[dict, dict[str, dict]]:
    """The models each role needs ({role: LoadedModel}), and the preset's per-method settings."""
    from .embedded import EMBEDDED_MODELS  # noqa: PLC0415  (heavy imports only when running)
    from .models import load_model, refuse_empty  # noqa: PLC0415
    from .presets import load_presets  # noqa: PLC0415

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
    from .methods import METHODS  # noqa: PLC0415

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
                                   description=__doc__.splitlines()[0])
    parser.add_argument("--family", default=DEFAULT_PRESET, help="preset family name (see `python -m playground models`)")
    for role in ("target", "draft", "qualifier"):
        parser.add_argument(f"--{role}", help=f"{role} model override")
    parser.add_argument("--hetero-draft", dest="hetero_draft",
                        help=f"draft with its own vocabulary for slem/tli/slrs and hf-universal (default {HETERO_DRAFT})")
    parser.add_argument("--methods", type=_csv_list(str), default=["sd", "fsd", "hf-assisted"],
                        help="comma-separated: METHODS names, hf-assisted, hf-universal, hf-generate (ar always runs)")
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
    from .engine import make_config  # noqa: PLC0415

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
    import torch  # noqa: PLC0415

    from .bench_report import machine_info, write_report  # noqa: PLC0415
    from .bench_runner import Bench, expand_settings, run_bench  # noqa: PLC0415
    from .quality import load_tasks  # noqa: PLC0415

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

