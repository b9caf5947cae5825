"""Does a bf16 draft pay beside the fp32 target? Lossless sd (the default levers) on the embedded
family with the draft in float32 (oneDNN-prepacked) and in bfloat16 (half the bytes to read, no
prepacking on AVX2), every sd run paired with an `ar` run of the same prompt, the two drafts
interleaved prompt by prompt.

    HF_HUB_OFFLINE=1 python -m bench.draft_dtype --out bench/results/draft_dtype

The draft's precision changes only q, so sd stays exact: greedy outputs must equal ar's.
"""

import argparse
import pathlib
import statistics

from playground.bench import COLUMNS, Bench, Setting, spread, write_csv
from playground.models import load_model
from playground.quality import load_tasks

from .speed_levers import BEST, CHAT_PROMPTS

DTYPES = ("float32", "bfloat16")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parser.parse_args()
    target, tasks = load_model("smollm2-135m"), load_tasks(CHAT_PROMPTS)
    setting = Setting("sd", BEST)
    lines = ["| draft dtype | temperature | sd/ar (quartiles) | c | acceptance | identical to ar |", "|---|---|---|---|---|---|"]
    rows = []
    for temperature in (0.0, 0.7):
        benches = {dtype: Bench({"target": target, "draft": load_model("smollm2-draft", dtype=dtype)}, tasks,
                                {"max_new_tokens": args.max_new_tokens, "temperature": temperature})
                   for dtype in DTYPES}
        measured = {dtype: [] for dtype in DTYPES}
        for repeat in range(args.repeats):
            for task in tasks:
                for dtype in DTYPES if repeat % 2 == 0 else reversed(DTYPES):
                    pair = benches[dtype].measure_pair(setting, task, repeat)
                    measured[dtype].append(pair[1])
                    rows += [{**row, "setting": f"{row['setting']} draft {dtype}"} for row in pair]
        for dtype, sd_rows in measured.items():
            speed = spread([r["speedup"] for r in sd_rows])
            c = statistics.fmean(r["cost_ratio"] for r in sd_rows)
            acceptance = statistics.fmean(r["acceptance_rate"] for r in sd_rows)
            exact = statistics.fmean(r["exact_match"] for r in sd_rows)
            lines.append(f"| {dtype} | {temperature:g} | {speed['median']:.2f} ({speed['q1']:.2f}-{speed['q3']:.2f}) "
                         f"| {c:.3f} | {acceptance:.0%} | {exact:.0%} |")
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "runs.csv", rows, COLUMNS)
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
