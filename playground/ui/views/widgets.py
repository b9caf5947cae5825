"""The page's input components: Gradio's, with a bad value refused in one line by the app."""

import gradio as gr

from ..options import DEFAULT_METHOD, THRESHOLDS, finite_number, visible_options
from .error_status import toast_text


class NumberInput:
    """Refuses a value that is not a finite number in one line (gr.Error), where Gradio's own
    preprocessing would raise a TypeError that reaches a visitor only as an opaque failure."""

    def preprocess(self, payload):
        if payload is None:  # a box emptied, or "-" typed on the way to "-1": the handlers say what a run needs
            return None
        if not finite_number(payload):
            raise gr.Error(toast_text(f"{self.label} must be a number, got {payload!r}"))
        return super().preprocess(payload)


class Slider(NumberInput, gr.Slider):
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


class Number(NumberInput, gr.Number):
    pass


class Choice(gr.Dropdown):
    """A dropdown whose value reaches its handler unchecked: the handler refuses an unknown one in
    its own words, the value cut short (error_status.py). Gradio's own check echoed a 100,000-character
    method name whole, and refused the method a page sent while a Load changed the choices."""

    def preprocess(self, payload):
        return payload

    def get_block_name(self) -> str:
        return "dropdown"  # the page draws a component by its class name: Gradio's own


def component(control):
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
