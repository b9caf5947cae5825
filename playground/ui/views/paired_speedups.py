"""Speed figures a room can trust from one machine: each side of a comparison runs the same number
of times after a short warm-up, in an order that alternates from repeat to repeat (so a slow moment
of the machine falls on every side alike), and is reported as its median with the range; a
speedup over `ar` is the median of the ratios within a repeat, as the bench pairs its runs."""

import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from ...decoding.speed.other_programs import most_in_one, named
from ...decoding.speed.speed_bound import SpeedBound, speedup_bound

REPEATS = 3  # timed runs of each side
WARM_UP_TOKENS = 4  # a warm-up run builds what a side's first run would pay for (int8 twins, pruned heads)
BUSY_SPREAD = 1.25  # a side whose fastest run is this much faster than its slowest: the machine was busy
UNEVEN_SHARE = 0.5  # of a core: another program that took this much in a run made the load uneven
UNSETTLED_SPREAD = 1.3  # a majority of paired ratios no closer than this settles no speedup
NOISE_SPREAD = 1.1  # ratios on both sides of 1 but within this of each other: about as fast as ar
MEDIANS_APART = 0.1  # a paired median this far from the ratio of median speeds says that ratio too


@dataclass(frozen=True)
class LastArPairing:
    """A Generate run against the page's last `ar` run of the same tokens (ui/tabs/generate.py):
    `ratio` with how it was computed in `words`, or no ratio and why in `words`."""

    ratio: float | None
    words: str


def schedule(sides: int, repeats: int) -> list[tuple[int, int]]:
    """(repeat, side) in run order: forwards on even repeats, backwards on odd ones."""
    order = list(range(sides))
    return [(repeat, side) for repeat in range(repeats) for side in (order if repeat % 2 == 0 else order[::-1])]


def run_order(sides: int, repeats: int) -> list[tuple[int, int]]:
    """(side, repeat) of each run of a job, in the order they run: each side's warm-up (repeat -1),
    then the repeats in the alternating order."""
    return [*((side, -1) for side in range(sides)), *((side, repeat) for repeat, side in schedule(sides, repeats))]


def which_run(repeat: int, repeats: int | None = None) -> str:
    """"warm-up", "repeat 2" or, given how many, "repeat 2 of 3"."""
    if repeat < 0:
        return "warm-up"
    return f"repeat {repeat + 1}" + (f" of {repeats}" if repeats else "")


def repeated(runs: list[Callable], repeats: int) -> Iterator[tuple[int, int, object]]:
    """Each side (run(**overrides) -> a finished Run) once briefly, then `repeats` times in the
    alternating order (`run_order`); yields (side, repeat, run) as each ends."""
    for side, repeat in run_order(len(runs), repeats):
        yield side, repeat, runs[side](max_new_tokens=WARM_UP_TOKENS) if repeat < 0 else runs[side]()


@dataclass(frozen=True)
class Speedup:
    """A paired speedup over ar as shown: its median with its range where the runs settled it, else
    `unsettled`, why not and what to do, in words (then no figure is the headline)."""

    text: str
    median: float | None = None
    unsettled: str = ""
    brief: str = ""  # `unsettled` in a few words, for a narrow cell (the whole of it on hover)
    note: str = ""  # said beside a settled figure

    def __str__(self) -> str:
        return f"not settled: {self.unsettled}" if self.unsettled else "; ".join(filter(None, (self.text, self.note)))


def majority_spread(ratios: list[float]) -> float:
    """How far apart the closest majority of the ratios are (high / low): a single repeat whose run
    other work slowed (a quiet sweep's ar run at 11.7 tokens/s beside 16.5 and 16.9) moves one ratio
    of three, not the two that agree."""
    ordered, majority = sorted(ratios), len(ratios) // 2 + 1
    return min(ordered[i + majority - 1] / ordered[i] for i in range(len(ordered) - majority + 1))


