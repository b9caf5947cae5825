"""Toasts render their message as HTML: markup in a message reaches the page as text. A name a
visitor sent is cut short in a status line and a toast."""

from html import unescape

import pytest

from playground.errors import PlaygroundError
from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.tabs.share import Sharing
from playground.ui.views.error_status import MAX_MESSAGE_CHARS, error_status, shortened, toast_text

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


def test_a_long_name_is_cut_short_in_the_status_and_the_toast(monkeypatch):
    """A 100,000-character model name, as Load and as a share link's family: the status line and
    the toast name it by its start and its length, and still say the fix."""
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")  # the name is refused before anything is looked up
    handlers = Handlers(presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier")])
    name = "x" * 100_000
    with pytest.warns(UserWarning) as toasts:
        status = handlers.load("k", name, "", "")[0]
    link_status = Sharing(handlers).open("k", {"family": name}, "sd")[7]
    for shown, fix in ((status, "choose a preset family"), (str(toasts[0].message), "choose a preset family"),
                       (link_status, "kept the defaults")):
        assert len(shown) < 500 and "x" * 100 in shown and "x... (100,002 characters)" in shown and fix in shown


def test_a_long_message_keeps_its_start_and_its_end():
    message = "model " + "a " * 50_000 + ": choose a preset family"
    short = shortened(message)
    assert len(short) < MAX_MESSAGE_CHARS + 50 and short.startswith("model a a") and short.endswith(message[-400:])
