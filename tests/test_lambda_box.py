"""lambda's help says "inf: never" (csd never rescues): its box takes the word inf, as a share link,
the API and the CLI do, and refuses other words in one line."""

import math

import gradio as gr
import pytest

from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.layout import build_demo
from playground.ui.options import all_controls, coerce, control

TINY = Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier")
RESCUING = {"temperature": 1.0, "seed": 1, "max_new_tokens": 40}  # rejections to rescue (test_public_app)


def values(**overrides) -> list:
    chosen = {c.name: c.default for c in all_controls()} | RESCUING | overrides
    return [chosen[c.name] for c in all_controls()]


def tokens(handlers, method: str, **overrides) -> list[tuple[int, str]]:
    """(id, origin) of each token the run wrote, as the page runs it."""
    status = list(handlers.generate("k", "hello there", method, False, *values(**overrides)))[-1][0]
    assert "done" in status, status
    return [(token.id, token.origin) for token in handlers.sessions.get("k").run.tokens]


def test_the_lambda_box_holds_the_word_its_help_names():
    lambda_ = control("lambda_")
    assert "inf: never" in lambda_.help
    box = next(b for b in build_demo(presets=[TINY]).blocks.values() if getattr(b, "elem_id", None) == "opt-lambda")
    assert isinstance(box, gr.Textbox) and box.value == "6"
    assert coerce(lambda_, "inf") == math.inf and coerce(lambda_, " 12 ") == 12.0
    with pytest.raises(ValueError, match="^lambda must be a number or inf, got 'never'$"):
        coerce(lambda_, "never")


def test_csd_at_lambda_inf_from_the_box_never_rescues(family):
    by_spec = {m.spec: m for m in family.values()}
    handlers = Handlers(loader=by_spec.__getitem__, presets=[TINY])
    assert any(origin == "rescued" for _, origin in tokens(handlers, "csd", lambda_="0")), "0: rescue at once"
    assert tokens(handlers, "csd", lambda_="inf") == tokens(handlers, "sd"), "inf: never rescue, sd token for token"
