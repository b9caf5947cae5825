"""SLEM, TLI and SLRS on the embedded target with the heterogeneous drafters (the byte drafter and
the BPE drafter, each with a vocabulary of its own), and SLEM forced onto the same-family drafter
(which could use plain sd), against the target alone.

    python -m bench.vocabulary_pairs                       # embedded models (run `embedded prepare` first)
    python -m bench.vocabulary_pairs --tokens 48 --out bench/results/heterogeneous.json
    python -m bench.vocabulary_pairs --drafter byte-draft --prompts 1 --temperatures 0
    python -m bench.vocabulary_pairs --paired bench/results/vocabulary_pairs --temperatures 0 --repeats 4

Prints one JSON row per (drafter, method, temperature): acceptance rate (in target tokens), mean
acceptance length, tokens/s, speedup over `ar`, and the string figures of `string_summary`
(characters accepted per step, realigned steps, psi enumeration sizes and cap hits).

`--paired DIR` instead runs slem and tli with each heterogeneous drafter at its preset's settings
(presets/embedded.toml: embedded-byte, embedded-bpe) on the chat prompts, each run paired with an
`ar` run of the same prompt (order alternating over repeats): the median and quartiles of the
per-run speedups, acceptance, and whether the output is ar's (runs.csv, summary.md in DIR).
"""

import argparse
import json
import sys
from pathlib import Path

import playground
from playground.measure.benchmark import Bench, Setting
from playground.measure.quality import load_tasks
from playground.methods.heterogeneous import string_summary
from playground.models.embedded import is_available
from playground.models.presets import load_presets

from .helpers import CHAT_PROMPTS, machine_line, measured_lines, table_head, write_results

PROMPTS = [
    "What is the capital of Italy, and what is it famous for?",
    "Give me three tips for learning to cook.",
    "Explain what a black hole is in simple words.",
]
RUNS = [  # (drafter, method, options)
    (None, "ar", {}),
    ("smollm2-draft", "sd", {}),
    ("smollm2-draft", "slem", {}),
    ("smollm2-draft", "tli", {}),
    ("byte-draft", "slem", {"candidates": 4}),
    ("byte-draft", "tli", {"candidates": 8}),
    ("byte-draft", "slrs", {}),
    ("bpe-draft", "slem", {"candidates": 1}),
    ("bpe-draft", "tli", {"candidates": 2}),
]
HETERO_PRESETS = {"byte-draft": "embedded-byte", "bpe-draft": "embedded-bpe"}  # --paired: drafter -> its family
PAIRED_METHODS = ("slem", "tli")


def measure(target, drafters: dict, drafter: str | None, method: str, options: dict, tokens: int,
            prompts: list[str]) -> dict:
    steps, totals = [], {"tokens": 0, "seconds": 0.0, "drafted": 0, "accepted": 0, "target_forwards": 0}
    for prompt in prompts:
        run = playground.generate(prompt, target=target, draft=drafters.get(drafter), method=method,
                                  max_new_tokens=tokens, **options)
        stats = run.stats
        steps.extend(run.steps)
        totals["tokens"] += stats.tokens
        totals["seconds"] += stats.account.clock
        totals["drafted"] += stats.drafted
        totals["accepted"] += stats.accepted
        totals["target_forwards"] += stats.forwards["target"]
    row = {"drafter": drafter, "method": method, **options,
           "acceptance_rate": totals["accepted"] / totals["drafted"] if totals["drafted"] else None,
           "mean_acceptance_length": totals["tokens"] / totals["target_forwards"],
           "tokens_per_second": totals["tokens"] / totals["seconds"]}
    if method in ("slem", "tli", "slrs"):
        row.update(string_summary(steps))
    return row


def paired(target, drafters: dict, args) -> None:
    """slem and tli with each heterogeneous drafter at its family's settings, paired with ar."""
    presets, tasks = load_presets(), load_tasks(CHAT_PROMPTS)
    lines = [machine_line(f"{args.repeats} repeats, {args.tokens} tokens, chat prompts, each family's settings"), "",
             *table_head("drafter, T: method")]
    all_rows = []
    for drafter, family in HETERO_PRESETS.items():
        if drafter not in drafters:
            continue
        preset = presets[family]
        for temperature in args.temperatures:
            bench = Bench({"target": target, "hetero_draft": drafters[drafter]}, tasks,
                          {"max_new_tokens": args.tokens, "temperature": temperature}, repeats=args.repeats,
                          method_options={method: preset.settings(method) for method in PAIRED_METHODS})
            rows, measured = measured_lines(bench, [Setting(method) for method in PAIRED_METHODS],
                                            f"{drafter}, t={temperature:g}: ")
            all_rows += [{**row, "setting": f"{drafter} {row['setting']}"} for row in rows]
            lines += measured
    write_results(args.paired, all_rows, lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 0.7])
    parser.add_argument("--prompts", type=int, default=len(PROMPTS), help="use the first N prompts")
    parser.add_argument("--drafter", help="only the runs with this drafter (and ar)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--paired", type=Path, help="paired runs of slem and tli on the chat prompts, written here")
    parser.add_argument("--repeats", type=int, default=2, help="--paired: runs of each prompt")
    args = parser.parse_args()
    target = playground.load_model("smollm2-135m", "cpu")
    drafters = {name: playground.load_model(name, "cpu") for name in ("smollm2-draft", "byte-draft", "bpe-draft")
                if is_available(name) and args.drafter in (None, name)}
    if args.paired:
        paired(target, drafters, args)
        return 0
    rows = []
    for temperature in args.temperatures:
        reference = None
        for drafter, method, options in RUNS:
            if drafter is not None and drafter not in drafters:
                print(f"skipped {method} with {drafter}: not prepared or not selected", file=sys.stderr)
                continue
            row = measure(target, drafters, drafter, method, {**options, "temperature": temperature}, args.tokens,
                          PROMPTS[:args.prompts])
            reference = reference or row["tokens_per_second"]
            row["speedup_vs_ar"] = row["tokens_per_second"] / reference
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
