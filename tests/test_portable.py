"""The app's code runs where teachers run it: no POSIX-only module on any import path (Windows has
no fcntl, resource or termios)."""

import subprocess
import sys

import pytest

IMPORT_EVERYTHING = """
import importlib, pkgutil, sys
for name in ("fcntl", "resource", "termios"):
    sys.modules[name] = None  # what Windows has: importing them fails
import playground
for module in pkgutil.walk_packages(playground.__path__, "playground."):
    importlib.import_module(module.name)
import app
print("imported")
"""


@pytest.mark.slow
def test_every_module_imports_without_posix_only_modules():
    done = subprocess.run([sys.executable, "-c", IMPORT_EVERYTHING], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "imported" in done.stdout, done.stderr[-2000:]

