"""The Race tab: finished runs side by side, each token shown when its own decoder produced it.

Racing two decoders at once on one machine slows both and says little about either. Here each
run decodes alone, its steps' times are recorded (`Stats.step_clock`: the decoder's own seconds,
less the time a page being updated kept it waiting), and the page replays the runs together on
those clocks (replay.py builds the schedule, assets/race.js plays it), so a room sees which one
truly finishes first.
"""

from functools import partial
from pathlib import Path

import gradio as gr

from ..deploy.limits import current_limits
from ..errors import PlaygroundError
from ..methods import METHODS
from . import render
from .boundary import error_status
from .family_panel import decoder
from .options import method_choices
from .repeats import REPEATS, Timed, busy_note, repeated
from .replay import MAX_LANES, race_html

REPLAY_JS = (Path(__file__).resolve().parents[2] / "assets" / "race.js").read_text(encoding="utf-8")
PRIVATE = {"api_visibility": "private"}
STOPPED_BY_A_RACE = "a Race started (it runs each method alone)"


class Race:
    """The Race tab's handlers; `handlers` is the app's Handlers (sessions, models, runs)."""

    def __init__(self, handlers):
        self.handlers = handlers

    def run_methods(self, key: str, prompt: str, methods, *values):
        """Run each method on the prompt with the controls' settings, one after another (never two
        at once), then race them. Yields (race view, finished-runs choices)."""
        session = self.handlers.sessions.get(key)
        try:
            chosen = list(dict.fromkeys(methods)) if isinstance(methods, list) else []
            if not 1 <= len(chosen) <= MAX_LANES or not set(chosen) <= set(METHODS):
                raise PlaygroundError(f"pick 1 to {MAX_LANES} methods to race, got {methods!r}")
            limit = current_limits().runs_per_minute
            repeats = max(1, min(REPEATS, limit // len(chosen))) if limit else REPEATS
            session.admit(len(chosen) * repeats, limit)
            self.handlers.stop(key, STOPPED_BY_A_RACE)  # the session's own Generate run would share the cores
            finished = {side: [] for side in range(len(chosen))}
            runs = [partial(self.handlers.runs.finished, key, prompt, method, values) for method in chosen]
            for done, (side, repeat, run) in enumerate(repeated(runs, repeats), start=1):
                what = "warm-up" if repeat < 0 else f"run {repeat + 1} of {repeats}"
                yield (render.status_html(f"{chosen[side]}: {what} done, alone ({done} of "
                                          f"{len(chosen) * (repeats + 1)} runs)"), gr.skip())
                if repeat >= 0:
                    finished[side].append(run)
            lanes = [self._lane(session, key, method, finished[side]) for side, method in enumerate(chosen)]
        except Exception as error:  # noqa: BLE001  (the UI boundary: show it, stay usable)
            yield error_status(error), gr.skip()
            return
        note = (f"Each lane replays the median run (by tokens/s) of {repeats} runs of its method, after a "
                f"warm-up, run in alternating order. {spread_text(chosen, finished)}")
        yield race_html(lanes, note), self.choices(key, [lane.label for lane in lanes])

    def _lane(self, session, key: str, method: str, runs: list):
        """The lane of a method's median run, by tokens per second."""
        median = sorted(runs, key=lambda run: run.stats.tokens_per_second or 0.0)[len(runs) // 2]
        primary = self.handlers.family.models_for(key, method)[METHODS[method].roles[0]]
        return session.race.add(median, decoder(primary))

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


def spread_text(methods: list[str], finished: dict) -> str:
    """Every method's tokens/s as a median with its range, its speedup over ar paired within each
    repeat where ar raced too, and a note when the machine was busy: a replayed lane shows one run."""
    timed = [Timed(dict(enumerate(run.stats.tokens_per_second for run in finished[side])))
             for side in range(len(methods))]
    reference = timed[methods.index("ar")] if "ar" in methods else None
    lines = []
    for method, speeds in zip(methods, timed, strict=True):
        paired = reference is not None and reference is not speeds
        vs_ar = f", {speeds.speedup_text(reference)} vs ar" if paired else ""
        lines.append(f"{method} {speeds.text()} tokens/s{vs_ar}")
    return f"Speeds of the runs: {'; '.join(lines)}. {busy_note(timed)}".strip()


def build_tab(ui, tab, keyed) -> gr.CheckboxGroup:
    """The Race tab's components and events; `ui` is layout's Shared, `keyed` its session wrapper.
    Returns its method picker (which follows the loaded family)."""
    race = Race(ui.handlers)
    gr.Markdown("Which method finishes first, truly? Each run decodes alone (racing two at once on one "
                "machine would slow both), its steps' times are recorded, and the runs are replayed side by "
                "side on those clocks: tokens appear when their own decoder produced them. The clock is the "
                "decoder's own time; the time a page took to show a run while it streamed is left out.")
    names = [name for _, name in method_choices()]
    with gr.Row():
        methods = gr.CheckboxGroup(names, value=[n for n in ("ar", "sd", "fsd") if n in names], scale=3,
                                   label="methods to run on the prompt (Generate tab) and the options on the left",
                                   elem_id="race-methods")
        start = gr.Button("Run and race", variant="primary", elem_id="race-run", scale=1)
    with gr.Row():
        finished = gr.CheckboxGroup([], label="or race finished runs of this session (Generate or earlier races)",
                                    elem_id="race-runs", scale=3)
        again = gr.Button("Race the chosen runs", elem_id="race-chosen", scale=1)
    view = gr.HTML(elem_id="race-view", js_on_load=REPLAY_JS)
    ui.page_and_api(start.click, race.run_methods, [ui.prompt, methods, *ui.widgets], [view, finished], "race")
    again.click(keyed(race.race_chosen), finished, view, **PRIVATE)
    tab.select(keyed(race.choices), None, finished, **PRIVATE)
    return methods
