"""The venv a Hugging Face Space builds (requirements.txt only), built once per requirements file
and started as soon as pytest knows a test needs it (conftest.py), so that its minutes of pip
overlap with the other tests instead of adding to them."""

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / ".cache" / "space-venv"  # git-ignored; reused while requirements.txt is unchanged
_building: subprocess.Popen | None = None


def _folder() -> Path:
    return VENVS / hashlib.sha256((ROOT / "requirements.txt").read_bytes()).hexdigest()[:12]


def start_building() -> None:
    """Begin building the venv in the background, unless it is built or being built."""
    global _building
    venv = _folder()
    if _building is not None or (venv / ".complete").exists():
        return
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    python = venv / "bin" / "python"
    # --no-compile: one app starts from this venv, and compiling every module of its packages
    # (36 s of a core) would only slow the tests running beside the build
    script = (f'"{sys.executable}" -m venv "{venv}" && "{python}" -m pip install --quiet --no-compile '
              f'--disable-pip-version-check -r "{ROOT / "requirements.txt"}" '
              f'&& touch "{venv / ".complete"}"')
    _building = subprocess.Popen(["bash", "-c", script], stdout=subprocess.DEVNULL,
                                 stderr=open(VENVS / "build.log", "w"))  # the child writes to it until it ends


def space_python() -> Path:
    """The built venv's python, waiting for the build if it is under way."""
    start_building()
    if _building is not None:
        _building.wait(timeout=1800)
    venv = _folder()
    assert (venv / ".complete").exists(), (VENVS / "build.log").read_text()[-2000:]
    return venv / "bin" / "python"
