#!/usr/bin/env bash
# Sets everything up (venv, embedded models, a headless browser) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
export HF_HUB_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False
.venv/bin/python -m pytest -q "$@"
