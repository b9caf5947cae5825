"""The playground's Blocks, built in one function; events are wired next to their components.

Handlers live in handlers.py and take a session key first; `_keyed` turns Gradio's request into
that key (its session hash, carrying the visitor's address: visitors.py). `build_demo(loader=...,
presets=...)` lets tests run the whole app on tiny models.
"""

import inspect
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import gradio as gr
import tomllib

from ..decoding.speed.what_if import pass_cost_sentence
from ..deploy.limits import current_limits
from ..methods import METHODS
from ..models.policy import public_mode
from .handlers import Handlers
from .options import (
    THRESHOLDS,
    all_controls,
    default_sweep,
    finite_number,
    method_choices,
    suggested_sweep,
    sweep_options,
    visible_options,
)
from .sharing import disk
from .sharing.queue_cap import cap_events_per_visitor
from .sharing.route_limits import GuardedBlocks
from .sharing.server_settings import queue_settings
from .sharing.visitors import session_key
from .tabs import race, share
from .tabs.controls import MethodPicker, checked_value
from .tabs.step_mode import TEACHING
from .tabs.what_if_panel import profile_names
from .views import render
from .views.appending_view import appending_html
from .views.charts import CHARTS
from .views.error_status import toast_text
from .views.explain_round import TOY_SEEDS, Toy

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CSS_PATH = ASSETS / "ui.css"
DEFAULT_METHOD = "sd" if "sd" in METHODS else next(iter(METHODS))
PRIVATE = {"api_visibility": "private"}
FROM_PAGE = "_from_page"  # the API name of an API event's twin for the page (Shared.page_and_api)
# The events whose outputs show Gradio's progress while a user waits on them; every other event
# shows it on an invisible state. Gradio's page revisits every component that has ever shown an
# event's progress at each status message of any event, and a streamed run sends one per update:
# with the option controls (the method's change) and the charts among them, each update of a
# run cost the page work for 30 components (bench/results/browser_speed/README.md).
SHOWS_PROGRESS = {"load", "unload", "compare", "step", "race", "export_json", "export_charts", "correction_memory",
                  "upload_memory"}
RUNS = ("generate", "compare", "step", "race")  # a visitor may hold fewer of these at once than of other events
GRADIO_THREADS = 40  # Gradio's (starlette's) default pool for handlers, besides the runs waiting in line
HEARTBEAT_SECONDS = 60


def load_examples(path: Path = ASSETS / "examples.toml") -> list[dict]:
    return tomllib.loads(path.read_text(encoding="utf-8"))["example"] if path.is_file() else []


# Gradio 6.31's page announces a finished event to screen readers as "common.complete" (a key its
# English strings lack), in a live region under the event's outputs that page text includes.
MISSING_STRINGS = {"common.complete": "Complete"}


def launch_options() -> dict:
    """What Gradio 6 takes at launch() rather than Blocks(): the theme, the stylesheet, the
    largest upload Gradio accepts at all (the handlers check their own limits too), how many
    sessions' component state it keeps, the strings its page lacks, and threads for the runs
    waiting in the app's line (each holds one while it waits: waiting_line.py) beside Gradio's own."""
    limits = current_limits()
    return {"css": CSS_PATH.read_text(encoding="utf-8"), "theme": gr.themes.Soft(),
            "max_file_size": limits.max_upload_bytes, "state_session_capacity": limits.state_sessions,
            "i18n": gr.I18n(en=MISSING_STRINGS), "max_threads": GRADIO_THREADS + queue_settings()["max_size"]}


class _NumberInput:
    """Refuses a value that is not a finite number in one line (gr.Error), where Gradio's own
    preprocessing would raise a TypeError that reaches a visitor only as an opaque failure."""

    def preprocess(self, payload):
        if (payload is not None or isinstance(self, gr.Slider)) and not finite_number(payload):
            raise gr.Error(toast_text(f"{self.label} must be a number, got {payload!r}"))
        return super().preprocess(payload)


