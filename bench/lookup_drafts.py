"""Prompt-lookup drafts (`draft="ngram"`) against the draft model, transformers' prompt lookup
(`hf-lookup`, K = 4) and `ar` on the embedded family:
every run paired with an `ar` run of the same prompt (order alternating over repeats), on prompts
whose answers repeat them (bench/edit_prompts.txt) and on chat prompts, greedy and at 0.7.

    HF_HUB_OFFLINE=1 python -m bench.lookup_drafts --out bench/results/lookup_drafts
"""

import argparse
import pathlib
import platform
import statistics

import torch

from playground import prepacked
from playground.bench import Bench, Setting
from playground.default_family import DEFAULT_FAMILY
from playground.models import load_model
from playground.quality import load_tasks

from .speed_levers import CHAT_PROMPTS, summary_line, write_results

EDIT_PROMPTS = pathlib.Path(__file__).resolve().parent / "edit_prompts.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--temperatures", default="0,0.7")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args()
    target = load_model(DEFAULT_FAMILY["target"])
    drafts = {"model draft": load_model(DEFAULT_FAMILY["draft"]), "prompt lookup": "ngram"}
    lines = [f"prepacked weights: {prepacked.enabled()}; torch {torch.__version__}, {torch.get_num_threads()} threads, "
             f"{platform.processor() or platform.machine()}; {args.repeats} repeats, {args.max_new_tokens} tokens", "",
             "| prompts, draft | sd/ar (quartiles) | predicted | acceptance | c | T(K+1)/T(1) | identical to ar | "
             "measured / predicted |", "|---|---|---|---|---|---|---|---|"]
    all_rows = []
    for prompts in (EDIT_PROMPTS, CHAT_PROMPTS):
        tasks = load_tasks(prompts)
        for temperature in [float(t) for t in args.temperatures.split(",")]:
            for name, draft in drafts.items():
                bench = Bench({"target": target, "draft": draft}, tasks,
                              {"max_new_tokens": args.max_new_tokens, "temperature": temperature}, repeats=args.repeats)
                settings = [Setting("sd"), *([Setting("hf-lookup", {"candidates": 4})] if draft == "ngram" else [])]
                rows = bench.run(settings)
                all_rows += rows
                ar = statistics.median(r["tokens_per_second"] for r in rows if r["method"] == "ar")
                for method in (s.method for s in settings):
                    label = f"{prompts.stem}, t={temperature:g}, {name}: {method} (ar {ar:.1f} tok/s)"
                    lines.append(summary_line(label, [r for r in rows if r["method"] == method]))
    write_results(args.out, all_rows, lines)


if __name__ == "__main__":
    main()
