"""The sidebar's option controls: only the chosen method's show, with the preset's values for it,
and the threshold sliders follow the chosen divergence's scale."""

from html import escape

import gradio as gr

from ...config import RunConfig, option_range
from ...errors import PlaygroundError
from ...methods import METHODS
from ...methods.draft_levers import lever_blocker
from ..options import THRESHOLDS, all_controls, coerce, control, finite_number, threshold_scale, visible_options
from ..views.error_status import toast_text
from .family_panel import FamilyPanel
from .share import linked_values

# What the page does with a value outside a slider's range once its box loses focus (Gradio's
# slider keeps the typed number in its box until then, and runs with the nearest end after).
SNAPS = "the slider moves it to the nearest end of its range when you leave the box"
REFUSED = "Generate, Compare, Race and Step mode refuse it until it is changed"


def _scale_of(name: str, divergence: str | None) -> dict:
    """A threshold slider's range and info under `divergence` (nothing for other controls)."""
    if name not in THRESHOLDS or divergence is None:
        return {}
    maximum, info = threshold_scale(name, divergence)
    return {"maximum": maximum, "info": info}


def _method_defaults(method) -> dict:
    """The fields some method sets its own default for, at the chosen method's value (its own, or
    RunConfig's): switching from fsd to sd puts sd's draft confidence back."""
    overridden = sorted({name for m in METHODS.values() for name in m.defaults})  # one order, every process
    if method is None:
        return {}
    return {name: method.defaults.get(name, getattr(RunConfig(), name)) for name in overridden}


def _listed(values: dict) -> str:
    return ", ".join(f"{name} = {value:g}" if isinstance(value, float | int) and not isinstance(value, bool)
                     else f"{name} = {value}" for name, value in values.items())


def _shown_on_switch(method, defaults: dict) -> dict:
    """The options, among those methods default differently, that `method` reads, at `defaults`."""
    switched = _method_defaults(method)
    return {name: value for name, value in defaults.items() if name in switched and name in method.reads}


def _blocked_levers(method, defaults: dict, draft) -> dict:
    """{lever: why} for the levers set in `defaults` that the loaded `draft` cannot take (slem's
    byte draft has no 8,192 most likely tokens to keep): hidden, and named with why."""
    if draft is None:
        return {}
    config = RunConfig(**{name: value for name, value in defaults.items() if name in RunConfig.__dataclass_fields__})
    return {name: why for name, value in _shown_on_switch(method, defaults).items()
            if name in method.levers and value and (why := lever_blocker(config, method, draft, name))}


def _set_on_switch(method, defaults: dict, linked: frozenset = frozenset(), blocked: dict | None = None) -> str:
    """What choosing the method set among the options methods default differently (a student
    comparing sd and fsd should know the draft changed with the rule), and whose values they are:
    the link the page opened (`linked`: the names it set), the method's own, or the shared ones.
    A lever the loaded draft cannot take (`blocked`) is named with why instead."""
    blocked = blocked or {}
    shown = {name: value for name, value in _shown_on_switch(method, defaults).items() if name not in blocked}
    whose = ("the values of the link this page opened" if linked & set(shown) else
             f"{method.name}'s own defaults" if method.defaults else "the shared defaults")
    said = f"Choosing {method.name} set {', '.join(f'{name} = {value:g}' for name, value in shown.items())} ({whose})."
    unused = " ".join(f"{name} does not apply to this draft: {why}." for name, why in blocked.items())
    return " ".join(part for part in (said if shown else "", unused) if part)


class MethodPicker(gr.CheckboxGroup):
    """Compare's and Race's method checkboxes: the handlers check the names (a method the loaded
    family cannot run is refused in one line), so a list sent while a Load changes the choices
    reaches them, where Gradio would raise its own error toast."""

    def preprocess(self, payload):
        return list(payload) if isinstance(payload, list) else payload

    def get_block_name(self) -> str:
        return "checkboxgroup"  # the page draws a component by its class name: Gradio's own


