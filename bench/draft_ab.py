"""Which draft pays? Lossless sd on the embedded target with the chain's levers (speed_levers.BEST)
and each given draft (and pruned-head size), and transformers' assisted generation with each draft,
every run paired with an `ar` run of the same prompt, the settings interleaved prompt by prompt,
their order alternating over repeats.

    HF_HUB_OFFLINE=1 python -m bench.draft_ab --drafts previous=/path/to/draft smollm2-draft \\
        --draft-vocab 8192,16384 --out bench/results/draft_ab

A draft changes only q, so sd stays exact: greedy outputs must equal ar's.
"""

import argparse
import pathlib
import statistics

from playground.measure.benchmark import Bench, Setting, spread
from playground.measure.quality import load_tasks
from playground.models.loading import load_model

from .helpers import CHAT_PROMPTS, write_results
from .speed_levers import ASSISTED, BEST


def named_drafts(specs: list[str]) -> dict[str, str]:
    """{name: model spec} from "name=spec" or "spec" (named after itself)."""
    return dict(spec.split("=", 1) if "=" in spec else (spec, spec) for spec in specs)


def summary_line(label: str, temperature: float, rows: list[dict]) -> str:
    speed = spread([r["speedup"] for r in rows])
    cells = [label, f"{temperature:g}", f"{speed['median']:.2f} ({speed['q1']:.2f}-{speed['q3']:.2f})"]
    for name, fmt in (("mean_acceptance_length", ".2f"), ("acceptance_rate", ".0%"), ("cost_ratio", ".3f"),
                      ("exact_match", ".0%")):
        values = [r[name] for r in rows if r[name] is not None]  # transformers' runs have no Stats
        cells.append(format(statistics.fmean(values), fmt) if values else "")
    return "| " + " | ".join(cells) + " |"


def variants(drafts: list[str], vocab_sizes: list[int]) -> list[tuple[str, str, Setting]]:
    """(draft, label, setting): sd with each head size, then transformers' assisted, per draft."""
    chosen = []
    for name in drafts:
        chosen += [(name, f"sd, {name}, head {v}", Setting("sd", {**BEST, "draft_vocab": v})) for v in vocab_sizes]
        chosen.append((name, f"assisted, {name}", ASSISTED))
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--drafts", nargs="+", required=True, help="name=spec or spec (embedded name or directory)")
    parser.add_argument("--draft-vocab", default=str(BEST["draft_vocab"]), help="pruned-head sizes, comma-separated")
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--temperatures", default="0,0.7")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parser.parse_args()
    target, tasks = load_model("smollm2-135m"), load_tasks(CHAT_PROMPTS)
    drafts = {name: load_model(spec) for name, spec in named_drafts(args.drafts).items()}
    chosen = variants(list(drafts), [int(v) for v in args.draft_vocab.split(",")])
    lines = ["| setting | temperature | speedup over ar (quartiles) | tokens per round | acceptance | c | "
             "identical to ar |", "|---|---|---|---|---|---|---|"]
    rows = []
    for temperature in [float(t) for t in args.temperatures.split(",")]:
        benches = {name: Bench({"target": target, "draft": draft}, tasks,
                               {"max_new_tokens": args.max_new_tokens, "temperature": temperature})
                   for name, draft in drafts.items()}
        measured = {label: [] for _, label, _ in chosen}
        for repeat in range(args.repeats):
            for task in tasks:
                for name, label, setting in chosen if repeat % 2 == 0 else reversed(chosen):
                    pair = benches[name].measure_pair(setting, task, repeat)
                    measured[label].append(pair[1])
                    rows += [{**row, "setting": f"{row['setting']} draft {name}"} for row in pair]
        lines += [summary_line(label, temperature, method_rows) for label, method_rows in measured.items()]
    write_results(args.out, rows, lines)


if __name__ == "__main__":
    main()
