"""A race's replay schedule: each finished run as a lane of steps, each step's tokens with the
second on the run's own clock (`Stats.step_clock`) at which they appeared; and the race's HTML,
every step tagged with its second for the page's replay script (assets/race.js).
"""

from collections import deque
from dataclasses import dataclass
from html import escape

from ...errors import PlaygroundError
from ..options import default_sweep
from . import render

MAX_LANES = 4
KEPT_RUNS = 8  # a session's finished runs that a race can pick from, newest last


@dataclass(frozen=True)
class Lane:
    """One finished run as a race replays it: each step's tokens (as spans) with the time on
    the run's own clock at which they appeared."""

    label: str
    prompt: str
    reveals: tuple  # (seconds, token spans of one step), in step order
    tokens: int
    seconds: float  # the run's finish: its last step's time
    settings: str = ""  # every setting the run ran with, in one line
    budget: str = ""  # where the run's seconds went, in one line (render.budget_text)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


def lane_of(run, decode, label: str) -> Lane:
    """A finished run's lane, built from its recorded step clock."""
    clock = run.stats.step_clock
    reveals = tuple((seconds, render.token_spans(step.tokens, decode))
                    for seconds, step in zip(clock, run.steps, strict=True) if step.tokens)
    return Lane(label, run.prompt, reveals, run.stats.tokens, clock[-1] if clock else 0.0, render.settings_text(run),
                render.budget_text(run) or "")


def run_label(number: int, run) -> str:
    """"#3 fsd tau=0.4": the run's number in the session, its method and the knob its rule turns on."""
    knob = default_sweep(run.method)
    return f"#{number} {run.method} {knob.rstrip('_')}={getattr(run.config, knob):g}"


class History:
    """A session's last KEPT_RUNS finished runs, as lanes, by label."""

    def __init__(self):
        self.lanes: deque[Lane] = deque(maxlen=KEPT_RUNS)
        self.count = 0

    def add(self, run, decode) -> Lane:
        self.count += 1
        lane = lane_of(run, decode, run_label(self.count, run))
        self.lanes.append(lane)
        return lane

    def labels(self) -> list[str]:
        return [lane.label for lane in self.lanes]

    def chosen(self, labels) -> list[Lane]:
        """The lanes named by `labels`, in the order they ran; refuses a race of none or too many."""
        wanted = set(labels) if isinstance(labels, list) else set()
        lanes = [lane for lane in self.lanes if lane.label in wanted]
        if not 1 <= len(lanes) <= MAX_LANES:
            raise PlaygroundError(f"pick 1 to {MAX_LANES} finished runs to race, got {len(lanes)}")
        return lanes


def _ordinal(place: int) -> str:
    return f"{place}{'st' if place == 1 else 'nd' if place == 2 else 'rd' if place == 3 else 'th'}"


def race_html(lanes: list[Lane], note: str = "", ranked: list[tuple[Lane, str]] | None = None,
              warnings: list[str] = ()) -> str:
    """The race: a lane per run, every step's tokens wrapped with `data-t` (its recorded second),
    each lane's finish and the final order revealed at theirs. Lanes are ranked by tokens per
    second (runs that stop at different lengths, an answer ended early, still compare), or as
    `ranked` says with each lane's figure: a race of repeated runs ranks by the figure its note
    prints (their medians), so the headline and the fastest line never disagree. `warnings`: lines
    shown as warnings (an impossible speedup). Without the replay script the page shows the
    finished race."""
    end = max(lane.seconds for lane in lanes)
    if ranked is None:
        order = sorted(lanes, key=lambda lane: -lane.tokens_per_second)
        winner = order[0]
        behind = ", ".join(f"{escape(lane.label)} {lane.tokens_per_second:.1f} "
                           f"({lane.tokens_per_second / winner.tokens_per_second:.2f}x)"
                           for lane in order[1:] if winner.tokens_per_second)
        summary = (f"{escape(winner.label)} was fastest, {winner.tokens_per_second:.1f} tokens/s "
                   f"({winner.tokens} tokens in {winner.seconds:.2f} s)" + (f"; {behind}" if behind else ""))
    else:
        order = [lane for lane, _ in ranked]
        summary = "Fastest by the medians of the repeats: " + ", then ".join(
            f"{escape(lane.label)} ({escape(figure)})" for lane, figure in ranked)
    columns = "".join(_lane_html(lane, order.index(lane) + 1) for lane in lanes)
    # The caller's note says how the lanes were run; only what makes the race unfair is a warning
    warning = "".join(f'<p class="race-note">{escape(line)}</p>' for line in [*_unfair(lanes), *warnings])
    warning += f'<p class="race-about">{escape(note)}</p>' if note else ""
    return (f'<div class="race" data-end="{end:.4f}"><div class="race-bar">'
            '<button type="button" class="race-again">Replay</button>'
            f'<span class="race-clock">{end:.2f} s</span></div>{warning}'
            f'<div class="race-lanes">{columns}</div>'
            f'<p class="race-summary" data-t="{end:.4f}">{summary}.</p></div>')


def _unfair(lanes: list[Lane]) -> list[str]:
    """What makes the lanes' times compare less than fairly, in words."""
    notes = []
    if len({lane.prompt for lane in lanes}) > 1:
        notes.append("These runs answered different prompts: their times are not a fair race.")
    lengths = sorted({lane.tokens for lane in lanes})
    if len(lengths) > 1:
        notes.append(f"The runs stopped at different lengths ({', '.join(map(str, lengths))} tokens): they are ranked "
                     "by tokens per second, not by who finished first.")
    return notes


def _lane_html(lane: Lane, place: int) -> str:
    steps = "".join(f'<span data-t="{seconds:.4f}">{spans}</span>' for seconds, spans in lane.reveals)
    finish = (f"{_ordinal(place)}: {lane.tokens} tokens in {lane.seconds:.2f} s "
              f"({lane.tokens_per_second:.1f} tokens/s)")
    budget = f'<p class="settings-line">where the seconds went: {escape(lane.budget)}</p>' if lane.budget else ""
    return (f'<div class="race-lane"><h4>{escape(lane.label)}</h4>'
            f'<p class="settings-line">{escape(lane.settings)}</p><div class="token-text">{steps}</div>'
            f'<p class="race-finish" data-t="{lane.seconds:.4f}">{finish}</p>{budget}</div>')
