"""The Generate tab: a streamed run and its live view, Stop, the re-run when a control changes,
and the toggles that change what the view shows."""

import json
import time
from pathlib import Path

import gradio as gr
import tomllib

from ...decoding.speed.speed_account import PAGE_AR_RUNS_APART
from ...errors import PlaygroundError
from ...methods import METHODS
from ...models import embedded
from ...models.loading import LoadedModel
from ...space import on_space
from ..options import DEFAULT_METHOD
from ..sharing import eta, model_thread
from ..sharing.identical import signature
from ..sharing.stale_runs import FAMILY_CHANGED, REPLACED, STOP_PRESSED
from ..views import charts, render, sparklines
from ..views.appending_view import appending_html
from ..views.charts import CHARTS
from ..views.error_status import error_status
from ..views.pacing import STATS_INTERVAL, TEXT_INTERVAL, Pacer
from ..views.paired_speedups import LastArPairing
from . import what_if_panel
from .controls import REFUSED
from .family_panel import decoder
from .runs import Runs
from .wiring import (
    GENERATE_STARTING_JS,
    PRIVATE,
    PROMPT_REFUSAL_GONE_JS,
    SETTLED_TEXT_JS,
    SNAPSHOT_JS,
    Shared,
    keyed,
    offer,
)

SETTLE = 0.3  # seconds without a further change before a changed control re-runs
PREPARING = ("first run on this Space: preparing the embedded models (the target from the Hub, the draft and "
             "qualifier assembled from it; about a minute, once per container)…")
VIEW_SIZE = 3  # status, tokens, stats
WAITING = "waiting for the model: other runs are using it"


def waiting_text(session) -> str:
    """The status of a run waiting for the model, and what holds it where that is no run (a busy
    page read "other runs are using it" with none anywhere: the model was timing its step for
    Compare's estimate); a page showing an earlier answer is told it stays until this run starts
    (a first run's page had none, and read that it had)."""
    doing = model_thread.turns.holder()
    waiting = f"waiting for the model: it is {doing}" if doing else WAITING
    return waiting + (" (the output below is the previous run's until this one starts)" if session.run else "")


def _replaced_text(session, ticket: int, ended: bool = False) -> str:
    """What the run with `ticket` says, while it goes and at its end, of the run it replaced: that
    run's own "stopped" line stood a second before this one's status covered it."""
    if session.replaced is None or session.replaced[0] + 1 != ticket:  # the run its trigger queued alone
        return ""
    text = f"; it replaced the run before, stopped after {session.replaced[1]}"
    if ended:
        session.replaced = None
    return text


def _status_only(status: str) -> tuple:
    return (status, *[gr.skip()] * (VIEW_SIZE - 1))


# While a run goes, the charts shown are the last run's (drawn once a run ends): dimmed and said so.
CHARTS_STALE_JS = """() => {
    const charts = document.querySelector('#charts');
    if (!charts || !charts.querySelector('.js-plotly-plot')) return '';
    charts.classList.add('charts-stale');
    return "<p class='charts-stale-note'>The charts below are the last run's: this run's are drawn when it ends.</p>";
}"""
CHARTS_DRAWN_JS = "() => { document.querySelector('#charts')?.classList.remove('charts-stale'); return ''; }"


def _show_new_run(session, decode, show_rejected, settings: tuple) -> None:
    """The session's views follow a new run from its first step. A run refused before it leaves the
    last run with its views (the what-if said "Run something first" beside the last run's text)."""
    session.timeline, session.decode = charts.Timeline(), decode
    session.show_rejected, session.settings_on_screen = show_rejected is True, settings


