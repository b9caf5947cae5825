"""How a tab wires its events: every handler takes the visitor's session key first (`keyed`), and
the run's controls reach it as the page's one list (`Shared.page_and_api`)."""

import inspect
import json
from dataclasses import dataclass, field

import gradio as gr

from ..sharing import eta
from ..sharing.visitors import session_key
from ..views.render import status_html

PRIVATE = {"api_visibility": "private"}
SNAPSHOT_JS = "(...values) => [values]"  # the run's controls -> the page's one list of their values
# The run's controls -> their values as JSON text once they have stood 0.3 s, where they differ from the
# text last written; else no update. The estimates follow this text, not the page's list: Gradio
# re-sets a JSON input of every event as the event reports, which fires its change although the list
# is the same, and the estimates, inputs of it themselves, fired each other 56-185 times a method
# switch (on a busy page, 10-18 a second for 150 s).
SETTLED_TEXT_JS = """async (...values) => {
    const text = JSON.stringify(values);
    const mine = window.playgroundSettling = (window.playgroundSettling || 0) + 1;
    await new Promise((done) => setTimeout(done, 300));
    if (mine !== window.playgroundSettling || text === window.playgroundSettled) return undefined;
    window.playgroundSettled = text;
    return text;
}"""
BEFORE_RUN = "statusBeforeRun"  # the page's variable for the sidebar line a Generate click replaced


def covered_line_js(fallback: str) -> str:
    """A JS expression: the sidebar line the last Generate click replaced where it was a run's or a
    Load's end (a refusal gone gives it back: a reviewer's "done: ..." had given way to "seed is in
    range now"), else the HTML `fallback`."""
    line = f"window.{BEFORE_RUN}"
    return (f"({line} && String({line}).includes('status-info') && !/starting…|generating…|waiting/.test("
            f"String({line})) ? {line} : {json.dumps(fallback)})")


# (prompt, status) -> the line the refused run covered, once the prompt has text again; no update
# otherwise. A refusal of an empty prompt stood after the prompt was typed (over a Compare that then
# ran), and after an example put the prompt back.
PROMPT_REFUSAL_GONE_JS = ("(prompt, now) => String(now).includes('status-error') && String(now).includes("
                          "'empty prompt') && String(prompt).trim() ? " +
                          covered_line_js(status_html("the prompt has text again: press Generate to run it")) +
                          " : undefined")
# Said by the page itself as Generate is pressed: on a busy machine the last run's "done: ..." (or a
# Load's "loaded ...") stood for 6-10 s after the click, until the server's first word came.
STARTING_HTML = '<div class="status status-info">starting…</div>'
STARTING_JS = f"() => {json.dumps(STARTING_HTML)}"
GENERATE_STARTING_JS = f"(now) => {{ window.{BEFORE_RUN} = now; return {json.dumps(STARTING_HTML)}; }}"
PICKED_JS = """(name) => '<div class="status status-info">preset ' + String(name).replace(/[&<>]/g, '') +
    ': loading its family…</div>'"""  # as a preset is picked, likewise
FROM_PAGE = "_from_page"  # the API name of an API event's twin for the page (Shared.page_and_api)
COVERED = "statusBeforeTab"  # the page's variable for the sidebar line a tab's pointer covered


def pointed_html(tab: str, what: str) -> str:
    """The sidebar's status while `tab` runs `what`."""
    return status_html(f"{tab}: {what} on its tab (the Generate tab keeps its last run)")


def tab_ended_js(tab: str, said: str) -> str:
    """(status now, the tab's view) -> the sidebar's status as the tab's run ends: it ran, or the
    reason it did not (the view's refusal alone, not the results it keeps under it); nothing (no
    update) if the status is no longer `said`."""
    ended = json.dumps(status_html(f"{tab} has ended: its results are on its tab"))
    refused = json.dumps(f"{tab} did not run: ")  # then the reason its tab shows, as text
    return f"""(now, shown) => {{
        if (now !== {json.dumps(said)}) return undefined;
        if (!String(shown).includes('status-error')) return {ended};
        const reason = document.createElement('div');
        reason.innerHTML = shown;
        const line = document.createElement('div');
        line.className = 'status status-error';
        line.textContent = {refused} + reason.querySelector('.status-error').textContent.trim();
        return line.outerHTML;
    }}"""


# (estimate, view) -> '' where both show a refusal, else no update: the view's says it on the tab.
SAID_ONCE_JS = ("(estimate, view) => String(estimate).includes('status-error') && "
                "String(view).includes('status-error') ? '' : undefined")


def refusal_gone_js(tab: str) -> str:
    """(status now) -> the sidebar's status once `tab`'s settings change after it did not run: the
    refusal goes (a reviewer's stood after the values were fixed), and the line it covered comes
    back (a reviewer's Generate "done: ..." had given way for good); nothing (no update) otherwise."""
    refused = json.dumps(f"{tab} did not run: ")
    changed = json.dumps(status_html(f"{tab}'s settings changed since it did not run: start it again on its tab"))
    # Not another tab's line, which would say that tab's run again.
    tab_line = "/on its tab|did not run|has ended/.test(String(window.%s))" % COVERED
    return (f"(now) => !String(now).includes({refused}) ? undefined : "
            f"(window.{COVERED} && !{tab_line} ? window.{COVERED} : {changed})")


def keyed(handler):
    """A Gradio callback calling `handler(session_key, *inputs)`; generators stay generators."""
    if inspect.isgeneratorfunction(handler):
        def callback(request: gr.Request, *inputs):
            yield from handler(session_key(request), *inputs)
    else:
        def callback(request: gr.Request, *inputs):
            return handler(session_key(request), *inputs)
    return callback