class Slider(_NumberInput, gr.Slider):
    pass


class OptionSlider(Slider):
    """A run option's slider: a value outside its range reaches the handlers, which refuse it in
    their own words with the range (options.coerce; controls.checked_value as it is typed), where
    Gradio would raise its own error before them."""

    def preprocess(self, payload):
        if finite_number(payload) and not self.minimum <= payload <= self.maximum:
            return payload
        return super().preprocess(payload)

    def get_block_name(self) -> str:
        return "slider"  # the page draws a component by its class name: Gradio's own slider


class ThresholdSlider(OptionSlider):
    """A divergence threshold: its maximum follows the divergence sent in the same request, so the
    handler checks the range (options.coerce) rather than the maximum this page started with."""

    def preprocess(self, payload):
        if finite_number(payload) and payload > self.maximum:
            return float(payload)
        return super().preprocess(payload)


class Number(_NumberInput, gr.Number):
    pass


class Choice(gr.Dropdown):
    """A dropdown whose value reaches its handler unchecked: the handler refuses an unknown one in
    its own words, the value cut short (error_status.py). Gradio's own check echoed a 100,000-character
    method name whole, and refused the method a page sent while a Load changed the choices."""

    def preprocess(self, payload):
        return payload

    def get_block_name(self) -> str:
        return "dropdown"  # the page draws a component by its class name: Gradio's own


def _keyed(handler):
    """A Gradio callback calling `handler(session_key, *inputs)`; generators stay generators."""
    if inspect.isgeneratorfunction(handler):
        def callback(request: gr.Request, *inputs):
            yield from handler(session_key(request), *inputs)
    else:
        def callback(request: gr.Request, *inputs):
            return handler(session_key(request), *inputs)
    return callback


def _offer(handler):
    """Show the download box only when the handler produced a file (path, other) -> (File, other)."""
    def offer(key):
        path, other = handler(key)
        return gr.File(value=path, visible=path is not None), other
    return offer


def _reading_list(handler, inputs: list, listed: list) -> tuple:
    """(callback, the inputs not in `listed`): `handler(key, *values of inputs)` as a callback
    taking (key, the values of `listed` in one list, *the values of those other inputs);
    generators stay generators."""
    where = {id(c): i for i, c in enumerate(listed)}

    def values(in_list, others):
        others = iter(others)
        return [in_list[where[id(c)]] if id(c) in where else next(others) for c in inputs]

    if inspect.isgeneratorfunction(handler):
        def reading(key, in_list, *others):
            yield from handler(key, *values(in_list, others))
    else:
        def reading(key, in_list, *others):
            return handler(key, *values(in_list, others))
    return reading, [c for c in inputs if id(c) not in where]


@dataclass
class Shared:
    """Components and helpers every tab uses."""

    handlers: Handlers
    method: gr.Dropdown
    widgets: list
    status: gr.HTML
    prompt: gr.Textbox = None
    show_rejected: gr.Checkbox = None
    # The run's controls (prompt, method, show rejected, options) and the page's one list of
    # their values, which a browser-only event keeps equal to them (see `page_and_api`).
    run_inputs: list = None
    settings: gr.JSON = None
    family_views: list = None  # what shows a run's answer: emptied when a Load changes the family

    def page_and_api(self, trigger, handler, inputs: list, outputs: list, api_name: str, **options):
        """Wire `handler(key, *values of inputs)` for API callers as `api_name` (a hidden button,
        every input its own argument), and for the page on `trigger`, where the run's controls
        among `inputs` come as the page's one list. Gradio's page revisits every input of an ended
        event at each status message of any later event, and a streamed run sends one per update:
        21 controls as inputs of any page event made every later run's view cost 21 snapshots
        per update (bench/results/README.md, "The page vs the CLI"). Returns the page's event."""
        gr.Button(visible=False).click(_keyed(handler), inputs, outputs, api_name=api_name, **options)
        reading, others = _reading_list(handler, inputs, self.run_inputs)
        return trigger(_keyed(reading), [self.settings, *others], outputs, api_name=api_name + FROM_PAGE,
                       api_visibility="private", **options)

    def page_only(self, triggers: list, handler, inputs: list, outputs: list, after=None) -> None:
        """Wire a quick `handler(key, *values of inputs)` for the page alone (an estimate, a check)
        on `triggers`, a control's change and the end of the event `after`, reading the run's
        controls as the page's one list; it never waits behind a run."""
        reading, others = _reading_list(handler, inputs, self.run_inputs)
        wiring = {"fn": _keyed(reading), "inputs": [self.settings, *others], "outputs": outputs,
                  "concurrency_limit": None, "show_progress": "hidden", **PRIVATE}
        gr.on([*triggers, self.settings.change], trigger_mode="always_last", **wiring)
        if after is not None:
            after.then(**wiring)


