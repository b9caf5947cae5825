"""The Step mode tab (one verification round at a time, explained) and the seed-001 toy tab."""

from dataclasses import replace

import gradio as gr

from ...decoding.speed.what_if import pass_cost_sentence
from ...methods import METHODS
from ..options import all_controls, finite_number
from ..sharing.session import Stepping
from ..sharing.visitors import session_key
from ..views import charts, render
from ..views.error_status import error_status, toast_text
from ..views.explain_round import TOY_SEEDS, Toy, bars, explain_step
from ..views.widgets import Number, OptionSlider
from .family_panel import decoder
from .runs import Runs
from .wiring import PRIVATE, Shared, keyed

TEACHING = {"temperature": 1.0, "draft_confidence": 0.0}  # step mode's one-click settings
TEACHING_NOTE = "Then step mode's Teaching settings set"  # the method note's last line after them



def _not_a_check(position, last: int) -> str:
    return f"check {position:g} is not one of this round's 0-{last}"

class StepMode:
    def __init__(self, runs: Runs):
        self.runs, self.sessions = runs, runs.family.sessions

    def step(self, key: str, prompt: str, method: str, position: int, *values):
        """Advance one verification round, starting a run if none is going; a session's Steps go
        one after another (a second click during a round is the next round).
        Returns (status, text html, explanation html, distributions figure)."""
        with self.sessions.get(key).stepping_turns:
            return self._step(key, prompt, method, position, *values)

    def _step(self, key: str, prompt: str, method: str, position: int, *values):
        session = self.sessions.get(key)
        settings, restarted = (prompt, method, *values), ""
        if session.stepping is not None and session.stepping.settings != settings:
            self.step_reset(key)
            restarted = "the prompt, method or settings changed, so a new run started; "
        try:
            if session.stepping is None:
                models, steps = self.runs.stream(key, prompt, method, values)
                session.stepping = Stepping(steps, decoder(models[METHODS[method].roles[0]]), settings)
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
        # The round before stays, folded, below this one: a click made while it ran left its view
        # unseen (a reviewer's double click showed round 3 only, unsaid).
        said = f"; round {stats.steps - 1} is folded below this one's checks" if stepping.shown else ""
        explained = render.explanation_html(stepping.explanation, stepping.decode)
        view = explained + render.round_before_html(stepping.shown, stats.steps - 1)
        stepping.shown = explained
        return (render.status_html(f"{restarted}{method}, round {stats.steps}: {render.tokens(stats.tokens)} so far"
                                   f"{said}"),
                render.tokens_html(stepping.run.tokens, stepping.decode, show_rejected=True),
                view, self.step_position(key, position, stepping))

    def step_position(self, key: str, position: int, stepping=None):
        """Bars of the distributions the rule used at one check of the last explained round
        (PyramidSD: the qualifier's checks first, then the target's)."""
        stepping = stepping or self.sessions.get(key).stepping
        explanation = stepping.explanation if stepping else None
        if not explanation:  # before a round: no plot (Restart's slider change drew an empty one)
            return None
        if not explanation.checks:
            return charts.bars("No drafted candidates in this round", {})
        last = len(explanation.checks) - 1
        shown = min(max(int(position), 0) if finite_number(position) else 0, last)
        check = explanation.checks[shown]
        title = f"{check.stage.capitalize()} checks {stepping.decode(check.candidate)!r}: top tokens"
        if finite_number(position) and shown != position:  # typed past the slider (Gradio named no fix)
            title = f"{_not_a_check(position, last)}: check {shown} shown<br>{title}"
        return charts.bars(title, bars(check, stepping.decode))

    def check_slider(self, key: str, position: int):
        """The check slider over the last round's own checks (it ran 0-63 for a round of 3)."""
        stepping = self.sessions.get(key).stepping
        if not (stepping and stepping.explanation):  # after a reset it read "none in this round", range 0-1
            return gr.update(value=0, maximum=1, interactive=False, label="check (step a round first)")
        count = len(stepping.explanation.checks)
        if count <= 1:  # a slider's range cannot be 0-0: it ran 0-1, and 1 stood in the box
            said = "check 0, the only one in this round" if count else "check (none in this round)"
            return gr.update(value=0, maximum=1, interactive=False, label=said)
        position = min(max(int(position), 0) if finite_number(position) else 0, count - 1)
        return gr.update(value=position, maximum=max(count - 1, 1), interactive=True,
                         label=f"check: 0-{count - 1} in this round")

    def check_typed(self, key: str, position) -> None:
        """A check number typed past this round's checks, as typed (the slider's release): said in
        a toast, since the slider then moves it to the nearest check (a reviewer saw 9 become 1)."""
        stepping = self.sessions.get(key).stepping
        count = len(stepping.explanation.checks) if stepping and stepping.explanation else 0
        if finite_number(position) and count and not 0 <= position <= count - 1:
            nearest = min(max(int(position), 0), count - 1)
            gr.Warning(toast_text(f"{_not_a_check(position, count - 1)}: the slider moves it to {nearest}"))

    def step_reset(self, key: str):
        session = self.sessions.get(key)
        if session.stepping:
            session.stepping.steps.close()
        session.stepping = None
        return render.status_html("step mode reset: press Step to start a new run")

    def restart(self, key: str):
        """The Restart button: the run reset, and the tab's last round gone with it (a reviewer
        found a round of a run two Loads before under "step mode reset")."""
        return self.step_reset(key), None, None, None, self.check_slider(key, 0)

    def teaching_set(self, key: str, method_note: str = ""):
        """After the teaching settings changed the shared sidebar: a fresh step-mode run, its last
        round gone from the tab (a reviewer's greedy round 8 stayed under "reset"), the page told
        that every tab's runs now use them (the next Generate sampled silently before), and the
        method's note, which named the values its choice set, names these after them."""
        status, *emptied = self.restart(key)
        settings = " and ".join(f"{name.replace('_', ' ')} {value:g}" for name, value in TEACHING.items())
        said = (f"step mode reset with the teaching settings: {settings} are set in the sidebar, which Generate, "
                "Compare and Race use too (set them back there)")
        gr.Info(toast_text(said))
        note = (method_note or "").split(TEACHING_NOTE)[0].rstrip()
        return render.status_html(said), f"{note}\n\n{TEACHING_NOTE} {settings}.".lstrip(), *emptied

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


