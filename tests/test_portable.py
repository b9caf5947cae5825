"""The app's code runs where teachers run it: no POSIX-only module on any import path of ours
(Windows has no fcntl, resource, termios, pwd or grp)."""

import ast
import pathlib
import subprocess
import sys

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
