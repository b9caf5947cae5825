"""A streaming run's running lines, drawn as two small inline SVGs in the stats panel: the
acceptance rate so far and tokens/s so far. They are a few hundred bytes redrawn with the stats,
where each plotly figure took the page about a tenth of a second to redraw; the plotly charts
follow once the run has ended (run_charts.py)."""

from html import escape

from . import charts

POINTS = 120  # at most about this many points per line: a refresh stays small however long the run
WIDTH, HEIGHT = 200, 40  # SVG user units; the stylesheet sizes the drawing


def thinned(xs: list, ys: list, points: int = POINTS) -> tuple[list, list]:
    """Every k-th point and the last, about `points` in all."""
    if len(xs) <= points:
        return xs, ys
    every = -(-len(xs) // points)
    keep = [*range(0, len(xs) - 1, every), len(xs) - 1]
    return [xs[i] for i in keep], [ys[i] for i in keep]


def line_svg(label: str, xs: list, ys: list, shown: str, top: float | None = None) -> str:
    """One line from 0 to `top` (the largest value if None), captioned with its last known value
    formatted by `shown`; empty below two known points."""
    known = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    if len(known) < 2:
        return ""
    xs, ys = thinned(*map(list, zip(*known, strict=True)))
    top = top or max(ys) or 1.0
    left, span = xs[0], (xs[-1] - xs[0]) or 1.0
    points = " ".join(f"{WIDTH * (x - left) / span:.1f},{HEIGHT * (1 - min(y / top, 1.0)):.1f}"
                      for x, y in zip(xs, ys, strict=True))
    return (f'<figure class="sparkline"><svg viewBox="0 0 {WIDTH} {HEIGHT}" preserveAspectRatio="none" '
            f'role="img" aria-label="{escape(label)}"><polyline points="{points}"/></svg>'
            f"<figcaption>{escape(label)}: <b>{shown.format(ys[-1])}</b></figcaption></figure>")


def running_lines_html(run, timeline, ended: bool = False) -> str:
    """The running acceptance rate (methods that draft) and tokens/s, as far as the run has got; once
    it has `ended`, over the run (a reviewer read "tokens/s so far" under a finished run)."""
    span = "over the run" if ended else "so far"
    lines = line_svg(f"acceptance {span}", *charts.running_acceptance(run), "{:.0%}", top=1.0) + \
        line_svg(f"tokens/s {span}", *charts.speed(timeline), "{:.1f}")
    return f'<div class="sparklines">{lines}</div>' if lines else ""
