"""Tokens/s through the UI's generate handler vs the same run through the Python API.

The handler renders token HTML, stats and their running lines while streaming (paced, see
playground/ui/views/pacing.py); this measures what that costs. Runs alternate (API, UI, API, UI,
...) so that load changes on the machine hit both alike; the ratio of the medians is reported.
Target: UI >= 0.9 x API.

    python bench/ui_overhead.py --family tiny       # tiny in-code models (fast, no weights)
    python bench/ui_overhead.py --family embedded   # the embedded SmolLM2 family
"""

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from playground import METHODS, generate
from playground.models.default_family import DEFAULT_FAMILY
from playground.models.loading import load_model
from playground.models.presets import Preset
from playground.models.tiny import tiny_family
from playground.ui.handlers import Handlers
from playground.ui.options import all_controls

PROMPT = "Write a short paragraph about the sea."


def embedded_family(method: str) -> dict:
    return {role: load_model(DEFAULT_FAMILY[role]) for role in METHODS[method].roles}


def api_seconds(family: dict, options: dict) -> tuple[float, int]:
    start = time.perf_counter()
    run = generate(PROMPT, **family, **options)
    return time.perf_counter() - start, run.stats.tokens


def ui_seconds(handlers: Handlers, options: dict) -> tuple[float, int]:
    chosen = {c.name: c.default for c in all_controls()} | options
    start = time.perf_counter()
    for _ in handlers.generate("bench", PROMPT, options["method"], False,
                               *[chosen[c.name] for c in all_controls()]):
        pass
    return time.perf_counter() - start, handlers.sessions.get("bench").run.stats.tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=("tiny", "embedded"), default="tiny")
    parser.add_argument("--method", default="sd")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    family = tiny_family() if args.family == "tiny" else embedded_family(args.method)
    by_spec = {m.spec: m for m in family.values()}
    preset = Preset(args.family, **{role: m.spec for role, m in family.items()})
    handlers = Handlers(loader=by_spec.__getitem__, presets=[preset])
    options = {"method": args.method, "max_new_tokens": args.max_new_tokens, "temperature": 0.0}

    api_seconds(family, options)  # warm-up: first forwards allocate
    api, ui = [], []
    for _ in range(args.repeats):
        seconds, tokens = api_seconds(family, options)
        api.append(tokens / seconds)
        seconds, tokens = ui_seconds(handlers, options)
        ui.append(tokens / seconds)
    result = {"family": args.family, "method": args.method, "max_new_tokens": args.max_new_tokens,
              "repeats": args.repeats, "api_tokens_per_second": statistics.median(api),
              "ui_tokens_per_second": statistics.median(ui),
              "ui_over_api": statistics.median(ui) / statistics.median(api)}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
