"""Charts a room can read: no legend beside a title, acceptance by position says what it counts, and
the estimated speedup says its T(1) and is flagged where the run's own costs cannot allow it."""

from playground.engine import generate
from playground.ui import charts


def test_legends_sit_under_the_plot_and_position_bars_say_what_they_count(family):
    run = generate("hello there", method="sd", max_new_tokens=24, target=family["target"], draft=family["draft"],
                   temperature=1.0)
    for make in (charts.acceptance_over_steps, charts.divergence_vs_tau):  # two traces each: a legend
        layout = make(run, charts.Timeline()).layout
        assert layout.showlegend and layout.legend.y < 0 and layout.legend.yanchor == "top"
    position = charts.per_position(run, charts.Timeline()).layout
    assert "of the candidates checked there" in position.title.text and "unchecked" in position.title.text
    assert position.yaxis.title.text == "accepted / checked there"


def test_the_estimated_speedup_names_its_t1_and_is_flagged_past_the_runs_bound(family):
    run = generate("hello there", method="sd", max_new_tokens=24, target=family["target"], draft=family["draft"])
    figure = charts.predicted_vs_measured(run, charts.Timeline())
    estimate = figure.data[1]
    assert "T(1) = " in estimate.name and " ms" in estimate.name
    run.stats.single_step_seconds *= 50  # T(1) timed while the machine was busy: the estimate reads 50x higher
    flagged = charts.predicted_vs_measured(run, charts.Timeline())
    notes = [a.text for a in flagged.layout.annotations if a.text.startswith("impossible")]
    assert notes and "at most from this run's costs" in notes[0]