class Controls:
    def __init__(self, family: FamilyPanel):
        self.family = family

    def method_changed(self, key: str, method: str) -> list:
        """Show only the method's options; apply the preset's settings for it (the first preset's
        until a family is loaded); describe it."""
        visible, preset = visible_options(method), self.family.preset_in_use(key)
        chosen = METHODS.get(method) if isinstance(method, str) else None
        defaults = {**_method_defaults(chosen), **(preset.settings(method) if preset and chosen else {})}
        linked = linked_values(self.family.sessions.get(key), preset)
        defaults = {**defaults, **linked}
        blocked = _blocked_levers(chosen, defaults, self.family.loaded_draft(key, method)) if chosen else {}
        updates = [gr.update(visible=c.name in visible and c.name not in blocked,
                             **({"value": defaults[c.name]} if c.name in defaults else {}),
                             **_scale_of(c.name, defaults.get("divergence")))
                   for c in all_controls()]
        about = f"**{chosen.name}**: {chosen.summary} ({'lossless' if chosen.lossless else 'lossy'})" if chosen else ""
        if chosen:
            about += "\n\n" + _set_on_switch(chosen, defaults, frozenset(linked), blocked)
        preset_set = preset.settings(method) if preset and chosen else {}
        preset_set = {name: value for name, value in preset_set.items() if name not in linked}
        if preset_set:
            about += f"\n\nPreset `{preset.name}` set {_listed(preset_set)} for {chosen.name}."
        if chosen and preset and chosen.name in preset.sources:
            about += f"\n\nPreset `{preset.name}`: {preset.sources[method]}."
        return [*updates, about]

    @staticmethod
    def divergence_changed(key: str, divergence: str, *thresholds) -> list:
        """Put the threshold sliders (tau, tau_q, tau_t, in that order) on the chosen divergence's
        scale: its maximum, and an info line with its bound and log base. A value past the new
        maximum moves to it."""
        updates = []
        for name, value in zip(THRESHOLDS, thresholds, strict=True):
            scale = _scale_of(name, divergence)
            clamped = {"value": scale["maximum"]} if value is not None and value > scale["maximum"] else {}
            updates.append(gr.update(**scale, **clamped))
        return updates


def checked_value(value, divergence, note: str, *, name: str, toast: bool = True, typed: bool = False):
    """A sidebar value checked as it is typed or released: outside its range (or not a number), a
    one-line note naming the range, with a toast, within the event's round trip; a good value
    clears a note about the same control and leaves any other one. The note is marked with the
    control's name (`data-option`); a value refused again as the note already says (a slider's box
    sends its value as typed and again as it is left) keeps the note without a second toast, and
    so does the end of its range that the slider then moves it to (a reviewer typed 5, pressed Tab,
    and saw 1 with no word of the 5), unless that end was `typed` as it is (a reviewer typed 5, then
    the 0 it had been, and the note about the 5 stood)."""
    chosen = control(name)
    divergence = divergence if isinstance(divergence, str) else RunConfig().divergence
    if value is None and chosen.kind == "slider" and typed:
        return _left_without_a_number(name, divergence)
    if value is None and chosen.kind in ("number", "slider"):
        return gr.skip()  # a box emptied to type another number, or "-" on the way to a negative one
    try:
        coerce(chosen, value, divergence)
    except PlaygroundError as error:
        fate = SNAPS if _snapped(chosen, value) else REFUSED
        if typed and fate == SNAPS:  # the box is being left: the slider moves it now
            span = option_range(name, divergence)
            fate = _moved_to(span.high if float(value) > span.high else span.low)
        refused = (f'<div class="status status-error" data-option="{escape(name)}">{escape(str(error))}: '
                   f"{escape(fate)}.</div>")
        if note == refused:
            return gr.skip()
        if toast:
            gr.Warning(toast_text(f"{error}: {fate}"))
        return refused
    moved = chosen.kind == "slider" and not typed and _at_an_end(name, value, divergence)
    if f'data-option="{name}"' not in (note or ""):
        return gr.skip()
    if moved:  # walk 30: once moved, the note still said it would move it
        return note.replace(SNAPS, _moved_to(value)) if SNAPS in note else gr.skip()
    return ""


def _moved_to(end) -> str:
    return f"the slider set it to {end:g}, the nearest end of its range"


def _left_without_a_number(name: str, divergence: str) -> str:
    """The note for a slider's box left empty or holding no number ("abc" reads as empty in the
    browser's number box), which the slider then sets to its lowest value (a reviewer typed "abc"
    in max new tokens and saw 1, with no word)."""
    span = option_range(name, divergence)
    low = f"{span.low:g}" if span else "its lowest"
    within = f" from {span.low:g} to {span.high:g}" if span else ""
    return (f'<div class="status status-error" data-option="{escape(name)}">{escape(name)}: the box was left empty or '
            f"without a number, so the slider took {low}, the lowest it takes: type a number{within}.</div>")


def _snapped(chosen, value) -> bool:
    """Whether the slider moves a refused `value` into its range: a number outside it. A fraction
    in a whole-number slider stays in its box (a reviewer read "the slider moves it" beside a
    2.5 that stood and was refused)."""
    whole = not isinstance(chosen.default, int) or (finite_number(value) and float(value).is_integer())
    return chosen.kind == "slider" and finite_number(value) and whole


def checked_as_typed(name: str):
    """`checked_value` for a slider's release, whose event data is the value as typed (Gradio's
    slider sends it as its box is left, then moves the value into range). The note alone: the
    value's input, checked at the same time, toasts it (a reviewer saw two toasts)."""
    def check(divergence, note: str, event: gr.EventData):
        return checked_value(event._data, divergence, note, name=name, toast=False, typed=True)
    return check


def _at_an_end(name: str, value, divergence: str) -> bool:
    span = option_range(name, divergence)
    return span is not None and value in (span.low, span.high)
