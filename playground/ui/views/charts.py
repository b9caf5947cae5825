"""Plotly figures of a run, rebuilt from the run and its timeline whenever the UI refreshes.

`CHARTS` is the list the layout turns into plots (one elem_id each) and the handlers fill, in
order. Every chart function takes (run, timeline) and returns a figure; none keeps state.
"""

import textwrap
from dataclasses import dataclass, field

import plotly.graph_objects as go

from ...decoding.speed.cost_model import expected_tokens_per_step
from ...decoding.speed.speed_account import HOST_PART, MEASURED_ROW, PREPARING_PART, PROMPT_PASS, WAITING_PART
from ...decoding.step import ORIGINS
from ...decoding.token_tree import branches
from .explain_round import TOY_P, TOY_Q, TOY_TOKENS

COLORS = {"draft": "#4c9f70", "qualifier": "#d9a441", "target": "#5b7fc7", "rescued": "#c75b9b",
          "rejected": "#c0504d", "predicted": "#9a9a9a"}
# The few settings of plotly's "plotly_white" look that these charts use, as plain layout, and an
# empty template: a whole template is 7 KB, which every streamed figure would carry to the page.
GRID = {"gridcolor": "#EBF0F8", "zerolinecolor": "#EBF0F8", "linecolor": "#EBF0F8"}
HOUSE = {"template": {}, "paper_bgcolor": "white", "plot_bgcolor": "white", "font": {"color": "#2a3f5f"},
         "hovermode": "closest", "hoverlabel": {"namelength": -1},  # plotly cuts a trace's name at 15 characters
         "colorway": ["#636efa", "#EF553B", "#00cc96", "#ab63fa", "#FFA15A", "#19d3f3"]}


@dataclass
class Timeline:
    """(the run's own seconds so far, tokens so far) after each step: for tokens/s over time, on the
    clock the stats' tokens/s divide by (its speed account's, waiting left out)."""

    points: list[tuple[float, int]] = field(default_factory=list)

    def add(self, run) -> None:
        self.points.append((run.stats.decoder_seconds, run.stats.tokens))


def small_figure(title: str, traces, x_title: str = "", y_title: str = "", y_range=None, **layout) -> go.Figure:
    """A small figure in the house style. Built unvalidated: validation (and expanding the
    template into plotly objects) costs far more than the figure; the inputs are ours."""
    legend = len(traces) > 1  # under the plot: beside the title, a long title ran into it
    # The title on the left, the chart's buttons down its right side: across the top they covered it.
    base = {**HOUSE, "title": {"text": title, "font": {"size": 14}, "x": 0.02, "xanchor": "left"},
            "modebar": {"orientation": "v"}, "height": 300 if legend else 260,
            "margin": {"l": 50, "r": 15, "t": 40 + 14 * title.count("<br>"), "b": 85 if legend else 40},
            "showlegend": legend,
            "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.3, "yanchor": "top"},
            "xaxis": {"title": {"text": x_title}, **GRID},
            "yaxis": {"title": {"text": y_title}, **GRID, **({"range": y_range} if y_range else {})}}
    for trace in traces:
        if trace.hovertemplate is None:
            trace.hovertemplate = hover_text(trace, x_title, y_title)
    return go.Figure(traces, layout={**base, **layout}, _validate=False)


def hover_text(trace, x_title: str, y_title: str) -> str:
    """A point's hover in words, its trace and axes named: plotly's own read "(2.034573, this run
    (measured))"."""
    named = f"{trace.name}<br>" if trace.name else ""
    if trace.orientation == "h":
        return f"{named}%{{y}}: %{{x:.3~g}} {x_title}<extra></extra>"
    numbers = all(isinstance(x, int | float) for x in trace.x or ())  # else categories, shown as they are
    return f"{named}{x_title or 'at'} %{{x{':.4~g' if numbers else ''}}}: %{{y:.3~g}} {y_title}<extra></extra>"


def _running(values_per_step, numerator, denominator) -> list[float | None]:
    out, top, bottom = [], 0.0, 0.0
    for step in values_per_step:
        top, bottom = top + numerator(step), bottom + denominator(step)
        out.append(top / bottom if bottom else None)
    return out


