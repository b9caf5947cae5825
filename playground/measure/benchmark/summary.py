"""The bench's outputs: per-setting summary, CSV files, a Markdown table and plotly charts."""

import csv
import os
import platform
import statistics
from pathlib import Path

from .paired_runs import COLUMNS

SUMMARY_COLUMNS = ["setting", "method", "candidates", "tau", "random_accept", "runs", "errors",
                   "tokens_per_second", "speedup", "speedup_q1", "speedup_q3", "expected_speedup",
                   "acceptance_rate", "mean_acceptance_length", "share_draft", "share_target",
                   "exact_match", "first_divergence", "log_likelihood", "accuracy"]


def machine_info() -> dict:
    import torch  # noqa: PLC0415

    return {"cpu": _cpu_name(), "cores": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__, "python": platform.python_version(), "platform": platform.platform()}


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def paired_speedups(method_tps: list[float], ar_tps: list[float]) -> list[float]:
    """Per-pair ratios method/ar; pairs with a missing side are dropped."""
    return [m / a for m, a in zip(method_tps, ar_tps) if m and a]


def spread(values: list[float]) -> dict:
    """Median with the first and third quartiles (all three None for no values)."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return {"median": None, "q1": None, "q3": None}
    if len(values) == 1:
        return {"median": values[0], "q1": values[0], "q3": values[0]}
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {"median": median, "q1": q1, "q3": q3}


def summarize(rows: list[dict]) -> list[dict]:
    """One line per setting, in first-seen order: medians for speed, means for quality."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row["setting"], []).append(row)
    return [_summary(label, group) for label, group in groups.items()]


def _summary(label: str, group: list[dict]) -> dict:
    ok = [r for r in group if not r["error"]]
    speed = spread(paired_speedups([r["tokens_per_second"] for r in ok], [r["ar_tokens_per_second"] for r in ok]))
    first = group[0]
    return {
        "setting": label, "method": first["method"], "candidates": first["candidates"], "tau": first["tau"],
        "random_accept": first["random_accept"], "runs": len(group), "errors": len(group) - len(ok),
        "tokens_per_second": spread([r["tokens_per_second"] for r in ok])["median"],
        "speedup": speed["median"], "speedup_q1": speed["q1"], "speedup_q3": speed["q3"],
        **{name: _mean(ok, name) for name in ("expected_speedup", "acceptance_rate", "mean_acceptance_length",
                                              "share_draft", "share_target", "exact_match", "log_likelihood")},
        "first_divergence": _mean([r for r in ok if r["first_divergence"] is not None], "first_divergence"),
        "accuracy": _mean(ok, "correct"),
        "first_error": next((r["error"] for r in group if r["error"]), ""),
    }


def _mean(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.fmean(values) if values else None


def write_csv(path: Path, rows: list[dict], columns: list[str]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: _cell(row.get(k)) for k in columns} for row in rows)


def _cell(value):
    return f"{value:.4g}" if isinstance(value, float) else ("" if value is None else value)


def markdown(summary: list[dict], info: dict) -> str:
    header = ["setting", "tok/s", "speedup (IQR)", "predicted", "accept", "tokens/step", "draft share",
              "exact match", "1st diverge", "log-lik", "accuracy"]
    lines = ["# Bench summary", "", *(f"- {k}: {v}" for k, v in info.items()), "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for s in summary:
        lines.append("| " + " | ".join(_markdown_cells(s)) + " |")
    errors = [f"- {s['setting']}: {s['errors']}/{s['runs']} runs failed: {s['first_error']}"
              for s in summary if s["errors"]]
    return "\n".join(lines + (["", "Failures:", *errors] if errors else [])) + "\n"


def _markdown_cells(s: dict) -> list[str]:
    speedup = "" if s["speedup"] is None else f"{s['speedup']:.2f} ({s['speedup_q1']:.2f}-{s['speedup_q3']:.2f})"
    return [s["setting"], _fmt(s["tokens_per_second"], ".1f"), speedup, _fmt(s["expected_speedup"], ".2f"),
            _fmt(s["acceptance_rate"], ".0%"), _fmt(s["mean_acceptance_length"], ".2f"),
            _fmt(s["share_draft"], ".0%"), _fmt(s["exact_match"], ".0%"), _fmt(s["first_divergence"], ".1f"),
            _fmt(s["log_likelihood"], ".3f"), _fmt(s["accuracy"], ".0%")]


def _fmt(value, spec: str) -> str:
    return "" if value is None else format(value, spec)


def write_report(rows: list[dict], out: Path, info: dict) -> Path:
    """runs.csv, summary.csv, summary.md and the charts; returns summary.md's path."""
    from .figures import write_charts  # noqa: PLC0415  (plotly is imported only here)

    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(rows)
    write_csv(out / "runs.csv", rows, COLUMNS)
    write_csv(out / "summary.csv", summary, SUMMARY_COLUMNS)
    write_charts(summary, out)
    (out / "summary.md").write_text(markdown(summary, info), encoding="utf-8")
    return out / "summary.md"