def _shown_for_memory(method) -> dict:
    """Visible only for a method that reads a correction memory (csd, csd-memory)."""
    return gr.update(visible=isinstance(method, str) and method in METHODS and METHODS[method].uses_memory)


def _component(control):
    common = {"label": control.label, "info": control.help, "elem_id": control.elem_id, "value": control.default,
              "visible": control.name in visible_options(DEFAULT_METHOD)}
    if control.kind == "slider":
        low, high, step = control.range
        return (ThresholdSlider if control.name in THRESHOLDS else OptionSlider)(low, high, step=step, **common)
    if control.kind == "dropdown":
        return gr.Dropdown(choices=list(control.choices), **common)
    if control.kind == "checkbox":
        return gr.Checkbox(**common)
    if control.kind == "text":
        return gr.Textbox(**common)
    if control.takes_inf:  # a browser's number box cannot hold the word inf
        return gr.Textbox(**common | {"value": f"{control.default:g}"})
    return Number(precision=0 if isinstance(control.default, int) else None, **common)


def build_demo(loader=None, presets=None) -> gr.Blocks:
    """The whole app. `loader(spec) -> LoadedModel` and `presets` default to the project's."""
    handlers = Handlers(loader, presets)
    # Gradio's own copies of the files it serves (downloads) and is sent (uploads) are swept (disk.py)
    delete_cache = disk.PUBLIC_DELETE_CACHE if public_mode() else disk.DESKTOP_DELETE_CACHE
    with GuardedBlocks(title="Speculative decoding playground", delete_cache=delete_cache) as demo:
        gr.Markdown("# Speculative decoding playground\nA draft proposes, the target verifies. "
                    "Every token is colored by who wrote it; hover a token to see why.")
        with gr.Row():
            with gr.Column(scale=1, min_width=320, elem_id="sidebar"):
                status = gr.HTML(elem_id="status")
                share_button, share_box = share.panel()
                method, loads, family = _family_panel(handlers, status)
                about = gr.Markdown(elem_id="method-about")
                note = gr.HTML(elem_id="option-note")  # a value outside its range, named with the range
                widgets = [_component(c) for c in all_controls()]
            with gr.Column(scale=3):
                shared = Shared(handlers, method, widgets, status)
                with gr.Tabs(elem_id="tabs"):
                    with gr.Tab("Generate", id="generate-tab") as generate_tab:
                        _generate_tab(shared)
                    with gr.Tab("Compare", id="compare-tab") as compare_tab:
                        compare_methods = _compare_tab(shared, compare_tab)
                    with gr.Tab("Step mode", id="step-tab") as step_tab:
                        _step_tab(shared)
                    with gr.Tab("Race", id="race-tab") as race_tab:
                        race_methods = race.build_tab(shared, race_tab, _keyed)
                    with gr.Tab("Toy: seed-001 example", id="toy-tab") as toy_tab:
                        _toy_tab(handlers)
        for tab in (generate_tab, compare_tab, step_tab, race_tab, toy_tab):
            shown = tab is generate_tab
            tab.select(_keyed(lambda key, shown=shown: handlers.show_generate(key, shown)), None, None, **PRIVATE)
        on_method = _keyed(handlers.method_changed)
        method.change(on_method, method, [*widgets, about], **PRIVATE)
        _wire_thresholds(handlers, widgets)
        _wire_checks(widgets, note)
        method_lists = [compare_methods, race_methods]
        views = shared.family_views
        for loading in loads:
            loading.then(on_method, method, [*widgets, about], **PRIVATE)  # the new preset's defaults
            loading.then(_keyed(lambda key: handlers.family.cleared_views(key, len(views))), None, views, **PRIVATE)
            loading.then(_keyed(handlers.family.method_lists), method_lists, method_lists, **PRIVATE)
        share.wire(demo, share_button, share_box, handlers, family, method, shared, about)
        _progress_only_where_users_wait(demo)
        _session_lifetime(demo, handlers)
    run_names = {name + suffix for name in RUNS for suffix in ("", FROM_PAGE)}
    _runs_wait_in_the_apps_line(demo, run_names)
    cap_events_per_visitor(demo, run_names)
    return demo


