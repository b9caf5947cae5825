"""Share a setting: a link that reopens the same family, prompt, method, options and seed.

The link is the page's address with query parameters (Gradio hands them to `demo.load` in
gr.Request): `family` (a preset's name), `method`, `prompt`, each option the method reads, by
its name (`tau=0.3`, `lambda=6`, `seed=7`), and `show_rejected=true` where the page showed the
rejected drafts. Opening it fills the controls; what the link gets
wrong is named in one line and that control keeps its default. A family this machine does not
have is named, not fetched: the visitor decides to press Load.
"""

import logging
from dataclasses import dataclass, field
from urllib.parse import urlencode

import gradio as gr

from ...deploy.limits import current_limits
from ...errors import PlaygroundError
from ...methods import METHODS
from ...models.loading import available_offline
from ..options import DEFAULT_DIVERGENCE, all_controls, coerce, options_from_values
from ..views import render
from ..views.error_status import shortened
from .wiring import PRIVATE

log = logging.getLogger(__name__)
TRUE, FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
# The server answers a request whose first line and headers pass 64 KiB with a bare error (a path
# of 65,510 characters did, with 60 bytes of headers); a browser adds a few KB of headers.
MAX_LINK_CHARS = 60_000


def parameter(control) -> str:
    """A control's name in a link: the config field's, without Python's trailing underscore."""
    return control.name.rstrip("_")


@dataclass(frozen=True)
class Setting:
    """What a link asks for; None where it names nothing (the page's default stays)."""

    family: str | None = None
    method: str | None = None
    prompt: str | None = None
    values: dict = field(default_factory=dict)  # control name -> value, as the config field's type
    problems: tuple = ()  # one phrase per refused parameter
    show_rejected: bool | None = None  # whether the page shows the rejected drafts


def link_query(family: str | None, method: str, prompt: str | None, values, show_rejected: bool = False) -> str:
    """The query string of a setting: the family, method, prompt (None: left out) and every option
    the method reads (defaults too, so a later change of a default does not change the scenario).
    `values` are the controls' values in all_controls order; a bad one is refused in one line."""
    options = options_from_values(method, values)
    params = {"family": family} if family else {}
    params |= {"method": method} | ({"prompt": prompt} if prompt is not None else {})
    params |= {parameter(c): _text(options[c.name]) for c in all_controls() if c.name in options}
    params |= {"show_rejected": "true"} if show_rejected else {}
    return "?" + urlencode(params)


def shareable_link(page: str, family: str | None, method: str, prompt: str, values,
                   show_rejected: bool = False) -> tuple[str, str]:
    """The link to a setting from `page`, and a note when the prompt had to be left out to keep it
    under MAX_LINK_CHARS (a long prompt of CJK text is nine characters a character in a link)."""
    link = page + link_query(family, method, prompt, values, show_rejected)
    if len(link) <= MAX_LINK_CHARS:
        return link, ""
    shorter = page + link_query(family, method, None, values, show_rejected)
    if len(shorter) > MAX_LINK_CHARS:
        raise PlaygroundError(f"this page's address is too long to share ({len(page)} characters)")
    return shorter, (f"the prompt is left out (with it the link would be {len(link)} characters, over the "
                     f"{MAX_LINK_CHARS} a link may have): paste it in after opening the link")


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def parse_query(query: dict, presets: list) -> Setting:
    """The setting a link's query parameters ask for. Each bad or unknown parameter is left out
    and named in `problems`; Gradio's own parameters (`__theme`, ...) are not ours to judge."""
    query = {key: value for key, value in query.items() if not key.startswith("__")}
    problems = []
    family = query.pop("family", None)
    names = [p.name for p in presets]
    if family is not None and family not in names:
        problems.append(f"unknown family {family!r} (known: {', '.join(names)})")
        family = None
    method = query.pop("method", None)
    if method is not None and method not in METHODS:
        problems.append(f"unknown method {method!r} (known: {', '.join(METHODS)})")
        method = None
    show_rejected = query.pop("show_rejected", None)
    if show_rejected is not None:
        if show_rejected.lower() not in TRUE + FALSE:
            problems.append(f"show_rejected must be true or false, got {show_rejected!r}")
        show_rejected = show_rejected.lower() in TRUE if show_rejected.lower() in TRUE + FALSE else None
    prompt = query.pop("prompt", None)
    if prompt is not None and len(prompt) > current_limits().max_prompt_chars:
        problems.append(f"prompt of {len(prompt)} characters, over the limit of {current_limits().max_prompt_chars}")
        prompt = None
    controls = {parameter(c): c for c in all_controls()}
    unknown = [name for name in query if name not in controls]
    if unknown:
        problems.append(f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}")
    divergence = _divergence(query.get("divergence"), family or names[0], method, presets)
    values = {}
    for name, text in query.items():
        if name in controls:
            try:
                values[controls[name].name] = coerce(controls[name], _typed(controls[name], text), divergence)
            except PlaygroundError as error:
                problems.append(str(error))
    return Setting(family, method, prompt, values, tuple(problems), show_rejected)