class Generation:
    def __init__(self, runs: Runs):
        self.runs, self.sessions = runs, runs.family.sessions

    def generate(self, key: str, prompt: str, method: str, show_rejected: bool, *values):
        """Yield (status, tokens html, stats html with the running lines) as the run streams; its
        plotly charts follow on their own event once it has ended (run_charts.py). `stop()` in the
        same session (also called before each new run) ends it cleanly at its next step."""
        asked, session = time.perf_counter(), self.sessions.get(key)
        ticket = session.stale_runs.start()
        try:
            if session.stale_runs.stale(ticket):
                why = session.stale_runs.reason_of(ticket)
                yield _status_only(render.status_html(f"Generate stopped before it started: {why}"))
                return
            if self._busy():
                yield _status_only(render.status_html(waiting_text(session)))
            yield from self._stream(session, ticket, key, prompt, method, show_rejected, values, asked)
        finally:
            session.stale_runs.end(ticket)

    def generate_triggered(self, key: str, prompt: str, method: str, show_rejected: bool, *values):
        """The page's Generate, started by its tick's change: only where a trigger (Generate, Enter,
        a settled control change) queued a run. Gradio fires the tick's change again for an event
        that may set the tick and skips instead (the method list opened and closed, with re-runs
        off): after a preset switch, Generate ran twice, the second run unasked once the first ended."""
        if not self.sessions.get(key).stale_runs.queued:
            yield gr.skip(), gr.skip(), gr.skip()  # an event that yields nothing empties the page's views
            return
        yield from self.generate(key, prompt, method, show_rejected, *values)

    def _busy(self) -> bool:
        """Other runs take every place in line, or the model is held: this run's first round waits
        (its page still shows the previous run until it starts)."""
        return self.runs.line.full() or model_thread.turns.busy()

    def _stream(self, session, ticket: int, key: str, prompt: str, method: str, show_rejected, values, asked: float):
        session.final_charts_due = False  # an earlier run's charts are not this one's
        run = steps = started = None
        preparing = on_space() and not embedded.all_available()
        unloaded = [] if preparing else self.runs.family.unloaded(key, method)
        if preparing or unloaded:
            yield _status_only(render.status_html(PREPARING if preparing else loading_text(unloaded)))
        try:
            if not isinstance(show_rejected, bool):
                raise PlaygroundError(f"show rejected drafts must be true or false, got {show_rejected!r}")
            models, started = self.runs.start(key, prompt, method, values, asked)
            decode = decoder(models[METHODS[method].roles[0]])
            for waiting in started.waits(lambda: session.stale_runs.stale(ticket)):
                yield _status_only(render.status_html(waiting))
            if session.stale_runs.stale(ticket):
                why = session.stale_runs.reason_of(ticket)
                yield _status_only(render.status_html(f"stopped before it started: {why}"))
                return
            steps = started.steps(lambda: session.stale_runs.stale(ticket))
            if (turn := started.turn_text()) is not None:
                yield _status_only(render.status_html(turn))
            elif unloaded:
                yield _status_only(render.status_html(f"{started.doing}… {loaded_text(models)}"))
            doing = started.doing
            text_pace, stats_pace = Pacer(TEXT_INTERVAL), Pacer(STATS_INTERVAL)
            shown_sharing = ""
            for step_number, (_, run) in enumerate(steps):
                if step_number == 0:  # until now the page showed the last run
                    _show_new_run(session, decode, show_rejected, (prompt, method, *values))
                session.run = run
                session.timeline.add(run)
                if session.stale_runs.stale(ticket):
                    break
                session.load_note = ""  # a run goes on since: what a Load said of the last one is old news
                with_stats, sharing = stats_pace.due(), started.sharing()
                with_status = with_stats or sharing != shown_sharing  # who shares: said at once, not paced
                if with_status or text_pace.due():
                    began, shown_sharing = time.monotonic(), sharing
                    status = f"{doing}… {render.tokens(run.stats.tokens)}{sharing}{_replaced_text(session, ticket)}" \
                        if with_status else None
                    yield self._view(session, status, with_stats)
                    cost = time.monotonic() - began
                    (stats_pace if with_stats else text_pace).spent(cost)
                    if with_stats:
                        text_pace.spent(0.0)
        except Exception as error:  # noqa: BLE001  (the UI boundary: show it, stay usable)
            yield _status_only(error_status(error))
            return
        finally:
            if steps is not None:
                steps.close()
            run = session.run if run is not None else None  # None: it showed no step (the last run stays)
            if started is not None:
                started.close(run)
            session.final_charts_due = run is not None
        why = session.stale_runs.reason_of(ticket)
        if session.stale_runs.stale(ticket) and why == FAMILY_CHANGED:
            session.run, session.final_charts_due = None, False
            # The Load's status and emptied views, again: a view this run sent just before the Load
            # reached the page after it, and left "generating… 25 tokens" and its stats standing.
            yield (session.loaded_status, *[None] * (VIEW_SIZE - 1))
            return
        if run is None:  # stopped while it followed another visitor's run, before its first tokens
            yield _status_only(render.status_html(f"stopped before its first tokens: {why}"))
            return
        if run.finished:
            session.race.add(run, session.decode)
            if run.method == "ar":
                session.last_ar = run
            session.speedups.add(setting_of(run), run)
            if not started.replay:
                eta.record(run)
        if not run.finished:  # its stats said "running" after its end
            run.stop_reason = STOPPED_BY.get(why, "a stop")
        ending = f"done: {render.tokens(run.stats.tokens)} in {run.stats.account.clock:.2f} s ({run.stop_reason})" \
            f"{started.shared_text(run)}{_replaced_text(session, ticket, ended=True)}" if run.finished else \
            f"stopped after {render.tokens(run.stats.tokens)}: {why}; {run.stats.account.clock:.2f} s in all" \
            f"{started.shared_text(run)}"  # its seconds besides decoding, as a finished run's
        if not run.finished and why == REPLACED:
            session.replaced = (ticket, render.tokens(run.stats.tokens))
        yield self._view(session, ending + (f"; {started.replay}" if started.replay else ""), True, ended=True)

    @staticmethod
    def _view(session, status: str | None, with_stats: bool, ended: bool = False) -> tuple:
        """(status, token spans, stats); status (None) and stats are skips between their refreshes
        (each updated component costs the page work that the model's cores pay for); `ended`: the
        run's last view."""
        run = session.run
        text = render.token_spans(run.tokens, session.decode, session.show_rejected)
        stats = gr.skip()
        if with_stats:
            spread = session.speedups.spread(setting_of(run)) if run.finished else None
            stats = render.stats_html(stats_shown(run, session.last_ar, spread),
                                      retokenized=bool(run.steps and run.steps[0].draft_pieces is not None))
            stats += sparklines.running_lines_html(run, session.timeline, ended)
            stats += render.serving_html(run) + render.vocabulary_html(run) if run.finished else ""
        return (gr.skip() if status is None else render.status_html(status)), text, stats

    def stop(self, key: str, reason: str = STOP_PRESSED) -> None:
        """End the session's running (or queued) generation at its next step; its status gives the reason."""
        self.sessions.get(key).stale_runs.stop(reason)

    def waiting(self, key: str):
        """A run was queued (the layout's tick changed): while other runs use the model, say so at
        once, before this run's own first update (its place in line); a run that has started says
        the rest itself."""
        session = self.sessions.get(key)
        if session.stale_runs.queued and self._busy():
            return render.status_html(waiting_text(session))
        return gr.skip()

    def restart(self, key: str, tick: int) -> int:
        """Stop the running generation and return tick + 1: the layout starts a run when the
        tick changes, so every trigger stops the old run before the new one is queued. A run
        started this way reads the controls as they are now: pending control changes are done."""
        self.sessions.get(key).stale_runs.trigger()
        return tick + 1

    def changed(self, key: str, tick: int, live: bool = True, *settings):
        """A control that changes the run changed: if the page re-runs on changes (`live`, off by
        default: a lecturer expects a run only from Generate, and on two cores a run nobody asked
        for halves the speed of the one on screen) and the Generate tab shows, restart with the same
        prompt and seed once the changes pause for SETTLE seconds (typing "0.35" or dragging a slider
        is many changes); the last change (or Generate) wins and the earlier ones do nothing.
        `settings` (prompt, method, options) as the change left them: a change that leaves them as
        the run on screen had them (leaving a number box, a value typed and undone) re-runs nothing."""
        if not live:
            return gr.skip()
        change = self.sessions.get(key).stale_runs.change()
        time.sleep(SETTLE)
        session = self.sessions.get(key)
        unchanged = bool(settings) and settings == session.settings_on_screen
        if session.stale_runs.superseded(change) or not session.generate_shown or unchanged:
            return gr.skip()
        return self.restart(key, tick)

    def show_generate(self, key: str, shown: bool) -> None:
        """A tab was chosen: controls re-run Generate only while its tab shows (elsewhere the
        re-run would compete with Compare or Step mode for the same cores)."""
        self.sessions.get(key).generate_shown = shown

    def rerender(self, key: str, show_rejected: bool) -> str:
        """Apply the "show rejected drafts" toggle (a running generation follows it too)."""
        session = self.sessions.get(key)
        session.show_rejected = show_rejected
        if session.run is None:
            return gr.skip()
        return render.token_spans(session.run.tokens, session.decode, show_rejected)


