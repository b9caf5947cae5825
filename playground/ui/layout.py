"""The playground's page, assembled: the sidebar, the tabs (each built by its own module in
tabs/, beside its handlers), and what the whole app sets on Gradio's queue and session.

Handlers live in handlers.py and take a session key first; `keyed` (tabs/wiring.py) turns Gradio's
request into that key (its session hash, carrying the visitor's address: visitors.py).
`build_demo(loader=..., presets=...)` lets tests run the whole app on tiny models.
"""

import json
from functools import partial
from pathlib import Path

import gradio as gr

from ..deploy.limits import current_limits
from ..models.policy import public_mode
from .handlers import Handlers
from .options import THRESHOLDS, all_controls
from .sharing import disk
from .sharing.queue_cap import cap_events_per_visitor
from .sharing.route_limits import GuardedBlocks
from .sharing.server_settings import queue_settings
from .tabs import compare, family_panel, generate, race, share, step_mode
from .tabs.controls import checked_as_typed, checked_value
from .tabs.wiring import FROM_PAGE, PRIVATE, Shared, covered_line_js, keyed
from .views.render import status_html
from .views.widgets import component

ASSETS = Path(__file__).resolve().parents[2] / "assets"
CSS_PATH = ASSETS / "ui.css"
# The events whose outputs show Gradio's progress while a user waits on them; every other event
# shows it on an invisible state. Gradio's page revisits every component that has ever shown an
# event's progress at each status message of any event, and a streamed run sends one per update:
# with the option controls (the method's change) and the charts among them, each update of a
# run cost the page work for 30 components (bench/results/browser_speed/README.md).
# Compare and Race tell their own progress and time left: Gradio's "processing | 0.5/33.3s", its
# average of past runs, contradicted the tab's estimate as a sweep started.
SHOWS_PROGRESS = {"load", "unload", "step", "export_json", "export_charts", "correction_memory", "upload_memory"}
RUNS = ("generate", "compare", "step", "race")  # a visitor may hold fewer of these at once than of other events
GRADIO_THREADS = 40  # Gradio's (starlette's) default pool for handlers, besides the runs waiting in line
HEARTBEAT_SECONDS = 60


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
                method, loads, family = family_panel.build_panel(handlers, status)
                about = gr.Markdown(elem_id="method-about")
                note = gr.HTML(elem_id="option-note")  # a value outside its range, named with the range
                widgets = [component(c) for c in all_controls()]
            with gr.Column(scale=3):
                shared = Shared(handlers, method, widgets, status, about, note, family_info=family[-1])
                with gr.Tabs(elem_id="tabs"):
                    with gr.Tab("Generate", id="generate-tab") as generate_tab:
                        generate.build_tab(shared)
                    with gr.Tab("Compare", id="compare-tab") as compare_tab:
                        compare_methods = compare.build_tab(shared, compare_tab)
                    with gr.Tab("Step mode", id="step-tab") as step_tab:
                        step_mode.build_tab(shared)
                    with gr.Tab("Race", id="race-tab") as race_tab:
                        race_methods = race.build_tab(shared, race_tab)
                    with gr.Tab("Toy: seed-001 example", id="toy-tab") as toy_tab:
                        step_mode.build_toy_tab(handlers)
        for tab in (generate_tab, compare_tab, step_tab, race_tab, toy_tab):
            shown = tab is generate_tab
            tab.select(keyed(lambda key, shown=shown: handlers.show_generate(key, shown)), None, None, **PRIVATE)
            _timers_on_their_tab(tab, shared.estimate_timers)
        on_method = keyed(handlers.method_changed)
        method.change(on_method, method, [*widgets, about], **PRIVATE)
        _wire_thresholds(handlers, widgets)
        _wire_checks(widgets, note, status)
        method_lists = [compare_methods, race_methods]
        views = shared.family_views
        for loading in loads:
            loading.then(on_method, method, [*widgets, about], **PRIVATE)  # the new preset's defaults
            loading.then(keyed(lambda key: handlers.family.cleared_views(key, len(views))), None, views,
                         **PRIVATE).then(keyed(handlers.what_if_on_page), shared.what_if.inputs,
                                         shared.what_if.outputs, **PRIVATE)
            loading.then(keyed(handlers.family.method_lists), method_lists, method_lists, **PRIVATE)
        share.wire(demo, share_button, share_box, handlers, family, method, shared, about)
        _progress_only_where_users_wait(demo)
        _session_lifetime(demo, handlers)
    run_names = {name + suffix for name in RUNS for suffix in ("", FROM_PAGE)}
    _runs_wait_in_the_apps_line(demo, run_names)
    cap_events_per_visitor(demo, run_names)
    return demo


def _timers_on_their_tab(tab, timers: list) -> None:
    """As `tab` is chosen, the timers of its own estimate tick and every other tab's stop."""
    tab.select(lambda: [gr.Timer(active=owner is tab) for owner, _ in timers], None, [t for _, t in timers],
               **PRIVATE)


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
    demo.unload(keyed(handlers.sessions.drop))
    if public_mode():
        gr.Timer(HEARTBEAT_SECONDS).tick(keyed(handlers.sessions.touch), None, None, concurrency_limit=None,
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
    by_name["divergence"].change(keyed(handlers.divergence_changed), [by_name["divergence"], *sliders], sliders,
                                 **PRIVATE)


def value_refusal_gone_js(name: str) -> str:
    """The status's refusal of control `name` ("seed must be ..."), once the note says nothing of it.
    Otherwise it returns nothing, which Gradio takes as no update: writing the status back as read
    could put a stale line over a run's newer one."""
    refused = json.dumps(f'status-error">{name} must')
    fixed = covered_line_js(status_html(f"{name} is in range now: press Generate to run with it"))
    return (f"(note, status) => String(status).includes({refused}) && !String(note).includes('data-option=\"{name}\"')"
            f" ? {fixed} : undefined")


_CHECK = {"concurrency_limit": None, "show_progress": "hidden", **PRIVATE}


def _wire_checks(widgets: list, note, status) -> None:
    """Every number the sidebar takes is checked as it is typed or dragged (controls.py's
    checked_value): a value outside its range is named with the range at once, not run silently
    at the nearest end of the slider. A run's refusal of the value in the status goes once the
    value is good (a reviewer's seed -5 refusal stood after the seed was 0)."""
    by_name = {c.name: w for c, w in zip(all_controls(), widgets, strict=True)}
    for control, widget in zip(all_controls(), widgets, strict=True):
        if control.kind not in ("slider", "number") and not control.takes_inf:
            continue
        checks = [by_name["divergence"], note]
        widget.input(partial(checked_value, name=control.name), [widget, *checks], note, trigger_mode="always_last",
                     **_CHECK).then(None, [note, status], status, js=value_refusal_gone_js(control.name), **PRIVATE)
        if control.kind == "slider":
            # A value typed and left at once reaches the server only as the slider's end it was moved
            # to; the slider's release, sent as the box is left, carries it as typed. Every release:
            # the click into the box sends one too, and by default a second waiting for it was dropped.
            widget.release(checked_as_typed(control.name), checks, note, trigger_mode="multiple", **_CHECK)
