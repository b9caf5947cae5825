"""Compare's repeated timing: the alternating order, medians with ranges, speedups paired within a
repeat, and the note when the machine was busy."""

from types import SimpleNamespace

from playground.ui.views.paired_speedups import Timed, busy_note, repeated, schedule


def test_the_order_alternates_so_every_side_runs_first_and_last():
    assert schedule(3, 3) == [(0, 0), (0, 1), (0, 2), (1, 2), (1, 1), (1, 0), (2, 0), (2, 1), (2, 2)]


def test_every_side_warms_up_briefly_then_runs_in_the_alternating_order():
    calls = []

    def side(name):
        return lambda **overrides: calls.append((name, overrides)) or f"{name} run"

    events = list(repeated([side("ar"), side("sd")], 2))
    assert [(s, r) for s, r, _ in events] == [(0, -1), (1, -1), (0, 0), (1, 0), (1, 1), (0, 1)]
    assert calls[:2] == [("ar", {"max_new_tokens": 4}), ("sd", {"max_new_tokens": 4})]
    assert all(overrides == {} for _, overrides in calls[2:]) and events[2][2] == "ar run"


def test_speed_is_the_median_with_its_range_and_speedup_pairs_runs_of_one_repeat():
    ar = Timed({0: 10.0, 1: 5.0, 2: 10.0})  # repeat 1: the machine was busy for both
    sd = Timed({0: 15.0, 1: 7.5, 2: 12.0})
    assert sd.text() == "12.0 (7.5-15.0, 3 runs)"
    # The ratio of the medians, 1.20x, is said beside the paired figure, with why it is not the figure.
    assert sd.speedup_text(ar) == ("1.50x (1.20-1.50); the median speeds are 1.20x apart (a repeat's two runs "
                                   "meet the same load, so the paired median is the figure)")
    assert Timed({0: 15.0, 1: 7.5, 2: 15.0}).speedup_text(ar) == "1.50x (1.50-1.50)", "medians agree: one figure"
    assert "other programs shared the cores with them" in busy_note([ar, sd]) and "2.00x" in busy_note([ar, sd])
    assert busy_note([Timed({0: 10.0, 1: 10.5})]) == ""
    assert Timed().text() == "–" and Timed().speedup_text(ar) == "–"


def test_slow_speeds_keep_two_decimals():
    """A busy machine's 0.34 and 0.46 tokens/s read as 0.3 and 0.5: their ratio was lost."""
    assert Timed({0: 0.34, 1: 0.46, 2: 0.41}).text() == "0.41 (0.34-0.46, 3 runs)"
    assert Timed({0: 13.04, 1: 12.96, 2: 13.0}).text() == "13.0 (13.0-13.0, 3 runs)"


def test_a_column_shows_its_median_run_so_its_seconds_are_its_median_speeds():
    """A reviewer found a column's "where the seconds went" at the bottom of its speed range: it
    came from the side's first run."""
    runs = {0: "first", 1: "fastest", 2: "median"}
    side = Timed({0: 12.3, 1: 14.3, 2: 14.1}, runs=runs)
    assert side.median_run() == "median"
    assert Timed({0: 10.0, 1: 12.0}, runs={0: "slower", 1: "faster"}).median_run() == "slower"
    assert Timed({}, runs={0: "wrote nothing"}).median_run() == "wrote nothing"


def test_a_pairing_whose_runs_lacked_their_core_is_not_settled():
    """Beside two burners a tau's 1.54x (1.47-1.54) read settled against its quiet 1.18x (1.09-1.28)."""
    class Account:
        def __init__(self, share):
            self.share = share

        def busy(self):
            return self.share

    def runs(*shares):
        return {repeat: SimpleNamespace(stats=SimpleNamespace(account=Account(share)))
                for repeat, share in enumerate(shares)}

    ar = Timed({0: 10.0, 1: 10.0, 2: 10.0}, runs=runs(None, None, None))
    fsd = Timed({0: 15.4, 1: 14.7, 2: 15.4}, runs=runs(None, 0.45, None))
    speedup = fsd.speedup(ar)
    assert speedup.median == 1.54
    assert speedup.unsettled.startswith("the machine was busy: a decoding thread of its runs or ar's had its core 45%")
    assert not Timed({0: 15.4, 1: 14.7, 2: 15.4}, runs=runs(None, None, None)).speedup(ar).unsettled, "quiet: settled"