def running_acceptance(run) -> tuple[list[int], list[float | None]]:
    """(verification rounds, accepted / drafted so far after each)."""
    return list(range(1, len(run.steps) + 1)), _running(run.steps, lambda s: s.accepted, lambda s: s.drafted)


def speed(timeline) -> tuple[list[float], list[float | None]]:
    """(seconds since the start, tokens/s so far after each step)."""
    return [t for t, _ in timeline.points], [n / t if t else None for t, n in timeline.points]


# A PyramidSD run's drafted and accepted count the target's check of the qualifier's tokens.
TARGET_STAGE = "<br><sup>the target's check of the qualifier's tokens (stage 2)</sup>"


def _staged(run) -> bool:
    return any(step.qualifier_trees for step in run.steps)


def acceptance_over_steps(run, timeline) -> go.Figure:
    rounds, running = running_acceptance(run)
    per_step = [s.accepted / s.drafted if s.drafted else None for s in run.steps]
    undrafted = per_step.count(None)  # a reviewer counted 25 points for 26 rounds, unexplained
    note = f"<br><sup>{undrafted} round{'s' * (undrafted != 1)} drafted nothing: no point</sup>" if undrafted else ""
    return small_figure("Acceptance rate" + (TARGET_STAGE if _staged(run) else "") + note, [
        go.Scatter(x=rounds, y=per_step, mode="markers", name="this round", marker=dict(size=4, opacity=0.5)),
        go.Scatter(x=rounds, y=running, mode="lines", name="running")],
        # PyramidSD's: of the tokens the qualifier passed on, as its stats count them ("/ checked" read
        # 0.51 where the target kept 36 of the 43 it reached before a rejection).
        "verification round", "accepted / passed on (stage 2)" if _staged(run) else "accepted / drafted",
        y_range=[0, 1.05])


def speed_over_time(run, timeline) -> go.Figure:
    seconds, rate = speed(timeline)
    return small_figure("Tokens per second", [go.Scatter(x=seconds, y=rate, mode="lines")], "seconds", "tokens/s")


def acceptance_length(run, timeline) -> go.Figure:
    target = run.stats.target_role
    running = _running(run.steps, lambda s: len(s.tokens), lambda s: s.forwards.get(target, 0))
    rounds = list(range(1, len(run.steps) + 1))
    return small_figure("Mean acceptance length", [go.Scatter(x=rounds, y=running, mode="lines")],
                   "verification round", "tokens per target forward")


def per_position(run, timeline) -> go.Figure:
    rates = run.stats.per_position_acceptance_rate
    title = POSITION_TITLE.format(checked="qualifier's tokens the target checked (stage 2)" if _staged(run)
                                  else "candidates checked")
    figure = small_figure(title, [go.Bar(x=list(range(1, len(rates) + 1)), y=rates)],
                          "candidate position (a tree's: its depth)", "accepted / checked there", y_range=[0, 1.05])
    figure.layout.xaxis.dtick = 1  # whole positions: with two bars plotly ticked 0.5, 1, 1.5
    return figure


# What each bar counts, beside the overall rate (accepted / every drafted candidate): a candidate
# after a block's first rejection is never checked, so a later position's bar can read 1.0 beside
# an overall 26% (the 0.6 / 1.0 / 1.0 next to 26.4%).
POSITION_TITLE = ("Acceptance by position<br><sup>of the {checked} there;</sup><br><sup>the overall rate also "
                  "counts the unchecked</sup>")


def _tau(run) -> float | None:
    return next((check.tau for check in _checked(run) if check.tau is not None), None)


def rule_test(run, timeline) -> go.Figure:
    """Each checked candidate on the test its rule applied: a ratio rule's draw u against its
    min(1, p/q) (kept where u falls under it), a threshold rule's divergence against tau. sd's chart
    plotted JS, which its rule never reads: rejected points at 0.22 sat beside accepted ones at 0.59."""
    if any(check.accept_prob is not None for check in _checked(run)):
        return ratio_test(run)
    return divergence_vs_tau(run, timeline)


def _checked(run):
    """The check of every candidate: the kept ones', then those of the ones replaced."""
    yield from (t.check for t in run.tokens)
    yield from (c for t in run.tokens for c in t.replaced_checks)