EXAMPLES = Path(__file__).resolve().parents[3] / "assets" / "examples.toml"


def load_examples(path: Path = EXAMPLES) -> list[dict]:
    return tomllib.loads(path.read_text(encoding="utf-8"))["example"] if path.is_file() else []


def shown_for_memory(method) -> dict:
    """Visible only for a method that reads a correction memory (csd, csd-memory)."""
    return gr.update(visible=isinstance(method, str) and method in METHODS and METHODS[method].uses_memory)


def build_tab(ui: Shared) -> None:
    examples = load_examples()
    ui.prompt = gr.Textbox(examples[0]["prompt"] if examples else "", label="prompt", lines=3, elem_id="prompt")
    if examples:
        gr.Examples([[e["prompt"]] for e in examples], [ui.prompt], label="Examples (one click loads the prompt)",
                    example_labels=[e["label"] for e in examples], elem_id="examples")
    with gr.Row():
        generate = gr.Button("Generate", variant="primary", elem_id="generate")
        stop = gr.Button("Stop", variant="stop", elem_id="stop")
        show_rejected = gr.Checkbox(False, label="show rejected drafts", elem_id="show-rejected")
        live = gr.Checkbox(False, label="re-run when a control changes", elem_id="live")
    gr.HTML(render.legend_html(), elem_id="legend")
    output = appending_html(elem_id="output", elem_classes="token-text")
    stats = gr.HTML(elem_id="stats")
    with gr.Accordion("Charts (drawn when a run ends; the stats show its running lines)", open=True,
                      elem_id="charts-panel"):
        charts_note = gr.HTML(elem_id="charts-note")  # while a run goes, that the charts are the last run's
        with gr.Row(elem_id="charts"):
            plots = [gr.Plot(elem_id=elem_id, show_label=False, min_width=340) for elem_id, _ in CHARTS]
        gr.Markdown("Each chart's camera button (top right, on hover) downloads it as a PNG.")
    what_if = what_if_panel.build_panel()
    with gr.Row():
        export_json = gr.Button("Export run (JSON)", elem_id="export-json", size="sm")
        export_charts = gr.Button("Export charts (HTML)", elem_id="export-charts", size="sm")
        memory = gr.Button("CSD correction memory", elem_id="csd-memory", size="sm")
    download = gr.File(label="download", elem_id="download", interactive=False, visible=False)
    ui.family_views = [output, stats, *plots]
    upload = gr.File(label="CSD correction memory to start from (JSON from `calibrate` or a download)",
                     file_types=[".json"], type="filepath", elem_id="csd-memory-upload", height=90,
                     visible=METHODS[DEFAULT_METHOD].uses_memory)
    ui.method.change(shown_for_memory, ui.method, upload, **PRIVATE)  # csd's alone: it reads a memory
    memory_view = gr.HTML(elem_id="csd-memory-view")

    # Every trigger first stops the session's running generation (at its next step, so it ends
    # with its own final view), then bumps a counter whose change starts the new run. With "re-run
    # when a control changes" ticked, a control's change (dragging or typing into a slider, a
    # dropdown, a checkbox, the method) re-runs the same prompt and seed once the changes settle;
    # they may overlap, the last wins.
    tick = gr.State(0)
    ui.show_rejected = show_rejected
    ui.run_inputs = [ui.prompt, ui.method, show_rejected, *ui.widgets]
    values = [c.value for c in ui.run_inputs]
    ui.settings = gr.JSON(values, visible="hidden", elem_id="run-settings")
    gr.on([c.change for c in ui.run_inputs], None, ui.run_inputs, ui.settings, js=SNAPSHOT_JS, **PRIVATE)
    ui.settled = gr.Textbox(json.dumps(values), visible="hidden", elem_id="run-settings-settled")
    gr.on([c.change for c in ui.run_inputs], None, ui.run_inputs, ui.settled, js=SETTLED_TEXT_JS, **PRIVATE)
    # A Generate pressed while a run goes is sent once that run ends ("always_last", a change's
    # own default, which the run's event follows the page's settings list with).
    run = ui.page_and_api(tick.change, ui.handlers.generate, ui.run_inputs, [ui.status, output, stats], "generate",
                          show_progress="hidden", trigger_mode="always_last",
                          page_handler=ui.handlers.generate_triggered)
    # The charts follow on their own event once the run's has ended (run_charts.py); API callers
    # ask for the last run's charts with /charts.
    # The what-if opens on the run's own c (its speed account's), not on where the slider was left.
    run.then(keyed(ui.handlers.charts_after_run), None, plots, **PRIVATE).then(
        None, None, charts_note, js=CHARTS_DRAWN_JS, **PRIVATE).then(
        keyed(ui.handlers.what_if_profile), what_if.profile, what_if.cost, **PRIVATE).then(
        keyed(ui.handlers.what_if_on_page), what_if.inputs, what_if.outputs, **PRIVATE)
    what_if_panel.wire(ui, what_if)
    ui.what_if = what_if
    tick.change(None, None, what_if.words, js=what_if_panel.RUN_GOING_JS, **PRIVATE)  # its words were the last run's
    tick.change(None, None, charts_note, js=CHARTS_STALE_JS, **PRIVATE)  # a reviewer read an ar run above sd's charts
    # A note on a value the slider moved into its range stood through a 512-token run: the run's
    # settings line says the value it ran with. A note on a value runs refuse stays, with the value.
    tick.change(None, ui.option_note, ui.option_note, js=f"(note) => String(note).includes({json.dumps(REFUSED)}) "
                "? undefined : ''", **PRIVATE)
    tick.change(keyed(ui.handlers.waiting), None, ui.status, concurrency_limit=None, show_progress="hidden",
                **PRIVATE)
    charts_button = gr.Button(visible=False)
    charts_button.click(keyed(ui.handlers.final_charts), None, plots, api_name="charts")
    gr.on([generate.click, ui.prompt.submit], keyed(ui.handlers.restart), tick, tick, **PRIVATE)
    gr.on([generate.click, ui.prompt.submit], None, ui.status, ui.status, js=GENERATE_STARTING_JS, **PRIVATE)
    ui.prompt.change(None, [ui.prompt, ui.status], ui.status, js=PROMPT_REFUSAL_GONE_JS, **PRIVATE)
    gr.on([w.input for w in (ui.method, *ui.widgets)], keyed(ui.handlers.changed),
          [tick, live, ui.prompt, ui.method, *ui.widgets], tick,
          trigger_mode="multiple", concurrency_limit=None, show_progress="hidden", **PRIVATE)
    stop.click(keyed(ui.handlers.stop), None, None, **PRIVATE)
    show_rejected.change(keyed(ui.handlers.rerender), show_rejected, output, **PRIVATE)
    export_json.click(keyed(offer(ui.handlers.export_json)), None, [download, ui.status], api_name="export_json")
    export_charts.click(keyed(offer(ui.handlers.export_charts)), None, [download, ui.status],
                        api_name="export_charts")
    memory.click(keyed(offer(ui.handlers.correction_memory)), None, [download, memory_view],
                 api_name="correction_memory")
    upload.upload(keyed(ui.handlers.upload_memory), upload, memory_view, api_name="upload_memory")


