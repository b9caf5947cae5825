"""What else ran on the cores during a run is named by program, from /proc."""

import os
import subprocess
import time

import pytest

import playground
from playground.decoding.speed.other_programs import (
    NAMED_SHARE,
    TICKS,
    OtherDemand,
    OtherPrograms,
    cpu_by_process,
    demand_by_process,
    most_in_one,
    named,
    program_cpu,
)
from playground.decoding.speed.speed_account import BUSY_UTILIZATION, SpeedAccount, Timing
from playground.ui.views.paired_speedups import Timed, busy_note

needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")


def stat_line(name: str, flags: int = 0x400000) -> str:
    fields = ["S", "1", "1", "1", "0", "-1", str(flags), "5", "0", "0", "0", str(3 * TICKS), str(TICKS),
              "0", "0", "20", "0", "1", "0", "777", "1000"]
    return f"4242 ({name}) {' '.join(fields)}"


def test_a_stat_line_gives_the_programs_name_start_and_user_and_system_seconds():
    assert program_cpu(stat_line("Web Content")) == ("Web Content", 777, 4.0)
    assert program_cpu(stat_line("a) (b"))[0] == "a) (b", "the name ends at the last parenthesis"
    # A kernel worker renames itself with its work ("kworker/1:2-mm_percpu_wq"): counted as a new
    # program each time, it read 1.25 of a core.
    assert program_cpu(stat_line("kworker/1:2-events", flags=0x04208040)) is None


@needs_proc
def test_a_program_burning_a_core_during_the_watch_is_named_and_this_process_is_not():
    watch = OtherPrograms()
    burner = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        time.sleep(1.0)
        shares = dict(watch.shares())  # while it runs: a program that has ended is no longer in /proc
    finally:
        burner.kill()
        burner.wait()
    assert shares.get("sh", 0.0) > 0.2, shares  # a core's worth, less what two test workers took from it
    assert shares["sh"] <= 1.1, "one thread, at most a core"
    assert os.getpid() not in {pid for pid, _ in cpu_by_process()}
    assert all(share >= NAMED_SHARE for share in shares.values())


@needs_proc
def test_a_program_wants_its_core_whether_or_not_it_gets_it():
    """Two burners on two cores took 1.1 of them beside a run and 2.0 beside the idle app: a note read
    "busier now (2.0 cores against 1.0)" with the same burners throughout. Wanted, they are 2 either way."""
    burners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(os.cpu_count() + 1)]
    try:
        watch, before, began = OtherDemand(), demand_by_process(), time.perf_counter()
        time.sleep(1.0)
        after, elapsed, wanted = demand_by_process(), time.perf_counter() - began, watch.cores()
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    if wanted is None:
        pytest.skip("the kernel keeps no schedstat")
    pids = {burner.pid for burner in burners}
    each = [(after[key] - before[key]) / elapsed for key in after if key[0] in pids and key in before]
    assert len(each) == len(burners) and all(0.85 <= share <= 1.1 for share in each), \
        f"each wants its core, though they share fewer: {each}"
    assert wanted >= 0.9 * len(burners), "and the watch counts them all"


@needs_proc
def test_a_finished_run_records_the_other_programs_and_its_json_carries_them(family):
    run = playground.generate("hello there", method="sd", **family, max_new_tokens=12)
    besides = run.stats.account.besides
    assert besides is not None and run.to_dict()["stats"]["account"]["besides"] == besides
    assert all(isinstance(name, str) and share >= NAMED_SHARE for name, share in besides)


def test_the_named_programs_are_the_largest_first_with_a_count_of_the_rest():
    shares = [("chromium", 0.62), ("node", 0.11), ("sh", 0.08), ("python3", 0.06)]
    assert named(shares) == "chromium 0.62 of a core, node 0.11, sh 0.08 and 1 more"
    assert named([]) == f"no other program took {NAMED_SHARE:.2f} of a core or more"
    assert named(None) == ""
    assert most_in_one([None, [("node", 0.1), ("sh", 0.5)], [("node", 0.3)]]) == [("sh", 0.5), ("node", 0.3)]
    assert most_in_one([None, None]) is None


def test_a_reason_that_blames_other_work_names_the_programs_that_ran():
    busy = SpeedAccount(round_count=9, decoder_cpu=BUSY_UTILIZATION, clock=2.0, besides=[("python3", 1.93)])
    assert "other work (besides this app during it: python3 1.93 of a core)" in busy.unsettled()
    apart = SpeedAccount(round_count=9, besides=[("chromium", 0.41)])
    apart.reference = [Timing(0.02, 0.02, 10, 1), Timing(0.09, 0.05, 20, 9)]
    assert apart.unsettled().endswith("moved them (besides this app during it: chromium 0.41 of a core)")
    apart.besides = []
    assert apart.unsettled().endswith("(besides this app during it: no other program took 0.05 of a core or more)")
    apart.besides = None
    assert apart.unsettled().endswith("moved them"), "unmeasured: nothing named"


def test_a_sweeps_spread_names_the_programs_that_ran_beside_its_runs():
    def timed(speeds, besides):
        side = Timed(dict(enumerate(speeds)))
        side.runs = {i: _Run(b) for i, b in enumerate(besides)}
        return side
    ar = timed([10.0, 20.0], [[("chromium", 0.4)], [("node", 0.1)]])
    sd = timed([15.0, 16.0], [[("chromium", 0.7)], []])
    assert "(besides this app, the most in one run: chromium 0.70 of a core, node 0.10)" in busy_note([ar, sd])
    assert "other programs shared the cores with them (besides this app" in busy_note([ar, sd]), "chromium: 0.70"
    quiet = timed([10.0, 20.0], [[], []])
    assert "no other program took 0.05 of a core or more in any run: this app's own threads" in busy_note([quiet])
    # Walk 26: a quiet sweep, the page's browser at 0.12 of a core, read "they met uneven load"
    drawn = timed([10.0, 15.4], [[("chromium", 0.12)], [("chromium", 0.08)]])
    assert ("1.54x between its runs: runs of one setting move this much here with no other program taking much of a "
            "core (besides this app, the most in one run: chromium 0.12 of a core)") in busy_note([drawn])
    assert "other programs shared" not in busy_note([quiet]) + busy_note([drawn])


class _Run:
    def __init__(self, besides):
        self.stats = type("Stats", (), {"account": SpeedAccount(besides=besides)})()