def ratio_test(run) -> go.Figure:
    def points(checks):
        return [(c.accept_prob, c.u) for c in checks if c.has_draw]
    accepted = points(t.check for t in run.tokens if t.origin != "rescued")
    rejected = points(c for t in run.tokens for c in t.replaced_checks)
    rescued = points(t.check for t in run.tokens if t.origin == "rescued")  # csd's second chance
    shown = [("accepted", COLORS["draft"], accepted), ("rejected", COLORS["rejected"], rejected)]
    shown += [("rescued (failed the test, kept by csd's memory)", COLORS["rescued"], rescued)] if rescued else []
    traces = [go.Scatter(x=[a for a, _ in chosen], y=[u for _, u in chosen], mode="markers", name=name,
                         marker=dict(color=color, size=5)) for name, color, chosen in shown]
    traces.append(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="u = min(1, p/q)",
                             line=dict(color="#888", dash="dash")))
    return small_figure("The rule's own test<br><sup>kept where the draw u falls under min(1, p/q)</sup>", traces,
                        "min(1, p/q) of the candidate", "its draw u", y_range=[0, 1])


def divergence_vs_tau(run, timeline) -> go.Figure:
    """A threshold rule's checks: each candidate's divergence, accepted or rejected, against tau.
    PyramidSD's stage one too (the qualifier checking the draft, against tau_q): its rejections
    never reach the tokens, so they come from the rounds' checks."""
    accepted = [(i, t.check.divergence) for i, t in enumerate(run.tokens) if t.check.divergence is not None]
    rejected = [(i, c.divergence) for i, t in enumerate(run.tokens) for c in t.replaced_checks
                if c.divergence is not None]
    staged = _staged(run)
    shown = [("target accepted" if staged else "accepted", COLORS["draft"], "circle", accepted),
             ("target rejected" if staged else "rejected", COLORS["rejected"], "circle", rejected)]
    first = _stage_one_points(run) if staged else {"accepted": [], "rejected": [], "matched": 0, "unmatched": 0}
    if first["accepted"] or first["rejected"]:
        shown += [("qualifier accepted", COLORS["qualifier"], "diamond", first["accepted"]),
                  ("qualifier rejected", COLORS["rejected"], "diamond-open", first["rejected"])]
    traces = [go.Scatter(x=[i for i, _ in points], y=[d for _, d in points], mode="markers", name=name,
                         marker=dict(color=color, size=6, symbol=symbol)) for name, color, symbol, points in shown]
    title = f"Divergence of each checked candidate ({run.config.divergence})" + (
        "<br><sup>after a rejection, the rest of a block goes unchecked</sup>" if staged else "")
    if first["rejected"]:  # a reviewer counted 13 struck marks in the text against 21 points here
        title += "<br><sup>all stage-1 rejections; the text strikes those before a kept token</sup>"
    matches = first["matched"] + first["unmatched"]
    if matches:  # psd-a's first stage keeps a draft token where the qualifier's own draw matches it
        drafted = sum(step.extra.get("qualifier_drafted", 0) for step in run.steps)
        title += ("<br><sup>stage 1 reads no divergence (not drawn here): the qualifier's own draw</sup>"
                  f"<br><sup>matched {first['matched']} of the {matches} draft tokens it checked, of {drafted} "
                  "drafted</sup>")
    # The legend at the foot, a line an entry: two rows of PyramidSD's four covered the axis's title.
    figure = small_figure(title, traces, "token index", "divergence", **legend_at_foot(title, len(traces), 200, 50, 60))
    taus = {"tau_t": run.config.tau_t} if staged else {"tau": _tau(run)}
    if first["accepted"] or first["rejected"]:
        taus = {"tau_q": run.config.tau_q, **taus}
    for name, tau in taus.items():
        if tau is not None:
            figure.add_hline(y=tau, line_dash="dash", annotation_text=f"{name} = {tau:g}")
    return figure