def offer(handler):
    """Show the download box only when the handler produced a file (path, other) -> (File, other)."""
    def offer(key):
        path, other = handler(key)
        return gr.File(value=path, visible=path is not None), other
    return offer


def reading_list(handler, inputs: list, listed: list) -> tuple:
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

    handlers: object  # the app's Handlers (ui/handlers.py, above the tabs)
    method: gr.Dropdown
    widgets: list
    status: gr.HTML
    about: gr.Markdown  # the chosen method's note: what it is, and what choosing it set
    option_note: gr.HTML  # a value typed outside its range, named with the range (until a run starts)
    prompt: gr.Textbox = None
    show_rejected: gr.Checkbox = None
    # The run's controls (prompt, method, show rejected, options) and the page's one list of
    # their values, which a browser-only event keeps equal to them (see `page_and_api`).
    run_inputs: list = None
    settings: gr.JSON = None
    settled: gr.Textbox = None  # the same values as JSON text, once they have stood (see SETTLED_TEXT_JS)
    family_views: list = None  # what shows a run's answer: emptied when a Load changes the family
    what_if: object = None  # the what-if panel (what_if_panel.py): it tells again after such a Load
    family_info: gr.Markdown = None  # the family panel's description of the loaded models
    estimate_timers: list = field(default_factory=list)  # (tab, its timer): see `estimate_again_while_shown`

    def estimate_again_while_shown(self, tab) -> gr.Timer:
        """A timer that ticks every eta.BARE_STEP_AGAIN s while `tab` is the one shown, to tell its
        estimate again (the layout turns it on and off as tabs are chosen): beside two burners
        started with Compare open, its line kept a quiet machine's "about 25 s" for 32 s."""
        timer = gr.Timer(eta.BARE_STEP_AGAIN, active=False)
        self.estimate_timers.append((tab, timer))
        return timer

    def point_to_tab(self, trigger, tab: str, what: str, run=None, view=None) -> None:
        """As `trigger` fires, the sidebar's status says that `what` is on tab `tab`: that tab tells
        its own progress, and the last Generate's "done: ..." stood in the sidebar beside it. When
        `run` (the tab's event, showing in `view`) ends, the status says whether it ran or was
        refused, unless something else wrote it since: then it returns nothing, which Gradio takes
        as no update (written back as read, a line could cover a newer one)."""
        said = pointed_html(tab, what)
        # The line it covers comes back if the tab's refusal goes (refusal_gone_js).
        trigger(None, self.status, self.status, js=f"(now) => {{ window.{COVERED} = now; return {json.dumps(said)}; }}",
                **PRIVATE)
        if view is not None:  # the tab says its run starts at once, in place of Gradio's progress and its own estimate
            trigger(None, None, view, js=STARTING_JS, **PRIVATE)
        if run is not None:
            run.then(None, [self.status, view], self.status, js=tab_ended_js(tab, said), **PRIVATE)

    def clear_refusal_on(self, triggers: list, tab: str) -> None:
        """As `triggers` (changes of `tab`'s settings) fire, the sidebar's "`tab` did not run: ..." goes."""
        gr.on(triggers, None, self.status, self.status, js=refusal_gone_js(tab), **PRIVATE)

    def page_and_api(self, trigger, handler, inputs: list, outputs: list, api_name: str, trigger_mode=None,
                     page_handler=None, **options):
        """Wire `handler(key, *values of inputs)` for API callers as `api_name` (a hidden button,
        every input its own argument), and for the page on `trigger`, where the run's controls
        among `inputs` come as the page's one list. Gradio's page revisits every input of an ended
        event at each status message of any later event, and a streamed run sends one per update:
        21 controls as inputs of any page event made every later run's view cost 21 snapshots
        per update (bench/results/README.md, "The page vs the CLI"). The list is taken again as the
        event starts: a control's own change may not have reached it yet (a method chosen just
        before Generate ran the one chosen before it). `trigger_mode`: the trigger's (Gradio's
        default drops a click while the last one's event runs); `page_handler`: the page's own, where
        it differs. Returns the page's event."""
        gr.Button(visible=False).click(keyed(handler), inputs, outputs, api_name=api_name, **options)
        reading, others = reading_list(page_handler or handler, inputs, self.run_inputs)
        snapshot = trigger(None, self.run_inputs, self.settings, js=SNAPSHOT_JS, trigger_mode=trigger_mode, **PRIVATE)
        run = snapshot.then(keyed(reading), [self.settings, *others], outputs, api_name=api_name + FROM_PAGE,
                            api_visibility="private", trigger_mode=trigger_mode, **options)
        run.then(keyed(self.handlers.family.described_after_run), None, self.family_info, **PRIVATE)
        return run

    def page_only(self, triggers: list, handler, inputs: list, outputs: list, after=None, view=None) -> None:
        """Wire a quick `handler(key, *values of inputs)` for the page alone (an estimate, a check)
        on `triggers`, the run's controls once they have settled, and the end of the event `after`,
        reading those controls from their settled text; it never waits behind a run. Where the
        run's `view` shows its refusal, the estimate (`outputs[0]`) does not say it again (a
        reviewer counted one refusal four times)."""
        reading, others = reading_list(handler, inputs, self.run_inputs)

        def from_text(key, text, *values):
            return reading(key, json.loads(text), *values)

        wiring = {"fn": keyed(from_text), "inputs": [self.settled, *others], "outputs": outputs,
                  "concurrency_limit": None, "show_progress": "hidden", **PRIVATE}
        events = [gr.on([*triggers, self.settled.change], trigger_mode="always_last", **wiring)]
        if after is not None:
            events.append(after.then(**wiring))
        for event in events if view is not None else ():
            event.then(None, [outputs[0], view], outputs[0], js=SAID_ONCE_JS, **PRIVATE)
