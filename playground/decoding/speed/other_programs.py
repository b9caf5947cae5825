"""The other programs that ran on the machine's cores during a run, by name, so that a figure left
unsettled by "other work" names that work. A reviewer read "other work moved them" on a quiet
machine and could not see any: a browser drawing the page on the same cores is a program of its own.
Read from /proc (Linux; elsewhere there is nothing to name); a program that ended before the run
did is no longer there to read.
"""

import collections
import os
import time
from pathlib import Path

PROC = Path("/proc")
NAMED_SHARE = 0.05  # of one core over the run: a program that took less is not named
NAMED_AT_MOST = 3
KERNEL_THREAD = 0x00200000  # PF_KTHREAD: the kernel's own workers, whose names change with their work


def _ticks_per_second() -> int:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (AttributeError, ValueError, OSError):
        return 100


TICKS = _ticks_per_second()


def cpu_by_process() -> dict[tuple[int, int], tuple[str, float]]:
    """Every other program's process, by (pid, start time), with its (name, CPU seconds so far);
    kernel threads left out; {} where there is no /proc."""
    return {(pid, started): (name, cpu) for pid, name, started, cpu in _other_processes()}


def demand_by_process() -> dict[tuple[int, int], float]:
    """Every other program's process, by (pid, start time), with the seconds its threads have run
    or waited for a core so far (each thread's schedstat): a program that wants a core all the time
    adds a second each second, whether it gets the core or not. {} where the kernel keeps no schedstat."""
    found = {}
    for pid, _, started, _ in _other_processes():
        try:
            threads = os.listdir(PROC / str(pid) / "task")
            found[pid, started] = sum(_ran_and_waited(PROC / str(pid) / "task" / thread) for thread in threads)
        except OSError:  # it ended while being read, or there is no schedstat
            continue
    return found


def _ran_and_waited(task: Path) -> float:
    ran, waited, _ = (task / "schedstat").read_text().split()
    return (int(ran) + int(waited)) / 1e9


def _other_processes():
    """(pid, name, start time, CPU seconds) of every process but this one, kernel threads left out."""
    own = os.getpid()
    try:
        entries = os.listdir(PROC)
    except OSError:
        return
    for entry in entries:
        if not entry.isdigit() or int(entry) == own:
            continue
        try:
            stat = (PROC / entry / "stat").read_text()
        except OSError:  # it ended while being read
            continue
        if (process := program_cpu(stat)) is not None:
            yield int(entry), *process


def program_cpu(stat: str) -> tuple[str, int, float] | None:
    """(program name, start time in ticks, CPU seconds) from a /proc/<pid>/stat line, "pid (name)
    state ...", None for a kernel thread. The name may hold spaces and parentheses; the flags, user
    and system time and start time are the line's 9th, 14th, 15th and 22nd fields (proc(5))."""
    name, fields = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
    if int(fields[6]) & KERNEL_THREAD:
        return None
    return name, int(fields[19]), (int(fields[11]) + int(fields[12])) / TICKS


class OtherPrograms:
    """Watches, from its making, the CPU the other programs take."""

    def __init__(self):
        self.at, self.start = time.perf_counter(), cpu_by_process()

    def shares(self) -> list[tuple[str, float]] | None:
        """(program, its share of one core since the watch began), the largest first, those over
        NAMED_SHARE; None where the machine has no /proc to read."""
        now, elapsed = cpu_by_process(), time.perf_counter() - self.at
        if not now or elapsed <= 0:
            return None
        by_name = collections.Counter()
        for process, (name, cpu) in now.items():  # one that started since: all its CPU is in the watch
            by_name[name] += cpu - self.start.get(process, (name, 0.0))[1]
        return [(name, cpu / elapsed) for name, cpu in by_name.most_common() if cpu / elapsed >= NAMED_SHARE]


class OtherDemand:
    """Watches, from its making, the cores the other programs wanted: the seconds their threads ran
    or waited for a core, per second. What they took depends on this app: two burners on two cores
    took 1.1 of them beside a run and 2.0 beside the idle app, and a note read "busier now (2.0
    cores against 1.0)" with the same burners running throughout; they want 2 either way."""

    def __init__(self):
        self.at, self.start = time.perf_counter(), demand_by_process()

    def cores(self) -> float | None:
        """None where the kernel keeps no schedstat, or no time has passed."""
        now, elapsed = demand_by_process(), time.perf_counter() - self.at
        if not now or elapsed <= 0:
            return None
        return sum(seconds - self.start.get(process, 0.0) for process, seconds in now.items()) / elapsed


def named(shares: list[tuple[str, float]] | None) -> str:
    """"chromium 0.62 of a core, node 0.11", "no other program took 0.05 of a core or more", or
    "" where unmeasured."""
    if shares is None:
        return ""
    if not shares:
        return f"no other program took {NAMED_SHARE:.2f} of a core or more"
    kept = shares[:NAMED_AT_MOST]
    words = [f"{name} {share:.2f}" + (" of a core" if i == 0 else "") for i, (name, share) in enumerate(kept)]
    return ", ".join(words) + (f" and {len(shares) - len(kept)} more" if len(shares) > len(kept) else "")


def most_in_one(watched: list[list[tuple[str, float]] | None]) -> list[tuple[str, float]] | None:
    """Each program's largest share in any one of several runs, the largest first; None where no
    run was watched."""
    measured = [shares for shares in watched if shares is not None]
    if not measured:
        return None
    most = collections.Counter()
    for shares in measured:
        for name, share in shares:
            most[name] = max(most[name], share)
    return most.most_common()