def build_tab(ui: Shared) -> None:
    gr.Markdown("Advance one verification round at a time: the drafted candidates, the acceptance test "
                "of each with the numbers the rule used, and which token was emitted and why (PyramidSD: "
                "the qualifier's checks, then the target's). The bars show, at one check, the top tokens "
                "of each distribution the round recorded: p (target), q (draft) or r (qualifier) after "
                "the sampling settings, which the SD ratio and the draws use (one-hot when greedy), the "
                "raw temperature-1 ones, which divergences and the CSD gate compare, and the residual "
                "norm(max(0, p - q)) where the SD rule ran.\n\n"
                "**What a round costs.** Up to K draft steps (each c of a target step; fewer where the "
                "draft's confidence ends the block) plus one target pass over the drafted tokens and one "
                "more (a token tree: all its nodes, its siblings costing no draft step). "
                f"What that pass costs depends on the machine: {pass_cost_sentence()} (the what-if's "
                "profiles); the stats show this run's own as *verification pass / target step*. So the "
                "predicted speedup is the tokens a drafted round yields / (its draft steps x c + that "
                "cost), over this run's rounds: the draft must be cheap and right often enough to pay for "
                "both. Both costs are this run's own, in the target step T(1) timed on its cache beside its "
                "rounds (its speed account). On a CPU, with *draft int8* ticked (the default), the draft's "
                "linear layers run in int8, about half of c; the target is never quantized, so sd's output "
                "stays its own.\n\n"
                "**Teaching settings** sample at temperature 1 (greedy p and q are one-hot: nothing to "
                "weigh) and draft full blocks (draft confidence 0), so each round has candidates to check.")
    with gr.Row():
        step = gr.Button("Step one round", variant="primary", elem_id="step")
        reset = gr.Button("Restart", elem_id="step-reset")
        teaching = gr.Button("Teaching settings", elem_id="step-teaching")
    # A row of its own: beside the buttons a reviewer read its label "check: 0-1 in this round" squashed.
    position = OptionSlider(0, 1, step=1, value=0, label="check (step a round first)", interactive=False,
                            elem_id="step-position")
    status = gr.HTML(elem_id="step-status")  # this tab's own: a round count means nothing on the others
    text = gr.HTML(elem_id="step-output")
    explanation = gr.HTML(elem_id="step-explanation")
    bars = gr.Plot(elem_id="step-bars", show_label=False)
    # Each click a round: a second click while the first's round ran was dropped, unsaid.
    ui.page_and_api(step.click, ui.handlers.step, [ui.prompt, ui.method, position, *ui.widgets],
                    [status, text, explanation, bars], "step", trigger_mode="multiple").then(
        keyed(ui.handlers.step_checks), position, position, **PRIVATE)
    ui.point_to_tab(step.click, "Step mode", "each step and its explanation are")
    reset.click(keyed(ui.handlers.step_restart), None, [status, text, explanation, bars, position], **PRIVATE)
    ui.family_views.extend([status, text, explanation, bars])  # a Load of another family empties them
    by_name = {c.name: w for c, w in zip(all_controls(), ui.widgets, strict=True)}
    teaching.click(lambda: (TEACHING["temperature"], TEACHING["draft_confidence"]), None,
                   [by_name["temperature"], by_name["draft_confidence"]], **PRIVATE).then(
        keyed(ui.handlers.teaching_set), ui.about, [status, ui.about, text, explanation, bars, position], **PRIVATE)
    position.change(keyed(ui.handlers.step_position), position, bars, **PRIVATE)

    def check_typed(request: gr.Request, event: gr.EventData):  # the value as typed, before the slider moves it
        ui.handlers.step_check_typed(session_key(request), event._data)
    position.release(check_typed, None, None, trigger_mode="multiple", **PRIVATE)


def build_toy_tab(handlers) -> None:
    gr.Markdown("The worked example of seed 001: p = [0.6, 0.3, 0.1] (target) and q = [0.4, 0.4, 0.2] "
                "(draft) over A, B, C. Each round draws x ~ q, accepts it with min(1, p(x)/q(x)), and on "
                "a rejection draws from the residual norm(max(0, p - q)) = [1, 0, 0]. Over many rounds "
                "the emitted tokens follow p exactly.")
    with gr.Row():
        seed = Number(0, precision=0, minimum=0, maximum=TOY_SEEDS - 1, label="seed", elem_id="toy-seed")
        one = gr.Button("Step one round", variant="primary", elem_id="toy-step")
        many = gr.Button("Run 100 rounds", elem_id="toy-many")
        reset = gr.Button("Reset", elem_id="toy-reset")
    table = gr.HTML(render.toy_html(Toy()), elem_id="toy-table")
    bars = gr.Plot(elem_id="toy-bars", show_label=False)
    one.click(keyed(handlers.toy_step), None, [table, bars], **PRIVATE)
    many.click(keyed(lambda key: handlers.toy_step(key, 100)), None, [table, bars], **PRIVATE)
    reset.click(keyed(handlers.toy_reset), seed, [table, bars], **PRIVATE)
