"""The app's code runs where teachers run it: no POSIX-only module on any import path of ours
(Windows has no fcntl, resource, termios, pwd or grp), and the package installs as a package."""

import ast
import json
import os
import pathlib
import subprocess
import sys
import sysconfig

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
POSIX_ONLY = {"fcntl", "resource", "termios", "pwd", "grp"}
IMPORT_EVERYTHING = """
import importlib, pkgutil, sys
sys.modules["fcntl"] = None  # what Windows has: importing it fails
import playground
for module in pkgutil.walk_packages(playground.__path__, "playground."):
    if not module.name.endswith("__main__"):  # runs the CLI
        importlib.import_module(module.name)
import app
print("imported")
"""


@pytest.mark.slow
def test_every_module_imports_without_fcntl():
    done = subprocess.run([sys.executable, "-c", IMPORT_EVERYTHING], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0 and "imported" in done.stdout, done.stderr[-2000:]


def test_no_module_of_ours_imports_a_posix_only_module():
    found = []
    for path in [*(ROOT / "playground").rglob("*.py"), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(ROOT)}: {name}" for name in names if name.split(".")[0] in POSIX_ONLY]
    assert not found


@pytest.mark.slow
def test_the_package_installs_editable_and_its_command_runs(tmp_path):
    """`pip install -e .` into a fresh venv, then the `playground` command from another folder.
    The fresh venv borrows this one's dependencies (a path entry: their own .pth files, this
    checkout's editable install among them, are not read), so only the package itself is new."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-e", str(ROOT)], check=True, timeout=300, cwd=tmp_path)
    done = subprocess.run([str(venv / "bin" / "playground"), "generate", "--method", "sd", "--prompt", "hello",
                           "--max-new-tokens", "4", "--json"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["method"] == "sd"
