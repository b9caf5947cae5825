"""The bench's plotly charts, drawn from its per-setting summary.

- quality vs speed (seed 000, Figure 2): one line per method through its thresholds, labelled
  with tau; single points for methods without a threshold; the fsd-random control as a dashed
  grey line; and, when `draft-only` ran, the random-allocation line between target and draft.
- random control (seed 000, Figure 6): quality against the share of draft tokens, fsd vs fsd-random.
- speedup vs candidate length K, one line per method (and threshold).
"""

import os
from pathlib import Path

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from .sweep import RANDOM_CONTROL

QUALITY = {"accuracy": "task accuracy", "exact_match": "agreement with target-only output (exact match)"}
PLOTLY_JS = "plotly.min.js"
CHART_NAMES = {"accuracy": "accuracy_vs_speed.html", "exact_match": "agreement_vs_speed.html"}


def write_charts(summary: list[dict], out: Path) -> list[Path]:
    charts = {CHART_NAMES[key]: quality_vs_speed(summary, key) for key in QUALITY
              if any(s[key] is not None for s in summary)}
    charts["random_control.html"] = random_control(summary)
    charts["speedup_vs_candidates.html"] = speedup_vs_candidates(summary)
    script = plotly_js(out)
    for name, figure in charts.items():
        figure.write_html(out / name, include_plotlyjs=script)
    return [out / name for name in charts]


def plotly_js(out: Path) -> str:
    """plotly.js for the charts in `out`, as a relative path, so that they open offline: the
    nearest plotly.min.js in `out` or a folder above it (bench/results keeps one for all its
    runs), else a new copy in `out`."""
    out = out.resolve()
    for folder in (out, *out.parents):
        if (folder / PLOTLY_JS).is_file():
            return Path(os.path.relpath(folder / PLOTLY_JS, out)).as_posix()
    (out / PLOTLY_JS).write_text(get_plotlyjs(), encoding="utf-8")
    return PLOTLY_JS


def _by(summary: list[dict], key) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for s in summary:
        groups.setdefault(key(s), []).append(s)
    return groups


def _series_name(s: dict) -> str:
    return s["method"] if s["candidates"] is None else f"{s['method']} K={s['candidates']}"


def quality_vs_speed(summary: list[dict], key: str) -> go.Figure:
    figure = go.Figure()
    for name, group in _by([s for s in summary if s[key] is not None], _series_name).items():
        group = sorted(group, key=lambda s: s["tokens_per_second"] or 0)
        control = group[0]["method"] == RANDOM_CONTROL
        figure.add_trace(go.Scatter(
            x=[s["tokens_per_second"] for s in group], y=[s[key] for s in group], name=name,
            mode="lines+markers+text", text=[_point_label(s) for s in group], textposition="top center",
            line={"dash": "dash", "color": "grey"} if control else None))
    _add_random_allocation(figure, summary, key)
    figure.update_layout(title=f"{QUALITY[key]} vs speed (labels: threshold or acceptance probability)",
                         xaxis_title="tokens/s (median)", yaxis_title=QUALITY[key])
    return figure


def _point_label(s: dict) -> str:
    if s["random_accept"] is not None:
        return f"p={s['random_accept']:g}"
    return "" if s["tau"] is None else f"tau={s['tau']:g}"


def _add_random_allocation(figure: go.Figure, summary: list[dict], key: str) -> None:
    """Seed 000's grey baseline: send each query to the target or the draft at random."""
    ends = [next((s for s in summary if s["method"] == m and s[key] is not None), None) for m in ("ar", "draft-only")]
    if all(ends):
        figure.add_trace(go.Scatter(x=[e["tokens_per_second"] for e in ends], y=[e[key] for e in ends],
                                    name="random allocation", mode="lines", line={"color": "lightgrey"}))


def random_control(summary: list[dict]) -> go.Figure:
    key = "accuracy" if any(s["accuracy"] is not None for s in summary) else "exact_match"
    figure = go.Figure()
    for method in ("fsd", RANDOM_CONTROL):
        group = sorted((s for s in summary if s["method"] == method), key=lambda s: s["share_draft"] or 0)
        figure.add_trace(go.Scatter(x=[s["share_draft"] for s in group], y=[s[key] for s in group], name=method,
                                    mode="lines+markers+text", text=[_point_label(s) for s in group],
                                    textposition="top center"))
    figure.update_layout(title="divergence-based vs random acceptance (seed 000, Figure 6)",
                         xaxis_title="share of tokens from the draft", yaxis_title=QUALITY[key])
    return figure


def speedup_vs_candidates(summary: list[dict]) -> go.Figure:
    figure = go.Figure()
    with_k = [s for s in summary if s["candidates"] is not None and s["speedup"] is not None]
    for name, group in _by(with_k, lambda s: f"{s['method']} {_point_label(s)}".strip()).items():
        group = sorted(group, key=lambda s: s["candidates"])
        figure.add_trace(go.Scatter(
            x=[s["candidates"] for s in group], y=[s["speedup"] for s in group], name=name, mode="lines+markers",
            error_y={"type": "data", "symmetric": False, "array": [s["speedup_q3"] - s["speedup"] for s in group],
                     "arrayminus": [s["speedup"] - s["speedup_q1"] for s in group]}))
    figure.update_layout(title="speedup over ar vs candidate length (median of paired ratios, IQR bars)",
                         xaxis_title="candidate length K", yaxis_title="speedup vs ar")
    return figure
