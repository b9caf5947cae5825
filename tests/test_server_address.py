"""Where the app listens: Gradio's environment variables, loopback on a desktop, all interfaces on
a Space; and app.py really binds there."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from playground.ui.sharing.server_settings import server_address

ROOT = Path(__file__).resolve().parent.parent
VARIABLES = ("GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT", "PORT", "SPACE_ID", "SYSTEM")


@pytest.fixture
def clean_env(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_desktop_default_is_loopback(clean_env):
    assert server_address() == ("127.0.0.1", 7860)


def test_space_listens_on_all_interfaces(clean_env):
    clean_env.setenv("SYSTEM", "spaces")
    assert server_address() == ("0.0.0.0", 7860)


def test_gradio_variables_win_over_port_and_defaults(clean_env):
    clean_env.setenv("PORT", "8000")
    assert server_address() == ("127.0.0.1", 8000)
    clean_env.setenv("GRADIO_SERVER_PORT", "9000")
    clean_env.setenv("GRADIO_SERVER_NAME", "::1")
    assert server_address() == ("::1", 9000)


@pytest.mark.parametrize("port", ["http", "0", "70000"])
def test_a_bad_port_is_a_one_line_error(clean_env, port):
    clean_env.setenv("GRADIO_SERVER_PORT", port)
    with pytest.raises(SystemExit, match="GRADIO_SERVER_PORT"):
        server_address()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listening_addresses(port: int) -> set[str]:
    """Local addresses with a TCP socket listening on `port` (from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


@pytest.mark.slow
def test_app_binds_loopback_only_by_default():
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in VARIABLES}
    env["GRADIO_SERVER_PORT"] = str(port)
    app = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not listening_addresses(port) and time.monotonic() < deadline and app.poll() is None:
            time.sleep(0.5)
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1, and nothing else
    finally:
        app.terminate()
        app.wait(timeout=30)
