"""Ablation of the CPU speed levers of lossless sd on the embedded family: each lever on and off,
every run paired with an `ar` run of the same prompt (order alternating over repeats).

    HF_HUB_OFFLINE=1 python -m bench.speed_levers --out bench/results/speed_levers/prepacked
    HF_HUB_OFFLINE=1 PLAYGROUND_PREPACK=0 python -m bench.speed_levers --baseline-only \\
        --out bench/results/speed_levers/unpacked

Prepacking is chosen when the models load, so each state of it is one process. Writes runs.csv and
summary.md (median paired speedup with quartiles, acceptance, cost ratio c, verification cost
T(K+1)/T(1), predicted (mean) and each run's measured/predicted (median), share of outputs identical to ar).
"""

import statistics

from playground.measure.benchmark import Bench, Setting
from playground.measure.quality import load_tasks
from playground.models.loading import load_model

from .helpers import CHAT_PROMPTS, machine_line, paired_parser, summary_line, write_results

K = 4
# The levers of a chain, as transformers' assisted generation drafts one (bench.draft_shapes compares trees).
BEST = {"candidates": K, "draft_vocab": 8192, "draft_confidence": 0.6, "draft_int8": True, "tree_width": 1}


OFF = {"candidates": K, "draft_vocab": 0, "draft_confidence": 0.0, "draft_int8": False, "tree_width": 1}
# transformers' assisted generation with what it can take of BEST (it scores the full vocabulary)
ASSISTED = Setting("hf-assisted", {**OFF, "draft_confidence": BEST["draft_confidence"], "draft_int8": True})


def settings(baseline_only: bool, temperature: float) -> list[Setting]:
    """Each lever alone and all together, greedy; at a sampling temperature only off vs all;
    transformers' own `generate` on the target alone checks our `ar` loop."""
    plain = [Setting("hf-generate"), Setting("sd", OFF), Setting("hf-assisted", OFF)]
    if baseline_only:
        return plain
    alone = [Setting("sd", {**OFF, lever: BEST[lever]}) for lever in ("draft_vocab", "draft_confidence", "draft_int8")]
    best = [Setting("sd", {**BEST, "draft_int8": False}), Setting("sd", BEST), ASSISTED]
    return [*plain, *alone, *best] if temperature == 0 else [Setting("hf-generate"), Setting("sd", OFF), *best]


def main() -> None:
    parser = paired_parser(__doc__)
    parser.add_argument("--baseline-only", action="store_true", help="only plain sd and transformers assisted")
    args = parser.parse_args()
    models = {"target": load_model("smollm2-135m"), "draft": load_model("smollm2-draft")}
    tasks = load_tasks(CHAT_PROMPTS)
    lines = [machine_line(f"{len(tasks)} chat prompts x {args.repeats} repeats, {args.max_new_tokens} tokens"), "",
             "| setting | sd/ar (quartiles) | predicted | acceptance | c | T(K+1)/T(1) | identical to ar | "
             "measured / predicted |", "|---|---|---|---|---|---|---|---|"]
    all_rows = []
    for temperature in [float(t) for t in args.temperatures.split(",")]:
        bench = Bench(models, tasks, {"max_new_tokens": args.max_new_tokens, "temperature": temperature},
                      repeats=args.repeats)
        rows = bench.run(settings(args.baseline_only, temperature))
        all_rows += rows
        ar = [r["tokens_per_second"] for r in rows if r["method"] == "ar"]
        lines.append(f"| **temperature {temperature:g}** (ar {statistics.median(ar):.1f} tok/s) | | | | | | | |")
        for label in dict.fromkeys(r["setting"] for r in rows if r["method"] != "ar"):
            lines.append(summary_line(label, [r for r in rows if r["setting"] == label]))
    write_results(args.out, all_rows, lines)


if __name__ == "__main__":
    main()