# Beside two burners "loading smollm2-qualifier…" stood 9 s: the load's 1.77 s, then its first round.
LOADED_FIRST_ROUND = "the models are loaded; its first round computes (a model's first runs slower)"
# And of 6 s after a load, 2.85 s prepared the draft's levers, which the status did not name.
PREPARES_DRAFT = ("the models are loaded; the draft's levers are prepared where its settings ask for them (its int8 "
                  "copy or smaller head, once a model), then its first round computes (a model's first runs slower)")


def loaded_text(models: dict) -> str:
    """The status once the models a run loaded are in, before its first tokens."""
    return PREPARES_DRAFT if isinstance(models.get("draft"), LoadedModel) else LOADED_FIRST_ROUND


def loading_text(specs: list[str]) -> str:
    """The status while a run loads the models its method needs first (a reviewer read "the first
    run of this family" on its ar, sd and psd-f runs: each loaded the model it added)."""
    return f"loading {', '.join(specs)} (the first run that needs a model loads it)…"


# What the stats' "stopped by" says of a run that did not finish (its stop's reason is its status's).
STOPPED_BY = {STOP_PRESSED: "Stop", REPLACED: "a newer run"}


def stats_shown(run, last_ar, spread: str | None = None) -> dict:
    """The run's stats as the panel shows them: `ar` is the reference, so it has no speedup over
    itself (it read 0.98x); a run whose speed account withholds its speedup, and that wrote the same
    tokens as the page's last `ar` run, is timed against that run instead (beside a settled figure
    it read as a second, unexplained one). `spread`: the page's settled runs of this setting
    (SettingSpeedups), shown beside this one's."""
    shown = {**run.stats.to_dict(), "stop_reason": run.stop_reason or "running"}
    if run.method == "ar":
        for key in ("speedup", "verify_cost", "expected_speedup", "cost_ratio"):
            shown.pop(key, None)
        if (step := run.stats.account.single_step()) is not None:
            shown["ar_step"] = step * 1000
    if run.method != "ar" and (passes := prompt_passes_apart(run, last_ar)):
        shown["ar_prompt_pass"] = passes
    paired = None
    if run.stats.account.unsettled() and run.method != "ar":
        paired = paired_speedup(run, last_ar) if run.finished else STOPPED_UNPAIRED if run.stop_reason else None
    return shown | ({"paired_speedup": paired} if paired else {}) | ({"speedup_spread": spread} if spread else {})


