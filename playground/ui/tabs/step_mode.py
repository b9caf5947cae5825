"""The Step mode tab (one verification round at a time, explained) and the seed-001 toy tab."""

from dataclasses import replace

import gradio as gr

from ...methods import METHODS
from ..options import finite_number
from ..sharing.session import Stepping
from ..views import charts, render
from ..views.error_status import error_status, toast_text
from ..views.explain_round import TOY_SEEDS, Toy, bars, explain_step
from .family_panel import decoder
from .runs import Runs

TEACHING = {"temperature": 1.0, "draft_confidence": 0.0}  # step mode's one-click settings


class StepMode:
    def __init__(self, runs: Runs):
        self.runs, self.sessions = runs, runs.family.sessions

    def step(self, key: str, prompt: str, method: str, position: int, *values):
        """Advance one verification round, starting a run if none is going.
        Returns (status, text html, explanation html, distributions figure)."""
        session = self.sessions.get(key)
        try:
            if session.stepping is None:
                models, steps = self.runs.stream(key, prompt, method, values)
                session.stepping = Stepping(steps, decoder(models[METHODS[method].roles[0]]))
            stepping = session.stepping
            step, stepping.run = next(stepping.steps)
            stepping.explanation = explain_step(step, stepping.run.config)
            _forget_earlier_evidence(stepping.run)
        except StopIteration:
            session.stepping = None
            return render.status_html("the run is finished: press Step to start again"), gr.skip(), gr.skip(), gr.skip()
        except Exception as error:  # noqa: BLE001  (the UI boundary: show it, stay usable)
            session.stepping = None
            return error_status(error), gr.skip(), gr.skip(), gr.skip()
        if stepping.run.finished:
            session.stepping = None
        stats = stepping.run.stats
        return (render.status_html(f"round {stats.steps}: {render.tokens(stats.tokens)} so far"),
                render.tokens_html(stepping.run.tokens, stepping.decode, show_rejected=True),
                render.explanation_html(stepping.explanation, stepping.decode),
                self.step_position(key, position, stepping))

    def step_position(self, key: str, position: int, stepping=None):
        """Bars of the distributions the rule used at one check of the last explained round
        (PyramidSD: the qualifier's checks first, then the target's)."""
        stepping = stepping or self.sessions.get(key).stepping
        explanation = stepping.explanation if stepping else None
        if not explanation or not explanation.checks:
            return charts.bars("No drafted candidates in this round", {})
        position = min(max(int(position), 0) if finite_number(position) else 0, len(explanation.checks) - 1)
        check = explanation.checks[position]
        title = f"{check.stage.capitalize()} checks {stepping.decode(check.candidate)!r}: top tokens"
        return charts.bars(title, bars(check, stepping.decode))

    def check_slider(self, key: str, position: int):
        """The check slider over the last round's own checks (it ran 0-63 for a round of 3)."""
        stepping = self.sessions.get(key).stepping
        count = len(stepping.explanation.checks) if stepping and stepping.explanation else 0
        if not count:
            return gr.update(value=0, maximum=1, label="check (none in this round)")
        position = min(max(int(position), 0) if finite_number(position) else 0, count - 1)
        return gr.update(value=position, maximum=max(count - 1, 1), label=f"check: 0-{count - 1} in this round")

    def step_reset(self, key: str):
        session = self.sessions.get(key)
        if session.stepping:
            session.stepping.steps.close()
        session.stepping = None
        return render.status_html("step mode reset: press Step to start a new run")

    def teaching_set(self, key: str):
        """After the teaching settings changed the shared sidebar: a fresh step-mode run, and the
        page told that every tab's runs now use them (the next Generate sampled silently before)."""
        self.step_reset(key)
        settings = " and ".join(f"{name.replace('_', ' ')} {value:g}" for name, value in TEACHING.items())
        said = (f"step mode reset with the teaching settings: {settings} are set in the sidebar, which Generate, "
                "Compare and Race use too (set them back there)")
        gr.Info(toast_text(said))
        return render.status_html(said)

    def toy_reset(self, key: str, seed: int):
        """A fresh toy from `seed`; a seed out of range is refused in a toast, the toy kept as it was."""
        session = self.sessions.get(key)
        if finite_number(seed) and float(seed).is_integer() and 0 <= seed < TOY_SEEDS:
            session.toy = Toy(int(seed))
        else:
            gr.Warning(toast_text(f"the toy's seed must be a whole number from 0 to {TOY_SEEDS - 1:,}, got {seed!r}: "
                                  "type one in that range"))
        return render.toy_html(session.toy), charts.toy_bars(session.toy)

    def toy_step(self, key: str, rounds: int = 1):
        toy = self.sessions.get(key).toy
        for _ in range(int(rounds)):
            toy.step()
        return render.toy_html(toy), charts.toy_bars(toy)


def _forget_earlier_evidence(run) -> None:
    """The view explains the last round only: the evidence of the rounds before it (each check's
    numbers and top tokens under every distribution) goes, rather than stay with the session's
    run for as long as the session does. Their tokens, counts and times stay."""
    if len(run.steps) > 1 and run.steps[-2].evidence:
        run.steps[-2] = replace(run.steps[-2], evidence=[])