def _divergence(named, family: str, method: str | None, presets: list) -> str:
    """The divergence whose scale a link's thresholds are checked on: the link's, else the
    family's default for the method."""
    divergence = next(c for c in all_controls() if c.name == "divergence")
    if named in divergence.choices:
        return named
    preset = next(p for p in presets if p.name == family)
    return preset.settings(method).get("divergence", DEFAULT_DIVERGENCE)


def _typed(control, text: str):
    """A parameter's text as what the control sends: numbers, true/false, or text."""
    if control.kind in ("slider", "number"):
        try:
            return float(text)
        except ValueError:
            raise PlaygroundError(f"{control.label} must be a number, got {text!r}") from None
    if control.kind == "checkbox":
        if text.lower() not in TRUE + FALSE:
            raise PlaygroundError(f"{control.label} must be true or false, got {text!r}")
        return text.lower() in TRUE
    return text


def linked_values(session, preset) -> dict:
    """The opened link's option values, which count as the defaults of its family (for every
    method) until another family is loaded (FamilyPanel.load forgets the link then)."""
    link = session.link
    if link is None or (session.specs and (preset is None or preset.name != link.family)):
        return {}
    return link.values


class Sharing:
    """Opening a link (demo.load) and making one (the Share button); `handlers` is the app's
    Handlers. `available(spec)` says whether a model loads without the network."""

    def __init__(self, handlers, available=available_offline):
        self.handlers, self.available = handlers, available

    def open(self, key: str, query: dict, page_method: str) -> list:
        """Outputs: preset, target, draft, qualifier, family info, method, prompt, status, show
        rejected drafts, then the method's controls and its description (as method_changed returns them)."""
        if all(name.startswith("__") for name in query):  # no link: the page as it is
            return [*[gr.skip()] * 9, *self.handlers.method_changed(key, page_method)]
        try:
            return self._open(key, query, page_method)
        except Exception as error:  # noqa: BLE001  (the page must open whatever the link says)
            log.exception("a share link failed to open")
            return [*[gr.skip()] * 7, render.status_html(shortened(f"this link could not be opened ({error}): the "
                                                                   "page keeps its defaults"), "error"),
                    gr.skip(), *self.handlers.method_changed(key, page_method)]

    def _open(self, key: str, query: dict, page_method: str) -> list:
        presets = self.handlers.presets
        setting = parse_query(query, presets)
        family = next(p for p in presets if p.name == (setting.family or presets[0].name))
        self.handlers.sessions.get(key).link = Setting(family.name, setting.method, setting.prompt, setting.values,
                                                       setting.problems)
        family_outputs, method, notes = [gr.skip()] * 5, setting.method or page_method, []
        dropdown = method if setting.method else gr.skip()
        if family is not presets[0]:
            family_outputs, dropdown, method, notes = self._family(key, family, method)
        return [*family_outputs, dropdown, setting.prompt if setting.prompt is not None else gr.skip(),
                self._status(setting, family.name, notes),
                setting.show_rejected if setting.show_rejected is not None else gr.skip(),
                *self.handlers.method_changed(key, method)]

    def _family(self, key: str, family, method: str):
        """Load the link's family if this machine has it; else fill its names in and say so.
        Returns (preset, target, draft, qualifier, family info), the method dropdown, the method
        chosen, and what to tell the visitor."""
        names = [family.name, family.target, family.draft, family.qualifier]
        missing = [spec for spec in family.specs().values() if spec and not self.available(spec)]
        if missing:
            return [*names, gr.skip()], method, method, [
                f"family {family.name} is not on this machine ({', '.join(missing)}): press Load to fetch and load it "
                f"(until then runs use {self.handlers.presets[0].name})"]
        _, info, dropdown = self.handlers.load(key, family.target, family.draft, family.qualifier, method)
        if not isinstance(dropdown, gr.Dropdown):
            return [*names, gr.skip()], method, method, [f"family {family.name} did not load: press Load to retry"]
        usable = [name for _, name in dropdown.choices]
        chosen = next(name for name in (method, family.default_method, *usable) if name in usable)
        cannot = [] if chosen == method else [f"{family.name} cannot run {method}: {chosen} instead"]
        notes = [f"loaded {family.name}", *cannot]
        return [*names, info], gr.Dropdown(choices=dropdown.choices, value=chosen), chosen, notes

    @staticmethod
    def _status(setting: Setting, family: str, notes: list) -> str:
        """One line: what the link got wrong (its defaults kept), else that it opened; then the notes."""
        tail = "".join(f"; {note}" for note in notes)
        if setting.problems:
            return render.status_html(shortened(f"this link's {'; '.join(setting.problems)}: kept the defaults for "
                                                f"those{tail}"), "error")
        return render.status_html(f"opened a shared setting: family {family}{tail}")

    def link(self, key: str, page: str, prompt: str, method: str, *values, show_rejected: bool = False):
        """The link to the current controls on `page` (the address the browser shows, without
        its query). Returns (link box, status)."""
        session, presets = self.handlers.sessions.get(key), self.handlers.presets
        family = session.preset.name if session.preset else None if session.specs else presets[0].name
        try:
            if not isinstance(method, str) or method not in METHODS:
                raise PlaygroundError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
            link, left_out = shareable_link(page if isinstance(page, str) else "", family, method,
                                            prompt if isinstance(prompt, str) else "", values,
                                            show_rejected is True)
        except PlaygroundError as error:
            return gr.skip(), render.status_html(shortened(str(error)), "error")
        notes = [] if family else ["the loaded family is not a preset, so the link opens the default family"]
        notes += [left_out] if left_out else []
        return gr.update(value=link, visible=True), \
            render.status_html("link to this setting below" + "".join(f"; {note}" for note in notes))


