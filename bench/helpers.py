"""What the paired bench scripts share: the prompt sets, the command-line options, the machine
line, a summary table's head and rows, and where the results go."""

import argparse
import pathlib
import platform
import statistics

import torch

from playground.decoding import prepacked
from playground.measure.benchmark import COLUMNS, Bench, Setting, spread, write_csv

HERE = pathlib.Path(__file__).resolve().parent
CHAT_PROMPTS = HERE / "chat_prompts.txt"
PROMPT_SETS = {"chat": CHAT_PROMPTS, "code": HERE / "code_prompts.txt", "edit": HERE / "edit_prompts.txt"}


def summary_line(label: str, rows: list[dict]) -> str:
    def mean(name):
        values = [r[name] for r in rows if r[name] is not None]
        return statistics.fmean(values) if values else None
    speed = spread([r["speedup"] for r in rows])
    cells = [label, f"{speed['median']:.2f} ({speed['q1']:.2f}-{speed['q3']:.2f})"]
    for name, fmt in (("expected_speedup", ".2f"), ("acceptance_rate", ".0%"), ("cost_ratio", ".3f"),
                      ("verify_cost", ".2f"), ("exact_match", ".0%")):
        value = mean(name)
        cells.append("" if value is None else format(value, fmt))
    # Each run's measurement over its own prediction: the mean prediction beside the median
    # measurement compares two different summaries of ten runs.
    hits = [r["speedup"] / r["expected_speedup"] for r in rows if r["expected_speedup"]]
    cells.append(f"{statistics.median(hits):.2f}" if hits else "")
    return "| " + " | ".join(cells) + " |"


def write_results(out: pathlib.Path, rows: list[dict], lines: list[str]) -> None:
    """runs.csv and summary.md (the lines) in `out`; the summary printed too."""
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "runs.csv", rows, COLUMNS)
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def paired_parser(doc: str) -> argparse.ArgumentParser:
    """The options every paired bench script takes: where to write, temperatures, repeats, length."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--temperatures", default="0,0.7")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    return parser


def machine_line(what: str) -> str:
    """The summary's first line: the build, threads and CPU the figures were taken on, and `what` ran."""
    return (f"prepacked weights: {prepacked.enabled()}; torch {torch.__version__}, {torch.get_num_threads()} threads, "
            f"{platform.processor() or platform.machine()}; {what}")


def table_head(first_column: str) -> list[str]:
    return [f"| {first_column} | speedup vs ar (quartiles) | predicted | acceptance | c | verify pass / T(1) | "
            "identical to ar | measured / predicted |", "|---|---|---|---|---|---|---|---|"]


def measured_lines(bench: Bench, settings: list[Setting], prefix: str) -> tuple[list[dict], list[str]]:
    """Run the settings, each paired with `ar`; their rows and summary lines (`prefix`, the label, ar's speed)."""
    rows = bench.run(settings)
    ar = statistics.median(r["tokens_per_second"] for r in rows if r["method"] == "ar")
    return rows, [summary_line(f"{prefix}{s.label} (ar {ar:.1f} tok/s)", [r for r in rows if r["setting"] == s.label])
                  for s in settings]