def _stage_one_points(run) -> dict[str, list]:
    """(token index, divergence) of every stage-one check that read its divergence (psd-f's), by
    verdict: the qualifier's rows of a round sit at the tokens the round emitted, from its first;
    and the count of stage-one checks that matched a draw instead (psd-a's), by outcome."""
    points, start = {"accepted": [], "rejected": [], "matched": 0, "unmatched": 0}, 0
    for step in run.steps:
        for check in step.evidence:
            if check.stage != "qualifier":
                continue
            rejected = check.verdict == "rejected"
            if check.rule_check.reads_divergence:
                points["rejected" if rejected else "accepted"].append((start + check.position,
                                                                        check.rule_check.divergence))
            else:
                points["unmatched" if rejected else "matched"] += 1
        start += len(step.tokens)
    return points


def origin_shares(run, timeline) -> go.Figure:
    shares = run.stats.origin_shares
    return small_figure("Where tokens came from", [go.Bar(x=list(ORIGINS), y=[shares[o] for o in ORIGINS],
                                                     marker_color=[COLORS[o] for o in ORIGINS])],
                   "", "share of tokens", y_range=[0, 1.05])


# No `ar` run is made for this chart: its speedup is the run's speed account's, against T(1)
# timed on the target's cache beside the run's own rounds (Compare with ar and Race run `ar`).
ESTIMATE_LABEL = "this run (its account: ar's seconds for its tokens / its own)"


def predicted_vs_measured(run, timeline) -> go.Figure:
    """Leviathan's Eq. 1 (tokens per round from the acceptance rate; a chain's) and Theorem 3.8 (the
    speedup from the tokens the blocks yielded and their measured costs) next to what the run
    measured: every speed figure from the run's speed account (speed_account.py)."""
    stats, account = run.stats, run.stats.account
    single_step, unsettled = account.single_step(), bool(account.unsettled())
    # Withheld, both of them, as the stats withhold them: a reviewer read "not settled" on the card
    # beside a predicted bar of 1.15x here.
    measured_speedup, predicted_speedup = (None, None) if unsettled else (account.speedup(),
                                                                           account.predicted_speedup())
    groups = ["tokens per target forward", "speedup over target alone"]
    predicted_tokens = predicted_tokens_per_round(run)
    estimate = ESTIMATE_LABEL + (f"<br>with T(1) = {single_step * 1000:.1f} ms" if single_step else "")  # fits 340 px
    figure = small_figure("Predicted (Leviathan) vs this run", [
        go.Bar(x=groups, y=[predicted_tokens, predicted_speedup], name=PREDICTED_LABEL,
               marker_color=COLORS["predicted"]),
        go.Bar(x=groups, y=[stats.mean_acceptance_length, measured_speedup], name=estimate,
               marker_color=COLORS["target"])], barmode="group", height=320, legend=LEGEND_BELOW,
        margin={"l": 50, "r": 15, "t": 40, "b": 110})
    differ = why_tokens_differ(run, predicted_tokens)
    if differ:  # said above the bars: where the prediction's assumption did not hold
        top = max(value for value in (predicted_tokens, stats.mean_acceptance_length) if value)
        figure.add_annotation(x=groups[0], y=top, yanchor="bottom", showarrow=False, font={"size": 10},
                              text="<br>".join(textwrap.wrap(differ, 44)), name="tokens-differ")
    apart = why_speedup_differs(run, predicted_speedup, measured_speedup)
    if apart:  # a tree run's 1.32x predicted beside its 1.24x went unexplained
        figure.add_annotation(x=groups[1], y=max(predicted_speedup, measured_speedup), yanchor="bottom",
                              showarrow=False, font={"size": 10}, text="<br>".join(textwrap.wrap(apart, 30)),
                              name="speedup-differs")
    if unsettled:  # said where the two bars would stand
        figure.add_annotation(x=groups[1], y=0, yanchor="bottom", textangle=-90, showarrow=False,
                              font={"color": "#8a1c1a", "size": 10}, text=UNSETTLED_BAR, name="unsettled")
    return figure


UNSETTLED_BAR = "not settled (see the stats)"
# Under the plot, where several entries cannot run into the title.
LEGEND_BELOW = {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.3, "yanchor": "top"}
# At the figure's foot: the budget's six entries in two rows ran over its axis's numbers from y = -0.3.
LEGEND_AT_FOOT = {"orientation": "h", "x": 0, "xanchor": "left", "y": 0, "yref": "container", "yanchor": "bottom"}
LEGEND_LINE = 21  # pixels a legend entry takes where each has a line of its own


