"""The UI boundary: a handler's failure becomes a one-line status and a toast, never a traceback
or a broken app (toasts render HTML: every message is escaped first); and the check of a method
name that a page or an API client sent."""

import logging
from html import escape

import gradio as gr

from ..errors import PlaygroundError
from ..methods import METHODS
from . import render

log = logging.getLogger(__name__)


def error_status(error: Exception) -> str:
    """The status line for a failed handler (also shown as a toast); an unexpected error is logged."""
    message = str(error) if isinstance(error, PlaygroundError) else f"{type(error).__name__}: {error}"
    if not isinstance(error, PlaygroundError):
        log.exception("unexpected error in a UI handler")
    gr.Warning(toast_text(message))
    return render.status_html(message, "error")


def toast_text(message: str) -> str:
    """A message for gr.Warning, gr.Info or gr.Error, which render it as HTML: escaped, so markup
    in it (an uploaded file's field, a value an API client sent) shows as text."""
    return escape(message)


def check_method(name) -> None:
    if not isinstance(name, str) or name not in METHODS:
        raise PlaygroundError(f"unknown method {name!r}: choose one of {', '.join(METHODS)}")
