"""The Race tab: finished runs side by side, each token shown when its own decoder produced it.

Racing two decoders at once on one machine slows both and says little about either. Here each
run decodes alone, its steps' times are recorded (`Stats.step_clock`: the decoder's own seconds,
less the time a page being updated kept it waiting), and the page replays the runs together on
those clocks (race_replay.py builds the schedule, assets/race.js plays it), so a room sees which one
truly finishes first.
"""

import math
import statistics
import time
from functools import partial
from pathlib import Path

import gradio as gr

from ...deploy.limits import current_limits
from ...errors import PlaygroundError
from ...methods import METHODS
from ..options import method_choices, options_from_values
from ..sharing import eta
from ..sharing.ticks import as_started, going_text, with_ticks
from ..views import render
from ..views.error_status import error_status
from ..views.paired_speedups import (
    REPEATS,
    WARM_UP_TOKENS,
    Timed,
    busy_note,
    repeated,
    run_order,
    schedule,
    which_run,
)
from ..views.race_replay import MAX_LANES, race_html
from .controls import MethodPicker
from .family_panel import decoder
from .wiring import PRIVATE, Shared, keyed

REPLAY_JS = (Path(__file__).resolve().parents[3] / "assets" / "race.js").read_text(encoding="utf-8")
STOPPED_BY_A_RACE = "a Race started (it runs each method alone)"


class Race:
    """The Race tab's handlers; `handlers` is the app's Handlers (sessions, models, runs)."""

    def __init__(self, handlers):
        self.handlers = handlers

    def run_methods(self, key: str, prompt: str, methods, *values):
        """Run each method on the prompt with the controls' settings, one after another (never two
        at once), then race them. Yields (the expected duration, then a progress line with the time
        left, then the race view; finished-runs choices)."""
        session, job = self.handlers.sessions.get(key), None
        try:
            chosen, repeats, limit = _lanes(methods)
            session.admit(len(chosen) * repeats, limit)
            self.handlers.stop(key, STOPPED_BY_A_RACE)  # the session's own Generate run would share the cores
            plan = self.plan(chosen, repeats, values)
            job = self.handlers.runs.job(key, plan)  # its runs wait in line as one job (runs.py)
            for waiting in self.handlers.runs.in_line(job):
                yield render.status_html(waiting), gr.skip()
            self.handlers.runs.time_machine(key, job)
            expected, expected_line = self._expected(key, plan)
            expected_said = eta.duration_text(expected) if expected else ""
            yield render.status_html(f"Starting: {expected_line}"), gr.skip()
            finished = {side: {} for side in range(len(chosen))}
            runs = [partial(self.handlers.runs.finished, key, prompt, method, values, job) for method in chosen]
            order = run_order(len(chosen), repeats)
            left, done, ended = expected, 0, time.perf_counter()
            for item, elapsed in with_ticks(repeated(runs, repeats), len(order)):
                side, repeat = order[done]
                what = f"{chosen[side]}: {which_run(repeat, repeats)}, alone"
                if item is None:  # a run going: the time left told as the last ended, less the seconds since
                    yield render.status_html(as_started(going_text(done + 1, len(plan), what, elapsed, left),
                                                        expected_said)), gr.skip()
                    continue
                run, done, took, ended = item[2], done + 1, time.perf_counter() - ended, time.perf_counter()
                eta.record(run, took=took)
                left = self._expected(key, plan[done:])[0] if done < len(plan) else 0.0
                yield (render.status_html(as_started(f"run {done} of {len(plan)} done ({what})"
                                                     + (f", {eta.duration_text(left)} left" if left else ""),
                                                     expected_said)), gr.skip())
                if repeat >= 0:
                    finished[side][repeat] = run
            timed = [Timed() for _ in chosen]
            for side, by_repeat in finished.items():
                for repeat, run in by_repeat.items():
                    timed[side].add(repeat, run)
            ranked = ranking(chosen, timed)
            repeat, agrees = replay_repeat(timed, [side for side, _ in ranked])
            lanes = [self._lane(session, key, method, finished[side][repeat]) for side, method in enumerate(chosen)]
        except Exception as error:  # noqa: BLE001  (the UI boundary: show it, stay usable)
            yield error_status(error), gr.skip()
            return
        finally:
            if job is not None:
                self.handlers.runs.done(job)
        order = "whose runs finished in the order of the medians" if agrees else (
            "the closest to the medians, though no repeat finished in their order (the machine was busy): "
            "the ranking is the medians'")
        note = (f"Each lane replays repeat {repeat + 1} of {repeats} (after a warm-up, the methods ran in alternating "
                f"order), {order}. {spread_text(chosen, timed)}")
        yield (race_html(lanes, note, [(lanes[side], figure) for side, figure in ranked], flagged_lines(chosen, timed)),
               self.choices(key, [lane.label for lane in lanes]))

    def plan(self, chosen: list[str], repeats: int, values) -> list[tuple[str, int]]:
        """(method, tokens at most) of every run in the order they run: the warm-ups, then the repeats."""
        tokens = options_from_values("ar", values)["max_new_tokens"]
        return [*((method, WARM_UP_TOKENS) for method in chosen),
                *((chosen[side], tokens) for _, side in schedule(len(chosen), repeats))]

    def _expected(self, key: str, plan: list, loaded: bool = True) -> tuple[float | None, str]:
        """(seconds, one line) the race's runs should take, from this machine's recent runs (eta.py)."""
        return eta.plan_line(plan, self.handlers.family.models_of(key, loaded))

    def estimate(self, key: str, methods, *values) -> str:
        """The line beside Run and race: how long racing the chosen methods would take (no update
        while the page's own job runs: it tells its time left)."""
        if self.handlers.runs.tab_job_going(key):
            return gr.skip()
        try:
            chosen, repeats, _ = _lanes(methods)
            self.handlers.runs.time_machine_if_idle(key)
            return render.status_html(eta.AS_SET_NOW + self._expected(key, self.plan(chosen, repeats, values),
                                                                    loaded=False)[1])
        except PlaygroundError as error:
            return render.status_html(f"Race cannot start as set: {error}", "error")

    def _lane(self, session, key: str, method: str, run):
        """The lane of a method's run."""
        primary = self.handlers.family.models_for(key, method)[METHODS[method].roles[0]]
        return session.race.add(run, decoder(primary))

    def race_chosen(self, key: str, labels):
        """Race finished runs of this session, chosen by label."""
        try:
            return race_html(self.handlers.sessions.get(key).race.chosen(labels))
        except PlaygroundError as error:
            return error_status(error)

    def choices(self, key: str, chosen=None):
        """The finished-runs picker: this session's runs, the newest chosen by default."""
        labels = self.handlers.sessions.get(key).race.labels()
        return gr.update(choices=labels, value=chosen if chosen is not None else labels[-2:])