def legend_at_foot(title: str, entries: int, plot: int, left: int, axis: int) -> dict:
    """A figure's height, margins and legend, the legend at its foot an entry a line (as a narrow
    panel shows it) under `axis` pixels of its x axis, the title's lines above a `plot` tall."""
    top, foot = 40 + 14 * title.count("<br>"), LEGEND_LINE * entries + axis
    return {"height": top + plot + foot, "margin": {"l": left, "r": 15, "t": top, "b": foot}, "legend": LEGEND_AT_FOOT}


BUDGET_COLORS = {"drafting": COLORS["draft"], PROMPT_PASS: "#9fc3e6", "target passes": COLORS["target"],
                 "checks and walk": "#8e6bbf",
                 HOST_PART: "#bbbbbb", "timing ar's step": "#e0b84f", PREPARING_PART: "#c9b79c",
                 WAITING_PART: "#e8e8e8"}


def time_budget(run, timeline) -> go.Figure:
    """Where this run's seconds went (adding up to the status line's seconds), beside the cost
    model's prediction and `ar`'s time for the same tokens (`SpeedAccount.budget`): the question of a
    run with high acceptance and little speedup."""
    budget, busy = run.stats.account.budget() or {}, run.stats.account.unsettled()
    # Not settled: the modelled rows (in its T(1)) are a speedup by another name; its own row stands.
    rows = [MEASURED_ROW] if busy and MEASURED_ROW in budget else list(budget)
    names = {"drafting": "drafting (the qualifier's checks included)"} if _staged(run) else {}
    traces = [go.Bar(y=rows, x=[budget[row].get(part) for row in rows], name=names.get(part, part), orientation="h",
                     marker_color=color,
                     hovertemplate=f"%{{y}}<br>{names.get(part, part)}: %{{x:.2f}} s<extra></extra>")
              for part, color in BUDGET_COLORS.items()]
    # Not "its T(1) moved with other work": a reviewer read that beside the stats' "passes under T(1)".
    title = "Where the seconds went (seconds)" + ("<br><sup>speedup not settled (the stats say why), so no "
                                                  "modelled rows</sup>" if busy else "")
    # Seven legend lines covered the numbers of a one-row chart.
    return small_figure(title, traces, "", "", barmode="stack",
                        **legend_at_foot(title, len(traces), 60 + 40 * len(rows), 190, 45))


def _branched(step) -> bool:
    return step.tree is not None and branches(step.tree["parents"])


# Tokens: Eq. 1 for a chain, from acceptance by depth for a tree (README); speedup: Theorem 3.8 on
# the tokens this run's drafted rounds yielded and its measured costs (SpeedAccount.predicted_speedup).
PREDICTED_LABEL = "predicted: tokens by Eq. 1 (a tree: by depth),<br>speedup from its rounds at its c and pass cost"


def predicted_tokens_per_round(run) -> float | None:
    """Eq. 1 from the run's acceptance rate for a chain, for each target pass at the length of the
    block it verified (a draft that stops when unsure drafts shorter blocks than its longest). A
    token tree's rate counts all its nodes, of which a round keeps at most one per depth, so Eq. 1
    would predict it fewer tokens than the chain it beats; a tree's expectation comes from its
    acceptance by depth instead (`tokens_from_depth_rates`), to the depth each round drafted."""
    stats = run.stats
    if stats.acceptance_rate is None or not stats.max_block:
        return None
    branched, rates = any(_branched(step) for step in run.steps), stats.per_position_acceptance_rate
    passes = [(step.forwards.get(stats.target_role, 0), step) for step in run.steps]
    expected = [tokens_from_depth_rates(rates[:_depth(step)]) if branched
                else expected_tokens_per_step(stats.acceptance_rate, step.drafted) for _, step in passes]
    return sum(count * tokens for (count, _), tokens in zip(passes, expected)) / sum(count for count, _ in passes)


FAR_OFF = 0.2  # of the tokens per pass the run made: a prediction this far off is explained on the chart


