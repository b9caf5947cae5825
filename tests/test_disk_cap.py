"""The app's files on disk stay bounded (disk.py): exports count per visitor and are small, read
uploads stay for Gradio's sweep, the upload route is limited per address, and past the total cap
exports and uploads are refused in one line. Gradio's upload folder and the downloads' root are
the test's own."""

import json
import os

import httpx
import pytest

from playground.methods.correction_memory import CorrectionMemory
from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.sharing import disk
from playground.ui.sharing.visitors import SessionKey
from playground.ui.tiny_app import launch_tiny_app

from .test_ui_handlers import PROMPT, values

VISITOR = SessionKey("s", "203.0.113.5")


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """Gradio's upload folder and the downloads' root in tmp_path, measured afresh."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    monkeypatch.setattr(disk, "DOWNLOADS_ROOT", tmp_path / "downloads")
    monkeypatch.setattr(disk, "MEASURED_FOR", 0.0)
    (tmp_path / "gradio").mkdir()
    return tmp_path


@pytest.fixture
def handlers(family, monkeypatch):
    for name, value in {"PUBLIC": "1", "RUNS_PER_MINUTE": "0", "MODEL_SECONDS_PER_MINUTE": "0"}.items():
        monkeypatch.setenv(f"PLAYGROUND_{name}", value)
    by_spec = {m.spec: m for m in family.values()}
    handlers = Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft", "")])
    list(handlers.generate(VISITOR, PROMPT, "sd", False, *values(max_new_tokens=48)))
    return handlers


def test_past_the_disk_cap_an_export_is_refused_in_one_line(handlers, folders, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_DISK_MB", "1")
    path, _ = handlers.export_json(VISITOR)
    assert path and os.path.dirname(os.path.dirname(path)).startswith(str(folders / "downloads"))
    (folders / "gradio" / "someone-elses-upload.bin").write_bytes(b"\0" * 2**20)
    with pytest.warns(UserWarning):
        path, status = handlers.export_charts(VISITOR)
    assert path is None and "files is full (1 MB of 1 MB): a download is refused until older files are swept" in status
    assert status.count("<div") == 1 and "\n" not in status


def test_a_visitor_makes_a_few_downloads_a_minute(handlers, folders, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_EXPORTS_PER_MINUTE", "2")
    assert handlers.export_json(VISITOR)[0] and handlers.export_charts(VISITOR)[0]
    with pytest.warns(UserWarning):
        path, status = handlers.export_json(VISITOR)
    assert path is None and "2 downloads (run JSON, charts, correction memory) per minute per visitor" in status
    other = SessionKey("o", "198.51.100.7")
    list(handlers.generate(other, PROMPT, "ar", False, *values()))
    assert handlers.export_json(other)[0], "another visitor still downloads"


def test_a_public_chart_export_is_the_charts_data_not_plotly_whole(handlers, folders, monkeypatch):
    public, _ = handlers.export_charts(VISITOR)
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "0")
    offline, _ = handlers.export_charts(VISITOR)
    assert os.path.getsize(offline) > 3_000_000, "plotly.js inside: opens offline"
    assert os.path.getsize(public) < 200_000 and "cdn.plot.ly" in open(public, encoding="utf-8").read()


def test_two_visitors_who_send_the_same_file_both_read_gradios_one_copy(handlers, folders):
    """Gradio keeps one copy of identical uploads: reading it leaves it for the next visitor's
    event (the app once deleted it after reading, and the second of two visitors found nothing)."""
    memory = CorrectionMemory("tiny-target", "tiny-draft", {(1, 2): 3})
    gradio_copy = folders / "gradio" / "abc" / "memory.json"
    gradio_copy.parent.mkdir()
    gradio_copy.write_text(json.dumps(memory.to_dict()))
    other = SessionKey("o", "198.51.100.7")
    for key in (VISITOR, other):
        view = handlers.upload_memory(key, str(gradio_copy))
        assert "status-error" not in view and "yours alone" in view


@pytest.mark.slow
def test_the_upload_route_is_limited_per_address_and_by_the_disk(family, folders, monkeypatch):
    """Gradio's upload route stores any file it is sent: past the address's uploads per minute
    (429) or with the disk full (507), one line, and nothing stored."""
    for name, value in {"PUBLIC": "1", "UPLOADS_PER_MINUTE": "2", "TRUSTED_PROXIES": "1"}.items():
        monkeypatch.setenv(f"PLAYGROUND_{name}", value)
    demo, url = launch_tiny_app(family)

    def upload(address: str) -> httpx.Response:
        return httpx.post(url + "gradio_api/upload", files={"files": ("m.json", b"{}" * 1000)},
                          headers={"x-forwarded-for": address}, timeout=30)

    try:
        assert [upload("203.0.113.5").status_code for _ in range(2)] == [200, 200]
        stored = disk._size(folders / "gradio")
        refused = upload("203.0.113.5")
        assert refused.status_code == 429 and "2 uploads per minute per visitor" in refused.text
        assert "\n" not in refused.text.strip() and disk._size(folders / "gradio") == stored
        assert upload("198.51.100.7").status_code == 200, "another address uploads"
        monkeypatch.setenv("PLAYGROUND_DISK_MB", "1")
        (folders / "gradio" / "full.bin").write_bytes(b"\0" * 2**20)
        full = upload("192.0.2.4")
        assert full.status_code == 507 and "disk for visitors' files is full" in full.text
    finally:
        demo.close()


@pytest.mark.slow
def test_one_upload_request_stores_one_file(family, folders, monkeypatch):
    """The probe's request carried 999 files, counted as one upload: 413 in one line, none stored."""
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    demo, url = launch_tiny_app(family)
    try:
        many = [("files", (f"m{n}.json", b"{}")) for n in range(999)]
        refused = httpx.post(url + "gradio_api/upload", files=many, timeout=30)
        assert refused.status_code == 413 and refused.text == "this upload carries 999 files; upload 1 file at a time"
        assert not any((folders / "gradio").rglob("m*.json")), "nothing stored"
        one = httpx.post(url + "gradio_api/upload", files=[("files", ("m.json", b"{}"))], timeout=30)
        assert one.status_code == 200 and len(one.json()) == 1
    finally:
        demo.close()
