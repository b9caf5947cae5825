"""Speed figures a room can trust from one machine: each side of a comparison runs the same number
of times after a short warm-up, in an order that alternates from repeat to repeat (so a slow moment
of the machine falls on every side alike), and is reported as its median with the range; a
speedup over `ar` is the median of the ratios within a repeat, as the bench pairs its runs."""

import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

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


@dataclass
class Timed:
    """One side's speeds, by repeat."""

    speeds: dict = field(default_factory=dict)  # repeat -> tokens per second

    def text(self) -> str:
        values = list(self.speeds.values())
        if not values:
            return "–"
        return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f}, {len(values)} runs)"

    def speedup_text(self, reference: "Timed") -> str:
        ratios = [speed / reference.speeds[r] for r, speed in self.speeds.items() if reference.speeds.get(r)]
        if not ratios:
            return "–"
        return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def busy_note(sides: list[Timed]) -> str:
    """A line when some side's speeds spread widely, else ""."""
    spreads = [max(t.speeds.values()) / min(t.speeds.values()) for t in sides if t.speeds and min(t.speeds.values())]
    spread = max(spreads, default=1.0)
    if spread < BUSY_SPREAD:
        return ""
    return (f"one setting's speed varied by up to {spread:.2f}x between its runs: the machine was busy (another "
            "run, a browser), so compare the medians and read the ranges as the noise")