# Prompt passes this many times apart (and PROMPT_PASS_GAP seconds) move a speedup away from the
# tokens/s ratio over the page's last `ar` run: walk 30 read 1.35x beside 26.0 over 18.1 tokens/s
# (1.44), that `ar` run's prompt's pass 0.233 s against the sd run's 0.093 s, unsaid.
PROMPT_PASSES_APART, PROMPT_PASS_GAP = 1.5, 0.03


def prompt_passes_apart(run, ar) -> tuple[float, float] | None:
    """(the page's last `ar` run's prompt's pass, this run's) where that `ar` run wrote this prompt
    on this target and the two passes are far apart: the speedup's `ar` takes this run's."""
    if ar is None or run.prompt != ar.prompt or run.models.get("target") != ar.models.get("target"):
        return None
    theirs, mine = ar.stats.account.first_pass, run.stats.account.first_pass
    if not theirs or not mine or max(theirs, mine) < PROMPT_PASSES_APART * min(theirs, mine) \
            or abs(theirs - mine) < PROMPT_PASS_GAP:
        return None
    return theirs, mine


def setting_of(run) -> tuple | None:
    """What makes a run the same run again (its page's speedups of it are kept together)."""
    return signature(run.prompt, run.method, run.models, run.recorded_config())


# A stopped run's card (it showed none, unsaid): the tokens it wrote are not those an ar run wrote.
STOPPED_UNPAIRED = LastArPairing(None, "not given: the run was stopped, so it did not write the tokens an `ar` run "
                                       "of this prompt writes: run it to its end to pair it")