def panel():
    """The Share button and the link box, in the sidebar (wired by `wire`)."""
    button = gr.Button("Share this setting (a link)", size="sm", elem_id="share")
    box = gr.Textbox(label="link to this family, prompt, method, options and seed", buttons=["copy"],
                     interactive=False, visible=False, elem_id="share-link")
    return button, box


def wire(demo, button, box, handlers, family_controls: list, method, ui, about) -> None:
    """Open a link as the page loads; make one on the button. `family_controls` are the preset
    dropdown, the target, draft and qualifier boxes and the family description; `ui` is layout's
    Shared (the prompt, the controls, the status and the page's list of the run's controls)."""
    sharing = Sharing(handlers)

    def on_open(request: gr.Request, page_method):
        return sharing.open(request.session_hash, dict(request.query_params), page_method)

    def on_link(request: gr.Request, page, settings):
        prompt_text, chosen, show_rejected, *values = settings
        return sharing.link(request.session_hash, page, prompt_text, chosen, *values, show_rejected=show_rejected)

    demo.load(on_open, method, [*family_controls, method, ui.prompt, ui.status, ui.show_rejected, *ui.widgets, about],
              **PRIVATE)
    # The page's own address (a Space's proxy hides it from the server) goes in as the first input;
    # the controls come as the page's one list of them (layout.py says why).
    button.click(on_link, [box, ui.settings], [box, ui.status],
                 js="(box, ...rest) => [window.location.origin + window.location.pathname, ...rest]", **PRIVATE)