def ranking(methods: list[str], timed: list[Timed]) -> list[tuple[int, str]]:
    """(side, figure) fastest first, by the one figure the note prints: with ar in the race, each
    method's median speed over ar's within a repeat (ar itself 1.00x); else its median tokens/s."""
    if "ar" in methods:
        reference = timed[methods.index("ar")]
        scores = [1.0 if method == "ar" else timed[side].speedup(reference).median or 0.0
                  for side, method in enumerate(methods)]
        flagged = [method != "ar" and bool(timed[side].speedup(reference).unsettled)
                   for side, method in enumerate(methods)]
        figures = ["the reference" if method == "ar" else "not settled vs ar: see above" if flag else f"{score:.2f}x ar"
                   for method, score, flag in zip(methods, scores, flagged, strict=True)]
    else:
        scores = [statistics.median(t.speeds.values()) if t.speeds else 0.0 for t in timed]
        figures = [f"median {score:.1f} tokens/s" for score in scores]
    order = sorted(range(len(methods)), key=lambda side: -scores[side])
    return [(side, figures[side]) for side in order]


def replay_repeat(timed: list[Timed], order: list[int]) -> tuple[int, bool]:
    """The repeat whose runs the lanes replay: among the repeats whose runs finish in `order` (by
    tokens/s), the one closest to every side's median; else the closest. Returns (repeat, whether
    its order is `order`)."""
    repeats = sorted(set.intersection(*(set(t.speeds) for t in timed)))
    if not repeats:  # a run that wrote nothing has no speed: replay the first repeat
        return 0, False

    def distance(repeat: int) -> float:
        return sum(abs(math.log(t.speeds[repeat] / statistics.median(t.speeds.values()))) for t in timed)

    def in_order(repeat: int) -> bool:
        return sorted(range(len(timed)), key=lambda side: -timed[side].speeds[repeat]) == order

    agreeing = [repeat for repeat in repeats if in_order(repeat)]
    best = min(agreeing or repeats, key=distance)
    return best, bool(agreeing)