# Two runs whose target steps took this many times apart ran on different machines, in effect (a
# reviewer's ar at T(1) = 1452 ms and an sd 25 minutes later at 37 ms read "36.01x"; an ar taking
# turns with a second visitor's run at 194 ms a step against sd's 105 ms read 2.35x beside 1.36x
# in the budget); a page drawing each round of the second moves its T(1) less (25.5 against 40.6 ms, quiet).
SAME_MACHINE = 1.75


def paired_speedup(run, ar) -> LastArPairing | None:
    """This run against the page's last `ar` run of the same prompt that wrote the same tokens with
    the same target: `ar`'s seconds over this run's, each its status line's less its own timing of
    ar's step and its waits for a turn (the account's decoder seconds), said in numbers. Both ran
    as this page ran them (drawing its rounds on the same cores), which the speed account's T(1),
    timed beside the run, may not settle; one run each, not repeated (Compare repeats). Withheld,
    with why, where their T(1)s are SAME_MACHINE times apart."""
    if run.method == "ar":
        return None
    again = "run ar on this prompt, then this method"
    if ar is None:  # the row went, unsaid, after a Load of another family
        return LastArPairing(None, "not given: this page has no `ar` run of this family to pair it with (none yet, "
                                   f"or a Load of another family since): {again}")
    if run is ar:
        return None
    if run.prompt != ar.prompt or run.models.get("target") != ar.models.get("target"):
        return LastArPairing(None, f"not given: the page's last `ar` run was of another prompt: {again}")
    if (other := _other_tokens(run, ar)):  # a reviewer's psd-f run had no card, unsaid
        return LastArPairing(None, f"not given: {other}, so their seconds are not for the same work")
    mine, theirs = run.stats.account, ar.stats.account
    steps = (mine.own_step(), theirs.own_step())
    if None in steps or not mine.decoder_seconds:
        return None
    for name, account in (("this run", mine), ("that ar run", theirs)):
        if account.shared_with:  # a second visitor's shared run read 1.65x here, beside refused solo runs
            return LastArPairing(None, f"not given: {name} took turns with another run on the model, so its "
                                       "seconds hold that run's rounds and page too; run it alone to pair them")
        if (used := account.busy()) is not None:
            return LastArPairing(None, f"not given: the machine was busy during {name} (its decoding thread had "
                                       f"its core {used:.0%} of the time), so the two runs' seconds measure the "
                                       "load as much as the method")
    if max(steps) / min(steps) >= SAME_MACHINE:
        return LastArPairing(None, f"not given: that run's target step took {steps[1] * 1000:.1f} ms, this run's "
                                   f"{steps[0] * 1000:.1f} ms ({max(steps) / min(steps):.1f}x apart): one of them "
                                   "ran beside other work (another program, or a browser drawing on these cores), so "
                                   "their seconds are not for the same machine; run ar again, then this method")
    # After burners stopped, a quiet sd whose passes undercut that ar run's steps read 1.73x here,
    # beside its own speedup withheld for exactly that. Both were drawn by this page, which moves an
    # `ar` run's step from one run to the next by up to PAGE_AR_RUNS_APART.
    if (mean := mine.mean_pass()) is not None and mean < steps[1] / PAGE_AR_RUNS_APART:
        return LastArPairing(None, f"not given: that run's target step took {steps[1] * 1000:.1f} ms, more than "
                                   f"this run's passes of several tokens ({mean * 1000:.1f} ms), which cost "
                                   "at least one step: that ar run ran slower than this one (other work, or the page "
                                   "drawing each of its tokens on the same cores); run ar again, then this method")
    return LastArPairing(theirs.decoder_seconds / mine.decoder_seconds, _pairing_words(mine, theirs))


