#!/usr/bin/env bash
# Sets everything up (venv, embedded models, a headless browser) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each test process starts Python afresh: the modules it compiles are kept for the next ones (in
# .venv and git-ignored __pycache__ folders), also where PYTHONDONTWRITEBYTECODE is set.
unset PYTHONDONTWRITEBYTECODE
browser_install=
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  # Beside the Python setup: both spend most of their time waiting on downloads.
  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) &
  browser_install=$!
fi
# The Space test's venv (requirements.txt alone) on the core that the setup's pip leaves idle.
python3 tests/space_venv.py >/dev/null &
space_venv=$!
bash scripts/setup.sh --dev
wait "$space_venv" || true  # where it failed, the Space test builds it again and says why
[ -z "$browser_install" ] || wait "$browser_install"
export HF_HUB_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False
# Two workers (pytest-xdist): most tests keep to one core (one torch thread each, as conftest.py
# sets), so one process left the second core idle for half of the suite. The tests that burn both
# cores on purpose run alone afterwards: beside them, the other worker's browser tests timed out.
# So does the lecture, quiet as well as busy: a walk of the whole app whose quiet half means quiet.
.venv/bin/python -m pytest -q -n 2 -m "not burns_cores and not alone" "$@"
.venv/bin/python -m pytest -q -n 0 -p no:randomly -m "burns_cores or alone" "$@" || [ "$?" -eq 5 ]  # 5: none selected
