"""Which draft pays? Lossless sd on the embedded target with the default levers and each given
draft (and pruned-head size), every sd run paired with an `ar` run of the same prompt, the drafts
interleaved prompt by prompt, their order alternating over repeats.

    HF_HUB_OFFLINE=1 python -m bench.draft_ab --drafts previous=/path/to/draft smollm2-draft \\
        --draft-vocab 8192,16384 --out bench/results/draft_ab

A draft changes only q, so sd stays exact: greedy outputs must equal ar's.
"""

import argparse
import pathlib
import statistics

from playground.bench import Bench, Setting, spread
from playground.models import load_model
from playground.quality import load_tasks

from .speed_levers import BEST, CHAT_PROMPTS, write_results


def named_drafts(specs: list[str]) -> dict[str, str]:
    """{name: model spec} from "name=spec" or "spec" (named after itself)."""
    return dict(spec.split("=", 1) if "=" in spec else (spec, spec) for spec in specs)


def summary_line(label: str, temperature: float, rows: list[dict]) -> str:
    speed = spread([r["speedup"] for r in rows])
    means = {name: statistics.fmean(r[name] for r in rows)
             for name in ("mean_acceptance_length", "acceptance_rate", "cost_ratio", "exact_match")}
    return (f"| {label} | {temperature:g} | {speed['median']:.2f} ({speed['q1']:.2f}-{speed['q3']:.2f}) | "
            f"{means['mean_acceptance_length']:.2f} | {means['acceptance_rate']:.0%} | {means['cost_ratio']:.3f} | "
            f"{means['exact_match']:.0%} |")


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
    variants = [(name, int(vocab)) for name in drafts for vocab in args.draft_vocab.split(",")]
    lines = ["| draft, head size | temperature | sd/ar (quartiles) | tokens per round | acceptance | c | "
             "identical to ar |", "|---|---|---|---|---|---|---|"]
    rows = []
    for temperature in [float(t) for t in args.temperatures.split(",")]:
        benches = {name: Bench({"target": target, "draft": draft}, tasks,
                               {"max_new_tokens": args.max_new_tokens, "temperature": temperature})
                   for name, draft in drafts.items()}
        measured = {variant: [] for variant in variants}
        for repeat in range(args.repeats):
            for task in tasks:
                for name, vocab in variants if repeat % 2 == 0 else reversed(variants):
                    pair = benches[name].measure_pair(Setting("sd", {**BEST, "draft_vocab": vocab}), task, repeat)
                    measured[(name, vocab)].append(pair[1])
                    rows += [{**row, "setting": f"{row['setting']} draft {name}"} for row in pair]
        lines += [summary_line(f"{name}, {vocab}", temperature, sd_rows)
                  for (name, vocab), sd_rows in measured.items()]
    write_results(args.out, rows, lines)


if __name__ == "__main__":
    main()