def _other_tokens(run, ar) -> str:
    """How this run's tokens differ from the `ar` run's ("" where they are the same). One a start of
    the other is a length apart, not a rule (a reviewer read "a lossy rule" for a greedy sd run that
    ended its text before the 48 tokens of the page's `ar` run)."""
    mine, theirs = [t.id for t in run.tokens], [t.id for t in ar.tokens]
    if mine == theirs:
        return ""
    shorter = min(len(mine), len(theirs))
    if mine[:shorter] == theirs[:shorter]:
        return (f"this run wrote {len(mine)} tokens, the page's last `ar` run the same first {shorter} and "
                f"{len(theirs)} in all (a max new tokens or an end of the text apart): run ar with this max new tokens")
    return ("this run wrote other tokens than the page's last `ar` run (a lossy rule keeps some the target would "
            "not write, a sampled run draws others)")


def _pairing_words(mine, theirs) -> str:
    """How the figure was computed, from the status lines' seconds."""
    def less(account) -> str:  # a reviewer found the draft's preparation in "timing ar's step or waiting"
        taken = account.clock - account.decoder_seconds
        what = "timing ar's step, waiting or preparing the draft" if account.prepared_before() else \
            "timing ar's step or waiting"
        return f" (its status line less {taken:.2f} s {what})" if taken >= 0.005 else ""
    return f"ar's {theirs.decoder_seconds:.2f} s{less(theirs)} over this run's {mine.decoder_seconds:.2f} s{less(mine)}"
