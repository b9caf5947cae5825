"""The venv a Hugging Face Space builds: requirements.txt alone, in a fresh venv. Built once per
requirements file; standard library only, so that scripts/test.sh can build it with the system's
python beside the project's own setup (`python3 tests/space_venv.py`), on the core that setup
leaves idle, and the Space test finds it ready."""

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPACE_VENVS = ROOT / ".cache" / "space-venv"  # git-ignored; one per requirements.txt, reused while it is unchanged


def space_python() -> Path:
    """The python of a venv holding requirements.txt alone, built first where this
    requirements.txt has none. Without byte-compiling: one app starts from it, and compiling
    every module of its packages took longer than the install."""
    venv = SPACE_VENVS / hashlib.sha256((ROOT / "requirements.txt").read_bytes()).hexdigest()[:12]
    python = venv / "bin" / "python"
    if not (venv / ".complete").exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        built = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-compile",
                                "--disable-pip-version-check", "-r", str(ROOT / "requirements.txt")],
                               capture_output=True, text=True, timeout=1800)
        assert built.returncode == 0, built.stderr[-2000:]
        (venv / ".complete").touch()
    return python


if __name__ == "__main__":
    print(space_python())