def _runs_wait_in_the_apps_line(demo: gr.Blocks, run_names: set[str]) -> None:
    """Runs start at once in Gradio's queue: they wait in the app's line (waiting_line.py), which tells
    each its place and wait, and take the model in turns (turns.py). In Gradio's queue, one run
    of each event at a time, a visitor's run waited out of sight behind others' whole runs."""
    for event in demo.fns.values():
        if event.api_name in run_names:
            event.concurrency_limit = None


def _session_lifetime(demo: gr.Blocks, handlers: Handlers) -> None:
    """A session goes with its tab (unload). On a public deployment an open tab also beats every
    HEARTBEAT_SECONDS, so a session whose page stopped can go after the limits' short
    session_idle_seconds while a visitor reading an open page keeps theirs."""
    demo.unload(_keyed(handlers.sessions.drop))
    if public_mode():
        gr.Timer(HEARTBEAT_SECONDS).tick(_keyed(handlers.sessions.touch), None, None, concurrency_limit=None,
                                         show_progress="hidden", **PRIVATE)


def _progress_only_where_users_wait(demo: gr.Blocks) -> None:
    quiet = gr.State()
    for event in demo.fns.values():
        if (event.api_name or "").removesuffix(FROM_PAGE) not in SHOWS_PROGRESS:
            event.show_progress_on = [quiet]


def _wire_thresholds(handlers: Handlers, widgets: list) -> None:
    """The threshold sliders follow the divergence's scale whenever it changes (a preset too)."""
    by_name = {c.name: w for c, w in zip(all_controls(), widgets, strict=True)}
    sliders = [by_name[name] for name in THRESHOLDS]
    by_name["divergence"].change(_keyed(handlers.divergence_changed), [by_name["divergence"], *sliders], sliders,
                                 **PRIVATE)


def _wire_checks(widgets: list, note) -> None:
    """Every number the sidebar takes is checked as it is typed or dragged (controls.py's
    checked_value): a value outside its range is named with the range at once, not run silently
    at the nearest end of the slider."""
    by_name = {c.name: w for c, w in zip(all_controls(), widgets, strict=True)}
    for control, widget in zip(all_controls(), widgets, strict=True):
        if control.kind not in ("slider", "number") and not control.takes_inf:
            continue
        widget.input(partial(checked_value, name=control.name), [widget, by_name["divergence"], note], note,
                     concurrency_limit=None, show_progress="hidden", trigger_mode="always_last", **PRIVATE)


