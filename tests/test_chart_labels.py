"""Charts a room can read: no legend beside a title, acceptance by position says what it counts, and
the speedup says its T(1) and is said not settled where a busy machine moved it."""

import playground
from playground.engine import generate
from playground.methods import draft_levers
from playground.ui.views import charts

from .quiet_account import as_quiet


def test_legends_sit_under_the_plot_and_position_bars_say_what_they_count(family):
    run = generate("hello there", method="sd", max_new_tokens=24, target=family["target"], draft=family["draft"],
                   temperature=1.0)
    for make in (charts.acceptance_over_steps, charts.rule_test):  # two traces each: a legend
        layout = make(run, charts.Timeline()).layout
        assert layout.showlegend and layout.legend.y < 0 and layout.legend.yanchor == "top"
    acceptance = charts.acceptance_over_steps(run, charts.Timeline()).layout.title.text
    undrafted = sum(not step.drafted for step in run.steps)
    assert (f"{undrafted} round" in acceptance) == (undrafted > 0), "a round with no point is said"
    position = charts.per_position(run, charts.Timeline()).layout
    assert "of the candidates checked there" in position.title.text and "unchecked" in position.title.text
    assert position.yaxis.title.text == "accepted / checked there"
    assert position.xaxis.dtick == 1, "whole positions (a byte draft's two bars were ticked 0.5, 1, 1.5)"


def test_the_speedup_names_its_t1_and_is_said_not_settled_on_a_busy_machine(family):
    run = generate("hello there", method="sd", max_new_tokens=24, target=family["target"], draft=family["draft"])
    account = run.stats.account
    as_quiet(account)
    figure = charts.predicted_vs_measured(run, charts.Timeline())
    estimate = figure.data[1]
    assert f"T(1) = {account.single_step() * 1000:.1f} ms" in estimate.name
    assert estimate.y[1] == account.speedup() and "unsettled" not in [a.name for a in figure.layout.annotations]
    account.decoder_cpu = account.decoder_seconds / 2  # its thread had its core half the time
    busy = charts.predicted_vs_measured(run, charts.Timeline())
    assert [a.text for a in busy.layout.annotations] == [charts.UNSETTLED_BAR]
    assert busy.data[1].y[1] is None, "no bar for a figure the stats withhold"
    budget = charts.time_budget(run, charts.Timeline())
    assert "not settled" in budget.layout.title.text
    # its own seconds only: a second visitor's page drew ar at a busy T(1) as 79.5 s beside its 43 s run
    assert {row for bar in budget.data for row in bar.y} == {"this run (measured)"}
    account.decoder_cpu = account.decoder_seconds
    assert len({row for bar in charts.time_budget(run, charts.Timeline()).data for row in bar.y}) == 3


def test_every_hover_names_its_figure_in_words(family):
    """A reviewer's hover read "(2.034573, this run (measured))": plotly's own, with no unit or name."""
    run = generate("hello there", method="sd", max_new_tokens=24, target=family["target"], draft=family["draft"],
                   temperature=1.0)
    figures = [make(run, charts.Timeline()) for make in (charts.acceptance_over_steps, charts.rule_test,
                                                        charts.per_position, charts.time_budget)]
    for trace in (trace for figure in figures for trace in figure.data):
        assert trace.hovertemplate and trace.hovertemplate.endswith("<extra></extra>"), trace.name
    drafting = next(bar for bar in charts.time_budget(run, charts.Timeline()).data if bar.name == "drafting")
    assert drafting.hovertemplate == "%{y}<br>drafting: %{x:.2f} s<extra></extra>"
    assert charts.hover_text(charts.go.Scatter(name="running", x=[1, 2]), "round", "accepted") == \
        "running<br>round %{x:.4~g}: %{y:.3~g} accepted<extra></extra>"  # "seconds 1.601716" before
    categories = charts.go.Bar(x=["draft", "target"])
    assert charts.hover_text(categories, "", "share") == "at %{x}: %{y:.3~g} share<extra></extra>"
    # the budget's legend has room under its axis's numbers: a line an entry (seven covered a one-row chart's)
    budget = charts.time_budget(run, charts.Timeline()).layout
    assert budget.margin.b >= charts.LEGEND_LINE * len(charts.BUDGET_COLORS) + 40


def test_a_predicted_speedup_apart_from_the_runs_says_what_it_leaves_out(family):
    """A tree run's 1.32x predicted beside its measured 1.24x went unexplained."""
    run = generate("hello there", method="sd", max_new_tokens=24, target=family["target"], draft=family["draft"])
    parts = run.stats.account.parts()
    words = charts.why_speedup_differs(run, 1.32, 1.24)
    assert words == (f"the prediction counts drafting and passes alone; this run also spent "
                     f"{parts['checks and walk']:.2f} s on checks and walk and {parts['host, between them']:.2f} s "
                     "between them")
    assert charts.why_speedup_differs(run, 1.25, 1.24) == "" and charts.why_speedup_differs(run, None, 1.24) == ""


def test_step_modes_draft_words_name_the_lookup_branch_of_a_tree():
    """A node showed 3 candidates beside "up to 1 more"; the third was the prompt lookup's, said nowhere there."""
    words = draft_levers.describe(playground.RunConfig(method="sd", tree_width=2))
    assert "up to 1 more candidates beside each token it doubts, and the prompt lookup's proposal as one more" in words