def why_tokens_differ(run, predicted: float | None) -> str:
    """Words for a prediction of tokens per pass a fifth or more off what the run made ("" where
    it is close; a reviewer found 3.66 beside 4.80 unexplained): Eq. 1 takes each candidate to
    pass alone at the run's rate, and the acceptance by position says how this run's did (a
    PyramidSD run's blocks passed or failed whole)."""
    stats, made = run.stats, run.stats.mean_acceptance_length
    if predicted is None or not made or abs(predicted - made) < FAR_OFF * made:
        return ""
    by_position = ", ".join(f"{rate:.2f} of {stats.position_drafted[i]}" for i, rate in
                            zip(sorted(stats.position_drafted), stats.per_position_acceptance_rate))
    assumed = ("deeper rates rest on fewer checks" if any(_branched(step) for step in run.steps)
               else f"Eq. 1 takes each candidate to pass alone at {stats.acceptance_rate:.2f}")
    return f"{assumed}; by position this run's passed {by_position}"


SPEEDUP_APART = 0.05  # of the measured speedup: a prediction this far off says what it leaves out


def why_speedup_differs(run, predicted: float | None, measured: float | None) -> str:
    """Words for a predicted speedup apart from the measured one ("" where close or not shown):
    Theorem 3.8 counts the drafting and the passes alone, not the checks and the host's time."""
    if predicted is None or not measured or abs(predicted - measured) < SPEEDUP_APART * measured:
        return ""
    parts = run.stats.account.parts()
    return (f"the prediction counts drafting and passes alone; this run also spent {parts['checks and walk']:.2f} s "
            f"on checks and walk and {parts['host, between them']:.2f} s between them")


def _depth(step) -> int:
    """How deep a round's drafted tree (or chain) went."""
    if step.tree is None:
        return step.drafted
    depths = []
    for parent in step.tree["parents"]:
        depths.append(1 if parent < 0 else depths[parent] + 1)
    return max(depths, default=0)


def tokens_from_depth_rates(rates: list[float]) -> float:
    """Expected tokens per round when the path goes past depth d with probability r_d, given it
    reached d: the verifier's own token plus P(depth 1 kept) + P(depths 1 and 2 kept) + ..."""
    expected, reach = 1.0, 1.0
    for rate in rates:
        reach *= rate
        expected += reach
    return expected


CHARTS = (("chart-acceptance", acceptance_over_steps), ("chart-speed", speed_over_time),
          ("chart-length", acceptance_length), ("chart-position", per_position),
          ("chart-divergence", rule_test), ("chart-origins", origin_shares),
          ("chart-speedup", predicted_vs_measured), ("chart-budget", time_budget))


def all_figures(run, timeline) -> list[go.Figure]:
    return [make(run, timeline) for _, make in CHARTS]


def figures_html(figures: list[go.Figure], plotly_js: bool = True) -> str:
    """One standalone HTML page with every chart: plotly.js embedded once (4.8 MB, works offline),
    or without `plotly_js` loaded from plotly's CDN (the charts' data alone)."""
    first = True if plotly_js else "cdn"
    parts = [f.to_html(full_html=False, include_plotlyjs=first if i == 0 else False) for i, f in enumerate(figures)]
    return "<!doctype html><html><head><meta charset='utf-8'></head><body>" + "".join(parts) + "</body></html>"


def bars(title: str, series: dict[str, dict[str, float]]) -> go.Figure:
    """Grouped bars, one trace per distribution (name -> {token label: probability})."""
    traces = [go.Bar(x=list(probs), y=list(probs.values()), name=name) for name, probs in series.items()]
    # The legend goes under the tilted token labels: above the plot, step mode's five long names
    # took three lines and ran over the title.
    return small_figure(title, traces, "", "probability", barmode="group", y_range=[0, 1.05], height=400,
                   margin={"l": 50, "r": 15, "t": 40, "b": 150},
                   legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -0.45, "yanchor": "top"})


def toy_bars(toy) -> go.Figure:
    series = {"p (target)": dict(zip(TOY_TOKENS, TOY_P.tolist())), "q (draft)": dict(zip(TOY_TOKENS, TOY_Q.tolist())),
              "residual": toy.residual(), f"emitted so far ({len(toy.rounds)} rounds)": toy.emitted_shares()}
    return bars("Seed-001 example: emitted tokens follow p", series)
