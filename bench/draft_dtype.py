"""Which precision pays for the draft beside the fp32 target? Lossless sd (the chain's levers,
speed_levers.BEST) on the embedded family with the draft in float32 (oneDNN-prepacked), in bfloat16
(half the bytes to read, no prepacking on AVX2) and with int8 linear layers (`draft_int8`, a quarter
of the bytes), every sd run paired with an `ar` run of the same prompt, the drafts interleaved
prompt by prompt.

    HF_HUB_OFFLINE=1 python -m bench.draft_dtype --out bench/results/draft_dtype

The draft's precision changes only q, so sd stays exact: greedy outputs must equal ar's.
"""

import argparse
import pathlib
import statistics

from playground.measure.benchmark import Bench, Setting, spread
from playground.measure.quality import load_tasks
from playground.models.loading import load_model

from .helpers import CHAT_PROMPTS, write_results
from .speed_levers import BEST

PRECISIONS = {"float32": ("float32", False), "bfloat16": ("bfloat16", False), "int8": ("float32", True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parser.parse_args()
    target, tasks = load_model("smollm2-135m"), load_tasks(CHAT_PROMPTS)
    lines = ["| draft precision | temperature | sd/ar (quartiles) | c | acceptance | identical to ar |",
             "|---|---|---|---|---|---|"]
    rows = []
    for temperature in (0.0, 0.7):
        benches = {name: Bench({"target": target, "draft": load_model("smollm2-draft", dtype=dtype)}, tasks,
                               {"max_new_tokens": args.max_new_tokens, "temperature": temperature})
                   for name, (dtype, _) in PRECISIONS.items()}
        measured = {name: [] for name in PRECISIONS}
        for repeat in range(args.repeats):
            for task in tasks:
                for name in PRECISIONS if repeat % 2 == 0 else reversed(PRECISIONS):
                    setting = Setting("sd", {**BEST, "draft_int8": PRECISIONS[name][1]})
                    pair = benches[name].measure_pair(setting, task, repeat)
                    measured[name].append(pair[1])
                    rows += [{**row, "setting": f"{row['setting']} draft {name}"} for row in pair]
        for name, sd_rows in measured.items():
            speed = spread([r["speedup"] for r in sd_rows])
            c = statistics.fmean(r["cost_ratio"] for r in sd_rows)
            acceptance = statistics.fmean(r["acceptance_rate"] for r in sd_rows)
            exact = statistics.fmean(r["exact_match"] for r in sd_rows)
            lines.append(f"| {name} | {temperature:g} | {speed['median']:.2f} ({speed['q1']:.2f}-{speed['q3']:.2f}) "
                         f"| {c:.3f} | {acceptance:.0%} | {exact:.0%} |")
    write_results(args.out, rows, lines)


if __name__ == "__main__":
    main()