def _family_panel(handlers: Handlers, status):
    """The model family controls and the method dropdown; returns (method, the load events: Load
    and choosing a preset, which loads its family, the family's controls: the preset, target,
    draft and qualifier, its description)."""
    names, first = [p.name for p in handlers.presets], handlers.presets[0]
    with gr.Accordion("Model family", open=True):
        preset = gr.Dropdown(names, value=names[0], label="preset", elem_id="preset")
        specs = [gr.Textbox(getattr(first, role), label=role, elem_id=f"{role}-spec",
                            info="embedded name, local directory, .gguf file or hub id")
                 for role in ("target", "draft", "qualifier")]
        with gr.Row():
            load = gr.Button("Load", elem_id="load")
            unload = gr.Button("Unload", elem_id="unload")
        family = gr.Markdown(first.description, elem_id="family-info")
    method = Choice(method_choices(), value=DEFAULT_METHOD, label="method", elem_id="method")

    def on_load(target, draft, qualifier, current, request: gr.Request, progress=gr.Progress()):
        return handlers.load(session_key(request), target, draft, qualifier, current, progress)

    chosen = preset.input(handlers.preset, preset, [*specs, family], **PRIVATE)
    loads = [load.click(on_load, [*specs, method], [status, family, method], api_name="load"),
             chosen.then(on_load, [*specs, method], [status, family, method], **PRIVATE)]
    for role, spec in zip(("target", "draft", "qualifier"), specs, strict=True):  # typed, or filled by a script
        gr.on([spec.input, spec.change], _keyed(partial(handlers.family.edited, role=role)), [spec, preset], status,
              trigger_mode="always_last", **PRIVATE)
    unload.click(_keyed(handlers.unload), None, [status, family], api_name="unload")
    return method, loads, [preset, *specs, family]


def _generate_tab(ui: Shared) -> None:
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
        with gr.Row(elem_id="charts"):
            plots = [gr.Plot(elem_id=elem_id, show_label=False, min_width=340) for elem_id, _ in CHARTS]
        gr.Markdown("Each chart's camera button (top right, on hover) downloads it as a PNG.")
    what_if = _what_if_panel()
    with gr.Row():
        export_json = gr.Button("Export run (JSON)", elem_id="export-json", size="sm")
        export_charts = gr.Button("Export charts (HTML)", elem_id="export-charts", size="sm")
        memory = gr.Button("CSD correction memory", elem_id="csd-memory", size="sm")
    download = gr.File(label="download", elem_id="download", interactive=False, visible=False)
    ui.family_views = [output, stats, *plots]
    upload = gr.File(label="CSD correction memory to start from (JSON from `calibrate` or a download)",
                     file_types=[".json"], type="filepath", elem_id="csd-memory-upload", height=90,
                     visible=METHODS[DEFAULT_METHOD].uses_memory)
    ui.method.change(_shown_for_memory, ui.method, upload, **PRIVATE)  # csd's alone: it reads a memory
    memory_view = gr.HTML(elem_id="csd-memory-view")

    # Every trigger first stops the session's running generation (at its next step, so it ends
    # with its own final view), then bumps a counter whose change starts the new run. With "re-run
    # when a control changes" ticked, a control's change (dragging or typing into a slider, a
    # dropdown, a checkbox, the method) re-runs the same prompt and seed once the changes settle;
    # they may overlap, the last wins.
    tick = gr.State(0)
    ui.show_rejected = show_rejected
    ui.run_inputs = [ui.prompt, ui.method, show_rejected, *ui.widgets]
    ui.settings = gr.JSON([c.value for c in ui.run_inputs], visible="hidden", elem_id="run-settings")
    gr.on([c.change for c in ui.run_inputs], None, ui.run_inputs, ui.settings, js="(...values) => [values]",
          **PRIVATE)
    run = ui.page_and_api(tick.change, ui.handlers.generate, ui.run_inputs, [ui.status, output, stats], "generate",
                          show_progress="hidden")
    # The charts follow on their own event once the run's has ended (run_charts.py); API callers
    # ask for the last run's charts with /charts.
    # The what-if opens on the run's own c (its speed account's), not on where the slider was left.
    run.then(_keyed(ui.handlers.charts_after_run), None, plots, **PRIVATE).then(
        _keyed(ui.handlers.what_if_profile), what_if.profile, what_if.cost, **PRIVATE).then(
        _keyed(ui.handlers.what_if_on_page), what_if.inputs, what_if.outputs, **PRIVATE)
    _wire_what_if(ui, what_if)
    tick.change(_keyed(ui.handlers.waiting), None, ui.status, concurrency_limit=None, show_progress="hidden",
                **PRIVATE)
    charts_button = gr.Button(visible=False)
    charts_button.click(_keyed(ui.handlers.final_charts), None, plots, api_name="charts")
    gr.on([generate.click, ui.prompt.submit], _keyed(ui.handlers.restart), tick, tick, **PRIVATE)
    gr.on([w.input for w in (ui.method, *ui.widgets)], _keyed(ui.handlers.changed),
          [tick, live, ui.prompt, ui.method, *ui.widgets], tick,
          trigger_mode="multiple", concurrency_limit=None, show_progress="hidden", **PRIVATE)
    stop.click(_keyed(ui.handlers.stop), None, None, **PRIVATE)
    show_rejected.change(_keyed(ui.handlers.rerender), show_rejected, output, **PRIVATE)
    export_json.click(_keyed(_offer(ui.handlers.export_json)), None, [download, ui.status], api_name="export_json")
    export_charts.click(_keyed(_offer(ui.handlers.export_charts)), None, [download, ui.status],
                        api_name="export_charts")
    memory.click(_keyed(_offer(ui.handlers.correction_memory)), None, [download, memory_view],
                 api_name="correction_memory")
    upload.upload(_keyed(ui.handlers.upload_memory), upload, memory_view, api_name="upload_memory")


