"""Export files are kept per session, the newest few only, and go when the session goes."""

import json
from pathlib import Path

import pytest

from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.options import all_controls
from playground.ui.sharing.downloads import KEPT_PER_SESSION


@pytest.fixture
def handlers(family):
    by_spec = {m.spec: m for m in family.values()}
    return Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier")])


def generate(handlers, key: str, method: str = "sd") -> None:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 6, "temperature": 1.0}
    list(handlers.generate(key, "hello there", method, False, *[chosen[c.name] for c in all_controls()]))


def test_repeated_exports_keep_only_the_newest_few(handlers):
    generate(handlers, "k")
    paths = [Path(handlers.export_json("k")[0]) for _ in range(3 * KEPT_PER_SESSION)]
    paths.append(Path(handlers.export_charts("k")[0]))
    kept = [path for path in paths if path.exists()]
    assert kept == paths[-KEPT_PER_SESSION:]
    assert json.loads(paths[-2].read_text())["method"] == "sd" and paths[-1].name == "run.html"
    assert len({path.parent.parent for path in paths}) == 1  # one folder for the session
    handlers.sessions.drop("k")


def test_a_sessions_downloads_go_with_it_and_no_one_elses(handlers):
    generate(handlers, "alice", method="csd")
    generate(handlers, "bob")
    alice = [Path(handlers.export_json("alice")[0]), Path(handlers.correction_memory("alice")[0])]
    bob = Path(handlers.export_json("bob")[0])
    handlers.sessions.drop("alice")
    assert not any(path.exists() for path in alice) and not alice[0].parent.parent.exists()
    assert bob.exists()
    handlers.sessions.drop("bob")
    assert not bob.exists()