def settled(ratios: list[float], bound: SpeedBound | None, busy: float | None = None) -> Speedup:
    """The paired ratios as a figure, or why they settle none: a run of the pairs did not have its
    core (`busy`, its share: two burners' 1.54x against a quiet 1.18x read settled), past what the
    side's own measured costs allow, no majority of them within UNSETTLED_SPREAD, or on both sides
    of ar beyond noise. A settled figure is the median with the whole range."""
    median, low, high = statistics.median(ratios), min(ratios), max(ratios)
    text = f"{median:.2f}x ({low:.2f}-{high:.2f})"
    if busy is not None:
        why = (f"the machine was busy: a decoding thread of its runs or ar's had its core {busy:.0%} of the time, "
               "so the ratios measure the load as much as the method")
        brief = f"{low:.2f}-{high:.2f}x on a busy machine (core {busy:.0%})"
    elif bound is not None and bound.exceeded_by(high):
        why = (f"the runs gave {low:.2f}-{high:.2f}x, more than this setting's measured costs allow "
               f"({bound.bound:.2f}x at most: {bound.inputs()}), so something slowed an ar run")
        brief = f"{low:.2f}-{high:.2f}x, past the {bound.bound:.2f}x its costs allow"
    elif majority_spread(ratios) > UNSETTLED_SPREAD:
        brief = f"its repeats gave {low:.2f}-{high:.2f}x ar"
        why = f"{brief}: no {len(ratios) // 2 + 1} of its {len(ratios)} within {UNSETTLED_SPREAD}x of each other"
    elif low < 1 < high and high / low > NOISE_SPREAD:
        brief = f"its repeats gave {low:.2f}-{high:.2f}x ar"
        why = f"{brief}: slower than ar in one and faster in another, more than timing noise ({NOISE_SPREAD}x) apart"
    else:
        return Speedup(text, median)
    return Speedup(text, median, f"{why}; run it again on a quieter machine (close other programs and tabs)", brief)


