import csv
import json
import re
import statistics

import pytest
import torch

from playground.decoding.stats import Stats
from playground.decoding.step import Step
from playground.measure.benchmark import (
    BASELINES,
    COLUMNS,
    Bench,
    Setting,
    expand_settings,
    paired_speedups,
    run_bench,
    spread,
    write_report,
)
from playground.measure.quality import Task, agreement, is_correct


def test_paired_speedup_cancels_drift_that_unpaired_averages_do_not():
    # The machine slows down 3x over the run; the method is always exactly twice as fast as ar.
    ar_tps = [30.0, 20.0, 10.0]
    method_tps = [60.0, 40.0, 20.0]
    speedups = paired_speedups(method_tps, ar_tps)
    assert speedups == [2.0, 2.0, 2.0]
    assert spread(speedups) == {"median": 2.0, "q1": 2.0, "q3": 2.0}
    # Unpaired: the method measured in the slow half against ar in the fast half looks slower.
    assert method_tps[-1] / ar_tps[0] < 1


def test_spread_reports_median_and_quartiles_and_drops_missing():
    assert spread([1.0, 3.0, 2.0, None, 4.0, 5.0]) == {"median": 3.0, "q1": 2.0, "q3": 4.0}
    assert spread([]) == {"median": None, "q1": None, "q3": None}
    assert paired_speedups([2.0, None, 3.0], [1.0, 1.0, 0.0]) == [2.0]


def test_expand_settings_sweeps_thresholds_only_for_methods_that_read_one():
    labels = [s.label for s in expand_settings(["ar", "sd", "fsd", "hf-assisted", "hf-generate"], [2, 4], [0.1, 0.5])]
    assert labels == ["sd K=2", "sd K=4", "fsd K=2 tau=0.1", "fsd K=2 tau=0.5", "fsd K=4 tau=0.1",
                      "fsd K=4 tau=0.5", "hf-assisted K=2", "hf-assisted K=4", "hf-generate"]


def test_answer_check_and_agreement():
    assert is_correct("The answer is 1,000.", ("1000",))
    assert not is_correct("It is 10000", ("1000",))
    assert is_correct("PARIS is the capital", ("Paris",))
    assert is_correct("anything", ()) is None
    assert agreement([1, 2, 3], [1, 2, 3]) == (True, None)
    assert agreement([1, 5, 3], [1, 2, 3]) == (False, 1)
    assert agreement([1, 2], [1, 2, 3]) == (False, 2)