@dataclass
class WhatIfPanel:
    profile: gr.Dropdown
    cost: gr.Slider
    curve: gr.Textbox
    words: gr.Markdown
    plot: gr.Plot

    @property
    def inputs(self) -> list:
        return [self.profile, self.cost, self.curve]

    @property
    def outputs(self) -> list:
        """The words, then what is shown only where the run can be projected."""
        return [self.words, self.plot, self.profile, self.cost, self.curve]


def _what_if_panel() -> WhatIfPanel:
    """The last run's rounds on other costs (what_if.py); filled in when a run ends."""
    with gr.Accordion("What if: this run's rounds on another machine's costs (a projection)", open=False,
                      elem_id="what-if"):
        with gr.Row():
            names = profile_names()
            profile = Choice(names, value=names[0], label="costs of", elem_id="what-if-profile", scale=3)
            # A run's own c may pass the slider's end (a slow draft): the what-if reads it as it is.
            cost = OptionSlider(0.0, 2.0, value=0.1, step=0.005, label="c: a draft forward in target steps",
                                elem_id="what-if-c", scale=2)
        curve = gr.Textbox("2: 1.09, 4: 1.26, 8: 1.40, 16: 1.84", label="your own T(n)/T(1) (tokens: cost, ...)",
                           elem_id="what-if-curve")
        words = gr.Markdown(elem_id="what-if-words")
        plot = gr.Plot(elem_id="chart-what-if", show_label=False)
    return WhatIfPanel(profile, cost, curve, words, plot)


def _wire_what_if(ui: Shared, panel: WhatIfPanel) -> None:
    project = {"fn": _keyed(ui.handlers.what_if_on_page), "inputs": panel.inputs, "outputs": panel.outputs, **PRIVATE}
    panel.profile.change(_keyed(ui.handlers.what_if_profile), panel.profile, panel.cost, **PRIVATE).then(**project)
    # A c typed into the slider's box counts as it is typed (Enter alone sends nothing there).
    gr.on([panel.cost.release, panel.cost.input, panel.curve.submit], trigger_mode="always_last", **project)


