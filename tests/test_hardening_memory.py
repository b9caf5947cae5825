"""An uploaded correction memory is checked whole before it is stored: each hostile file gets one
clear line, and the visitor's memory stays as it was."""

import json
from html import unescape

import pytest

from playground.errors import PlaygroundError
from playground.methods.correction_memory import FORMAT, VERSION, CorrectionMemory, load_memory
from playground.models.presets import Preset
from playground.ui.handlers import Handlers

PAIR = ("tiny-target", "tiny-draft")


@pytest.fixture
def handlers(family, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    by_spec = {m.spec: m for m in family.values()}
    return Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier")])


def memory_text(pairs_text: str) -> str:
    return (f'{{"format": "{FORMAT}", "version": {VERSION}, "target": "{PAIR[0]}", "draft": "{PAIR[1]}", '
            f'"pairs": {pairs_text}}}')


HOSTILE = {
    "deeply nested": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "a 5,000-digit count": (memory_text("[[3, 4, " + "9" * 5000 + "]]"), "a number too long to read"),
    "token id 2**40": (memory_text(f"[[{2**40}, 4, 1]]"), "names a token outside the models' 35 tokens"),
    "a count past 64 bits": (memory_text(f"[[3, 4, {2**64}]]"), "positive count up to 2**63 - 1"),
    "markup for a target": (json.dumps({"format": FORMAT, "version": VERSION, "target": "<img src=x onerror=alert(1)>",
                                        "draft": PAIR[1], "pairs": []}), "calibrated for target"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_upload_gets_one_line_and_the_previous_memory_stays(handlers, tmp_path, name):
    text, needle = HOSTILE[name]
    good, hostile = tmp_path / "good.json", tmp_path / "hostile.json"
    CorrectionMemory(*PAIR, {(3, 4): 7}).save(good)
    hostile.write_text(text)
    assert "7 rejections" in handlers.upload_memory("alice", str(good))
    with pytest.warns(UserWarning) as toast:
        status = handlers.upload_memory("alice", str(hostile))
    assert needle in unescape(status) and "status-error" in status and "\n" not in status and len(status) < 500
    assert "<img" not in status and "<img" not in str(toast[0].message)
    assert handlers.sessions.get("alice").memories[PAIR].count(3, 4) == 7
    path, view = handlers.correction_memory("alice")  # the memory button keeps working
    assert path and "7 rejections" in view


def test_a_memory_naming_a_token_outside_the_vocabulary_is_refused_when_the_vocabulary_is_given(tmp_path):
    path = tmp_path / "memory.json"
    CorrectionMemory(*PAIR, {(3, 40): 1}).save(path)
    assert load_memory(path, *PAIR).count(3, 40) == 1  # the CLI's reading, with no tokenizer at hand
    assert load_memory(path, *PAIR, vocabulary=41).count(3, 40) == 1
    with pytest.raises(PlaygroundError, match=r"pair \[3, 40, 1\] names a token outside the models' 40 tokens"):
        load_memory(path, *PAIR, vocabulary=40)


def test_a_long_target_name_is_refused_not_quoted_back(tmp_path):
    path = tmp_path / "memory.json"
    path.write_text(json.dumps({"format": FORMAT, "version": VERSION, "target": "x" * 1_000_000, "draft": PAIR[1],
                                "pairs": []}))
    with pytest.raises(PlaygroundError, match="must be the model specs it was built for") as refused:
        load_memory(path, *PAIR)
    assert len(str(refused.value)) < 300