@pytest.fixture(scope="module")
def bench_rows(family):
    """A whole bench on the tiny family: the tests that take it are marked slow."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: extra threads only add contention on shared machines
    tasks = [Task("t1", "hello there", ("e",)), Task("t2", "abc", ())]
    bench = Bench(family, tasks, {"max_new_tokens": 12, "temperature": 0.0}, repeats=2)
    settings = expand_settings(["sd", "fsd", "hf-assisted", "hf-generate"], [3], [0.0, 0.6])
    yield run_bench(bench, settings, with_controls=True)
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_bench_runs_end_to_end_and_writes_documented_columns(bench_rows, tmp_path):
    summary_path = write_report(bench_rows, tmp_path, {"machine": "test"})
    with (tmp_path / "runs.csv").open() as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    assert reader.fieldnames == COLUMNS
    methods = {r["method"] for r in rows}
    assert methods == {"ar", "sd", "fsd", "fsd-random", "hf-assisted", "hf-generate"}
    assert not any(r["error"] for r in rows)
    assert "| sd K=3 |" in summary_path.read_text()


def chart_traces(path) -> dict[str, dict]:
    """The traces a written chart hands to plotly.js, by name."""
    page = path.read_text()
    data_start = re.search(r'Plotly\.newPlot\(\s*"[^"]+",\s*', page).end()
    return {trace["name"]: trace for trace in json.JSONDecoder().raw_decode(page, data_start)[0]}


@pytest.mark.slow
def test_bench_charts_draw_each_settings_own_runs(bench_rows, tmp_path):
    """Every point of every chart against the runs of the setting it is labelled with."""
    write_report(bench_rows, tmp_path, {"machine": "test"})
    runs: dict[str, list[dict]] = {}
    for row in bench_rows:
        runs.setdefault(row["setting"], []).append(row)

    def median(setting, value):
        return statistics.median(value(r) for r in runs[setting])

    def mean(setting, key):
        return statistics.fmean(r[key] for r in runs[setting] if r[key] is not None)

    def points(chart, series, setting_prefix=None):
        """{setting: (x, y)}: a point's label (tau or p) completes the series' setting label."""
        trace = chart_traces(tmp_path / chart)[series]
        return {f"{setting_prefix or series} {label}".strip(): (x, y)
                for label, x, y in zip(trace["text"], trace["x"], trace["y"])}

    speed = {s: median(s, lambda r: r["tokens_per_second"]) for s in runs}
    for chart, key in (("agreement_vs_speed.html", "exact_match"), ("accuracy_vs_speed.html", "correct")):
        drawn = points(chart, "fsd K=3") | points(chart, "sd K=3") | points(chart, "hf-assisted K=3")
        assert drawn == {s: pytest.approx((speed[s], mean(s, key))) for s in
                         ("fsd K=3 tau=0", "fsd K=3 tau=0.6", "sd K=3", "hf-assisted K=3")}, chart
    for method in ("fsd", "fsd-random"):
        drawn = points("random_control.html", method, f"{method} K=3")
        assert drawn == {s: pytest.approx((mean(s, "share_draft"), mean(s, "correct"))) for s in runs
                         if s.startswith(f"{method} K=3 ")}, method
    sd = chart_traces(tmp_path / "speedup_vs_candidates.html")["sd"]
    assert sd["x"] == [3]
    assert sd["y"] == [pytest.approx(median("sd K=3", lambda r: r["tokens_per_second"] / r["ar_tokens_per_second"]))]


@pytest.mark.slow
def test_bench_charts_open_offline_sharing_one_plotly_js(bench_rows, tmp_path):
    write_report(bench_rows, tmp_path, {"machine": "test"})
    nested = tmp_path / "again"
    nested.mkdir()
    write_report(bench_rows, nested, {"machine": "test"})
    assert (tmp_path / "plotly.min.js").stat().st_size > 1_000_000 and not (nested / "plotly.min.js").exists()
    page = (nested / "random_control.html").read_text()
    assert 'src="../plotly.min.js"' in page and "https://" not in page


@pytest.mark.slow
def test_bench_lossless_methods_agree_with_target_greedy(bench_rows):
    for row in bench_rows:
        if row["method"] in ("ar", "sd", "hf-assisted", "hf-generate") or row["setting"] == "fsd K=3 tau=0":
            assert row["exact_match"] == 1, row["setting"]
            assert row["first_divergence"] is None


def test_statistics_columns_are_filled_for_our_runs_and_empty_for_the_baselines(bench_rows):
    for row in bench_rows:
        ours = row["method"] not in BASELINES
        assert (row["share_target"] is not None) == ours, row["setting"]
        assert (row["mean_acceptance_length"] is not None) == ours, row["setting"]
        assert (row["candidate_acceptance"] is not None) == (ours and row["method"] != "ar"), row["setting"]


@pytest.mark.slow
def test_random_control_matches_fsd_acceptance(bench_rows):
    controls = {r["setting"] for r in bench_rows if r["method"] == "fsd-random"}
    assert "fsd-random K=3 p=0" in controls  # tau=0 accepts nothing, so its control accepts nothing
    assert Setting("fsd-random", {"candidates": 3, "random_accept": 0.0}).label in controls


def test_candidate_acceptance_counts_only_examined_candidates():
    # 3 blocks of K=4: accepted 4 (full), 1 then rejected, 0 then rejected -> 5 of 4 + 2 + 1 examined.
    stats = Stats()
    for flags in ([True] * 4, [True, False, False, False], [False] * 4):
        stats.add(Step([], drafted=4, accepted=sum(flags), accepted_flags=flags))
    assert stats.candidate_acceptance == 5 / 7
    assert stats.acceptance_rate == 5 / 12
    assert Stats().candidate_acceptance is None
