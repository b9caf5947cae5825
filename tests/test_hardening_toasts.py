"""Toasts render their message as HTML: markup in a message reaches the page as text."""

from html import unescape

import pytest

from playground.errors import PlaygroundError
from playground.ui.boundary import error_status, toast_text

MARKUP = '<img src=x onerror=alert(1)>'


def toast_of(error: Exception) -> tuple[str, str]:
    """(the toast's message, the status line) for a failed handler; outside a request Gradio gives
    a toast's message to `warnings`."""
    with pytest.warns(UserWarning) as caught:
        status = error_status(error)
    return str(caught[0].message), status


@pytest.mark.parametrize("error", [PlaygroundError(f"correction memory was built for {MARKUP}"),
                                   ValueError(MARKUP)])
def test_a_failed_handlers_toast_shows_markup_as_text(error):
    toast, status = toast_of(error)
    assert "<img" not in toast and "&lt;img src=x onerror=alert(1)&gt;" in toast
    assert "<img" not in status


def test_a_message_reads_the_same_once_rendered():
    message = "prompt is 2000 tokens, over this deployment's limit of 1024 tokens: shorten it (x < y & z)"
    assert unescape(toast_text(message)) == message