def flagged_lines(methods: list[str], timed: list[Timed]) -> list[str]:
    """A line per speedup over ar that the runs did not settle, saying why."""
    if "ar" not in methods:
        return []
    reference, lines = timed[methods.index("ar")], []
    for method, speeds in zip(methods, timed, strict=True):
        speedup = speeds.speedup(reference) if speeds is not reference else None
        if speedup is not None and speedup.unsettled:
            lines.append(f"{method}'s speedup over ar is not settled: {speedup.unsettled}.")
    return lines


def spread_text(methods: list[str], timed: list[Timed]) -> str:
    """Every method's tokens/s as a median with its range, its speedup over ar paired within each
    repeat where ar raced too (or, where its runs did not settle it, a pointer to the line saying
    why), and a note when the machine was busy."""
    reference = timed[methods.index("ar")] if "ar" in methods else None
    lines = []
    for method, speeds in zip(methods, timed, strict=True):
        vs_ar = ""
        if reference is not None and reference is not speeds:
            speedup = speeds.speedup(reference)
            vs_ar = ", vs ar not settled (see above)" if speedup.unsettled else \
                f", {speedup.text} vs ar" + (f", {speedup.note}" if speedup.note else "")
        lines.append(f"{method} {speeds.text()} tokens/s{vs_ar}")
    return f"Speeds of the runs: {'; '.join(lines)}. {busy_note(timed)}".strip()


def build_tab(ui: Shared, tab) -> gr.CheckboxGroup:
    """The Race tab's components and events; returns its method picker (which follows the loaded
    family)."""
    race = Race(ui.handlers)
    gr.Markdown("Which method finishes first, truly? Each run decodes alone (racing two at once on one "
                "machine would slow both), its steps' times are recorded, and the runs are replayed side by "
                "side on those clocks: tokens appear when their own decoder produced them. The clock is the "
                "decoder's own time; the time a page took to show a run while it streamed is left out.")
    names = [name for _, name in method_choices()]
    with gr.Row():
        methods = MethodPicker(names, value=[n for n in ("ar", "sd", "fsd") if n in names], scale=3,
                                   label="methods to run on the prompt (Generate tab) and the options on the left",
                                   elem_id="race-methods")
        start = gr.Button("Run and race", variant="primary", elem_id="race-run", scale=1)
    expected = gr.HTML(elem_id="race-expected")  # how long it will take, before it starts
    with gr.Row():
        finished = gr.CheckboxGroup([], label="or race finished runs of this session (Generate or earlier races)",
                                    elem_id="race-runs", scale=3)
        again = gr.Button("Race the chosen runs", elem_id="race-chosen", scale=1)
    view = gr.HTML(elem_id="race-view", js_on_load=REPLAY_JS)
    run = ui.page_and_api(start.click, race.run_methods, [ui.prompt, methods, *ui.widgets], [view, finished], "race")
    ui.point_to_tab(start.click, "Race", "its lanes and results are", run, view)
    ui.clear_refusal_on([methods.change], "Race")
    told_again = ui.estimate_again_while_shown(tab)
    ui.page_only([tab.select, methods.change, told_again.tick], race.estimate, [methods, *ui.widgets], [expected],
                 after=run, view=view)
    again.click(keyed(race.race_chosen), finished, view, **PRIVATE)
    tab.select(keyed(race.choices), None, finished, **PRIVATE)
    return methods


def _lanes(methods) -> tuple[list[str], int, int]:
    """The methods to race (each once, 1 to MAX_LANES known ones), the repeats each gets within the
    visitor's runs per minute, and that limit (0: none)."""
    chosen = list(dict.fromkeys(methods)) if isinstance(methods, list) else []
    if not 1 <= len(chosen) <= MAX_LANES or not set(chosen) <= set(METHODS):
        raise PlaygroundError(f"pick 1 to {MAX_LANES} methods to race, got {methods!r}")
    limit = current_limits().runs_per_minute
    return chosen, max(1, min(REPEATS, limit // len(chosen))) if limit else REPEATS, limit