@dataclass
class Timed:
    """One side's speeds, by repeat, and the speedup bound of each of its runs."""

    speeds: dict = field(default_factory=dict)  # repeat -> tokens per second
    bounds: dict = field(default_factory=dict)  # repeat -> SpeedBound (or None)
    runs: dict = field(default_factory=dict)  # repeat -> the run

    def add(self, repeat: int, run) -> None:
        # On the decoder's own clock: the turns other visitors' runs took between its rounds
        # (turns.py) are not its time. A run that wrote nothing has no speed.
        if run.stats.tokens and run.stats.decoder_seconds:
            self.speeds[repeat] = run.stats.tokens / run.stats.decoder_seconds
        self.bounds[repeat] = speedup_bound(run.stats)
        self.runs[repeat] = run

    def median_run(self):
        """The run whose speed is the median (of an even count, the slower middle one): the one a
        column shows, so that its seconds are those of its median speed (they came from its first)."""
        by_speed = sorted(self.speeds, key=self.speeds.get)
        return self.runs[by_speed[(len(by_speed) - 1) // 2]] if by_speed else next(iter(self.runs.values()))

    def bound(self) -> SpeedBound | None:
        """The loosest of its runs' bounds (the run with the cheapest measured costs): a figure
        above even that one is flagged."""
        return max((b for b in self.bounds.values() if b is not None), key=lambda b: b.bound, default=None)

    def text(self) -> str:
        values = list(self.speeds.values())
        if not values:
            return "–"
        median = statistics.median(values)
        places = 2 if median < 10 else 1  # a busy machine's 0.34 and 0.46 tokens/s read as 0.3 and 0.5
        return f"{median:.{places}f} ({min(values):.{places}f}-{max(values):.{places}f}, {len(values)} runs)"

    def ratios(self, reference: "Timed") -> list[float]:
        """Its speed over the reference's, within each repeat both ran."""
        return [speed / reference.speeds[r] for r, speed in self.speeds.items() if speed and reference.speeds.get(r)]

    def speedup_text(self, reference: "Timed") -> str:
        return str(self.speedup(reference))

    def speedup(self, reference: "Timed") -> Speedup:
        """The median of the paired ratios with their range, where they settle it (`settled`). Where
        the ratio of the two median speeds, beside it in the speed cells, is more than MEDIANS_APART
        off, it says that ratio and why it is not the figure (a reviewer read 2.30x beside speeds
        1.92x apart, unexplained)."""
        ratios = self.ratios(reference)
        if not ratios:
            return Speedup("–")
        shares = [share for side in (self, reference) for run in side.runs.values()
                  if (share := run.stats.account.busy()) is not None]
        figure = settled(ratios, self.bound(), min(shares, default=None))
        of_medians = statistics.median(self.speeds.values()) / statistics.median(reference.speeds.values())
        if figure.unsettled or abs(figure.median / of_medians - 1) <= MEDIANS_APART:
            return figure
        return replace(figure, note=f"the median speeds are {of_medians:.2f}x apart (a repeat's two runs meet the "
                                    "same load, so the paired median is the figure)")


def busy_note(sides: list[Timed]) -> str:
    """A line when some side's speeds spread widely, else "": put down to other programs only where
    one took UNEVEN_SHARE of a core in a run (a quiet sweep, the page's browser at 0.12 of one, read
    "they met uneven load"; two steady burners read "uneven" too)."""
    spreads = [max(t.speeds.values()) / min(t.speeds.values()) for t in sides if t.speeds and min(t.speeds.values())]
    spread = max(spreads, default=1.0)
    if spread < BUSY_SPREAD:
        return ""
    watched = _most_beside(sides)
    work = ran_beside(sides) or "another run, a browser drawing a page, a process of this machine"
    cause = "other programs shared the cores with them" if watched is None or (
        watched and watched[0][1] >= UNEVEN_SHARE) else \
        "runs of one setting move this much here with no other program taking much of a core"
    return (f"one setting's speed varied by up to {spread:.2f}x between its runs: {cause} ({work}), so "
            "compare the medians and read the ranges as the noise")


def _most_beside(sides: list[Timed]) -> list[tuple[str, float]] | None:
    """The most each other program took in one of the sides' runs (None: unwatched)."""
    return most_in_one([run.stats.account.besides for side in sides for run in side.runs.values()])


def ran_beside(sides: list[Timed]) -> str:
    """What ran beside this app during the sides' runs, as watched ("" where none was watched): a quiet
    sweep's spread, with only the page drawing, had been put down to "other work"."""
    watched = _most_beside(sides)
    if watched is None:
        return ""
    if watched:
        return f"besides this app, the most in one run: {named(watched)}"
    # As on a Space, whose visitors' browsers draw on their own machines.
    return f"{named(watched)} in any run: this app's own threads, such as another visitor's run or the page's updates"


KEPT_SETTINGS = 16  # the settings a page keeps its runs' speedups for (the oldest go first)
KEPT_PER_SETTING = 8


@dataclass
class SettingSpeedups:
    """The settled speedups over `ar` of a page's finished runs, by setting (what makes two runs the
    same run again: identical.py's signature, None for one that learns between runs): one Generate
    run's figure moves with the page's drawing (three identical quiet sd runs read 1.23x, 0.94x and
    1.10x, their drafting 0.5 s in one and 1.0 s in another), so a setting run before shows the spread."""

    by_setting: dict = field(default_factory=dict)  # setting -> [(speedup, c, T(1), besides), ...], oldest first

    def add(self, setting: tuple | None, run) -> None:
        account = run.stats.account
        if setting is None or run.method == "ar" or not run.finished or account.unsettled() \
                or account.speedup() is None:
            return
        runs = self.by_setting.pop(setting, [])  # popped and put back: the newest last
        self.by_setting[setting] = [*runs, (account.speedup(), account.cost_ratio(), account.single_step(),
                                            account.besides)][-KEPT_PER_SETTING:]
        while len(self.by_setting) > KEPT_SETTINGS:
            del self.by_setting[next(iter(self.by_setting))]

    def spread(self, setting: tuple | None) -> str | None:
        """"1.09x (0.96-1.27x, 4 runs, at c 0.19-0.34 and T(1) 64-88 ms)" for a setting run at least
        twice, settled; the one run's figure for one; else None. The c and T(1) the runs ran at are
        the evidence that the same tokens were drafted and checked at different speeds: a reviewer
        could not verify "moves with the page's drawing" from 0.99-1.60x alone. Nor from c rising
        0.17 -> 0.39 over four quiet runs, "nothing else running": the cores other programs took
        beside each run (the page's browser among them) are named too."""
        runs = self.by_setting.get(setting, []) if setting is not None else []
        if not runs:
            return None
        if len(runs) == 1:  # walk 24: after one settled run and three not, the cell was absent, unsaid
            return f"{runs[0][0]:.2f}x (1 settled run so far: the spread shows from the second)"
        speedups = [speedup for speedup, _, _, _ in runs]
        costs = [c for _, c, _, _ in runs if c is not None]
        steps = [step * 1000 for _, _, step, _ in runs]
        at = f"c {_range(costs, '{:.2f}')} and " if costs else ""
        return (f"{statistics.median(speedups):.2f}x ({_range(speedups, '{:.2f}')}x, {len(runs)} runs, at "
                f"{at}T(1) {_range(steps, '{:.0f}')} ms{_others_beside([besides for *_, besides in runs])})")


def _others_beside(watched: list) -> str:
    """', other programs taking 0.20-0.63 of a core beside them (chromium the most)', or ''
    where no run was watched."""
    measured = [shares for shares in watched if shares is not None]
    if not measured:
        return ""
    most = most_in_one(measured)
    if not most:
        return f", {named([])} beside them"
    taken = [sum(share for _, share in shares) for shares in measured]
    return f", other programs taking {_range(taken, '{:.2f}')} of a core beside them ({most[0][0]} the most)"


def _range(values: list[float], form: str) -> str:
    """"0.19-0.34", or "0.19" where they read the same."""
    low, high = form.format(min(values)), form.format(max(values))
    return low if low == high else f"{low}-{high}"
