"""The UI boundary: a handler's failure becomes a one-line status and a toast, never a traceback
or a broken app (toasts render HTML: every message is escaped first), and a name a visitor sent is
cut short in it; and the check of a method name that a page or an API client sent."""

import logging
import re
from html import escape

import gradio as gr

from ...errors import PlaygroundError
from ...methods import METHODS
from . import render

log = logging.getLogger(__name__)
MAX_WORD_CHARS = 120  # a hub id (96 characters at most) or a path shows whole
MAX_MESSAGE_CHARS = 1000
LONG_WORD = re.compile(r"\S{%d,}" % (MAX_WORD_CHARS + 1))


def error_status(error: Exception) -> str:
    """The status line for a failed handler (also shown as a toast); an unexpected error is logged."""
    message = str(error) if isinstance(error, PlaygroundError) else f"{type(error).__name__}: {error}"
    if not isinstance(error, PlaygroundError):
        log.exception("unexpected error in a UI handler")
    gr.Warning(toast_text(message))
    return render.status_html(shortened(message), "error")


def toast_text(message: str) -> str:
    """A message for gr.Warning, gr.Info or gr.Error, which render it as HTML: escaped, so markup
    in it (an uploaded file's field, a value an API client sent) shows as text; shortened."""
    return escape(shortened(message))


def shortened(message: str) -> str:
    """`message` with each run of over MAX_WORD_CHARS characters without a space (a name or value
    a visitor sent) cut to its start and its length; past MAX_MESSAGE_CHARS, its start and its end
    (the fix)."""
    message = LONG_WORD.sub(lambda long: f"{long[0][:MAX_WORD_CHARS]}... ({len(long[0]):,} characters)", message)
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    half = MAX_MESSAGE_CHARS // 2
    return f"{message[:half]} ... ({len(message):,} characters) ... {message[-half:]}"


def check_method(name) -> None:
    if not isinstance(name, str) or name not in METHODS:
        raise PlaygroundError(f"unknown method {name!r}: choose one of {', '.join(METHODS)}")
