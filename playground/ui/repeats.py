"""Speed figures a room can trust from one machine: each side of a comparison runs the same number
of times after a short warm-up, in an order that alternates from repeat to repeat (so a slow moment
of the machine falls on every side alike), and is reported as its median with the range; a
speedup over `ar` is the median of the ratios within a repeat, as the bench pairs its runs."""

import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..decoding.speed_bound import SpeedBound, speedup_bound

REPEATS = 3  # timed runs of each side
WARM_UP_TOKENS = 4  # a warm-up run builds what a side's first run would pay for (int8 twins, pruned heads)
BUSY_SPREAD = 1.25  # a side whose fastest run is this much faster than its slowest: the machine was busy


def schedule(sides: int, repeats: int) -> list[tuple[int, int]]:
    """(repeat, side) in run order: forwards on even repeats, backwards on odd ones."""
    order = list(range(sides))
    return [(repeat, side) for repeat in range(repeats) for side in (order if repeat % 2 == 0 else order[::-1])]


def repeated(runs: list[Callable], repeats: int) -> Iterator[tuple[int, int, object]]:
    """Each side (run(**overrides) -> a finished Run) once briefly, then `repeats` times in the
    alternating order; yields (side, repeat, run) as each ends (repeat -1: the warm-up)."""
    for side, run in enumerate(runs):
        yield side, -1, run(max_new_tokens=WARM_UP_TOKENS)
    for repeat, side in schedule(len(runs), repeats):
        yield side, repeat, runs[side]()


@dataclass(frozen=True)
class Speedup:
    """A speedup over ar as shown: its text, and `flag`, why it cannot be right where it passes what
    the side's measured costs allow (speed_bound.py; "" where it does not)."""

    text: str
    flag: str = ""
    median: float | None = None
    range_flag: str = ""  # the median is possible but the range reaches past the bound: why, in one line

    def __str__(self) -> str:
        return self.text + (f" [impossible: {self.flag}]" if self.flag else "") + (
            f" [{self.range_flag}]" if self.range_flag else "")


@dataclass
class Timed:
    """One side's speeds, by repeat, and the speedup bound of each of its runs."""

    speeds: dict = field(default_factory=dict)  # repeat -> tokens per second
    bounds: dict = field(default_factory=dict)  # repeat -> SpeedBound (or None)

    def add(self, repeat: int, run) -> None:
        # On the decoder's own clock: the turns other visitors' runs took between its rounds
        # (turns.py) are not its time. A run that wrote nothing has no speed.
        if run.stats.tokens and run.stats.decoder_seconds:
            self.speeds[repeat] = run.stats.tokens / run.stats.decoder_seconds
        self.bounds[repeat] = speedup_bound(run.stats)

    def bound(self) -> SpeedBound | None:
        """The loosest of its runs' bounds (the run with the cheapest measured costs): a figure
        above even that one is flagged."""
        return max((b for b in self.bounds.values() if b is not None), key=lambda b: b.bound, default=None)

    def text(self) -> str:
        values = list(self.speeds.values())
        if not values:
            return "–"
        return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f}, {len(values)} runs)"

    def ratios(self, reference: "Timed") -> list[float]:
        """Its speed over the reference's, within each repeat both ran."""
        return [speed / reference.speeds[r] for r, speed in self.speeds.items() if speed and reference.speeds.get(r)]

    def speedup_text(self, reference: "Timed") -> str:
        return str(self.speedup(reference))

    def speedup(self, reference: "Timed") -> Speedup:
        """The median of the paired ratios with their range, flagged when the median passes the
        bound of every run of this side (and noted when only the range's top does)."""
        ratios = self.ratios(reference)
        if not ratios:
            return Speedup("–")
        median, bound = statistics.median(ratios), self.bound()
        flag = bound.flag(median) if bound is not None and bound.exceeded_by(median) else ""
        past = not flag and bound is not None and bound.exceeded_by(max(ratios))
        range_flag = (f"its range passes what the measured costs allow ({bound.bound:.2f}x at most): in that repeat "
                      "the machine slowed the ar run" if past else "")
        return Speedup(f"{median:.2f}x ({min(ratios):.2f}-{max(ratios):.2f})", flag, median, range_flag)


def busy_note(sides: list[Timed]) -> str:
    """A line when some side's speeds spread widely, else ""."""
    spreads = [max(t.speeds.values()) / min(t.speeds.values()) for t in sides if t.speeds and min(t.speeds.values())]
    spread = max(spreads, default=1.0)
    if spread < BUSY_SPREAD:
        return ""
    return (f"one setting's speed varied by up to {spread:.2f}x between its runs: the machine was busy (another "
            "run, a browser), so compare the medians and read the ranges as the noise")