def _compare_tab(ui: Shared, tab) -> gr.CheckboxGroup:
    """The Compare tab; returns its method picker (which follows the loaded family)."""
    gr.Markdown("Run the Generate tab's prompt with the same seed: sweep one option of the chosen method "
                "(e.g. tau), or put methods side by side. Every side, a target-only run first, is warmed up "
                "and then run 3 times in alternating order: speeds are medians with their range, speedups "
                "are paired with the target-only run of the same repeat. Each column is scored against the "
                "target-only run: token agreement (tokens in common once the two texts are aligned), the "
                "target's mean log-likelihood of the text (which a "
                "text repeating itself scores well on), the share of repeated word 3-grams, and a word diff.")
    with gr.Row():
        mode = gr.Radio([("sweep an option", "sweep"), ("methods side by side", "methods")], value="sweep",
                        label="compare", elem_id="compare-mode")
        option = gr.Dropdown(sweep_options(DEFAULT_METHOD), value=default_sweep(DEFAULT_METHOD),
                             label="option to sweep", info="the options of the method chosen on the left",
                             allow_custom_value=True, elem_id="compare-option")  # API callers: any method's
        values = gr.Textbox(suggested_sweep(default_sweep(DEFAULT_METHOD)), label="values", elem_id="compare-values")
        methods = MethodPicker([name for _, name in method_choices()], value=["ar", DEFAULT_METHOD],
                                   label="methods", elem_id="compare-methods", visible=False)
    start = gr.Button("Compare", variant="primary", elem_id="compare")
    expected = gr.HTML(elem_id="compare-expected")  # how long it will take, before it starts
    view = gr.HTML(elem_id="compare-view")
    ui.family_views.append(view)

    def sweep_for(method):
        chosen = default_sweep(method)
        return gr.Dropdown(choices=sweep_options(method), value=chosen), suggested_sweep(chosen)

    def show_mode(chosen):
        return (gr.update(visible=chosen == "sweep"), gr.update(visible=chosen == "sweep"),
                gr.update(visible=chosen == "methods"))

    ui.method.change(sweep_for, ui.method, [option, values], **PRIVATE)
    option.input(suggested_sweep, option, values, **PRIVATE)
    mode.change(show_mode, mode, [option, values, methods], **PRIVATE)
    inputs = [ui.prompt, ui.method, mode, option, values, methods, *ui.widgets]
    run = ui.page_and_api(start.click, ui.handlers.compare, inputs, [view], "compare")
    ui.page_only([tab.select, mode.change, option.change, values.change, methods.change],
                 ui.handlers.compare_estimate, inputs, [expected], after=run)
    return methods




def _step_tab(ui: Shared) -> None:
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
        position = Slider(0, 63, step=1, value=0, label="check (0 = first)",
                             elem_id="step-position")
    status = gr.HTML(elem_id="step-status")  # this tab's own: a round count means nothing on the others
    text = gr.HTML(elem_id="step-output")
    explanation = gr.HTML(elem_id="step-explanation")
    bars = gr.Plot(elem_id="step-bars", show_label=False)
    ui.page_and_api(step.click, ui.handlers.step, [ui.prompt, ui.method, position, *ui.widgets],
                    [status, text, explanation, bars], "step").then(
        _keyed(ui.handlers.step_checks), position, position, **PRIVATE)
    reset.click(_keyed(ui.handlers.step_reset), None, status, **PRIVATE)
    by_name = {c.name: w for c, w in zip(all_controls(), ui.widgets, strict=True)}
    teaching.click(lambda: (TEACHING["temperature"], TEACHING["draft_confidence"]), None,
                   [by_name["temperature"], by_name["draft_confidence"]], **PRIVATE).then(
        _keyed(ui.handlers.teaching_set), None, status, **PRIVATE)
    position.change(_keyed(ui.handlers.step_position), position, bars, **PRIVATE)


def _toy_tab(handlers: Handlers) -> None:
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
    one.click(_keyed(handlers.toy_step), None, [table, bars], **PRIVATE)
    many.click(_keyed(lambda key: handlers.toy_step(key, 100)), None, [table, bars], **PRIVATE)
    reset.click(_keyed(handlers.toy_reset), seed, [table, bars], **PRIVATE)
