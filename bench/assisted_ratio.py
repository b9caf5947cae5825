"""Issue 2's measurement: our `sd` against transformers' assisted generation, same pair, same K.

Greedy, candidate length K on both sides (transformers: `num_assistant_tokens=K`, schedule
"constant", confidence threshold 0, see `playground.measure.baseline`). For every prompt and repeat four
runs go back to back, in an order that rotates each time so that no implementation always runs
first: ours `sd`, transformers assisted, ours `ar`, transformers plain `generate`. Ratios are
taken within each group and summarized by median and quartiles:

- sd / assisted: goal >= 1.1, never below 1.0;
- sd / ar: our speedup, and measured / predicted (Leviathan, from the run's acceptance rate and
  measured cost ratio; goal >= 0.85);
- ar / hf-ar: our plain loop against transformers' (isolates per-step overhead from drafting);
- verify / ar-step: seconds of one K+1-token verification forward over one ar step. Leviathan's
  prediction assumes 1; where it is above 1 the prediction is optimistic by about that factor.

    python bench/assisted_ratio.py --family tiny
    python bench/assisted_ratio.py --family embedded --out bench/results/assisted_ratio.md
"""

import argparse
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from playground import generate
from playground.deploy.prompt_guard import format_prompt
from playground.measure.baseline import assisted_generate
from playground.measure.benchmark import machine_info, spread
from playground.models.loading import load_model
from playground.models.tiny import tiny_family

PROMPTS = [
    "Write a short paragraph about the sea.",
    "Explain how a bicycle works.",
    "What is the capital of France? Answer in one sentence.",
    "List three uses of a paperclip.",
    "Tell me a short story about a robot who learns to paint.",
]
RUNS = ("sd", "assisted", "ar", "hf-ar")


def embedded_family(target: str, draft: str) -> dict:
    return {"target": load_model(target, "cpu", "float32"), "draft": load_model(draft, "cpu", "float32")}


def one_run(name: str, family: dict, prompt: str, k: int, max_new_tokens: int) -> dict:
    """Token ids, tokens/s (wall clock of the whole call, both sides) and, for ours, Leviathan's
    predicted speedup of one call."""
    target, draft = family["target"], family["draft"]
    if name in ("assisted", "hf-ar"):
        ids = format_prompt(target.tokenizer, prompt, True)
        run = assisted_generate(target, draft if name == "assisted" else None, ids, candidates=k,
                                max_new_tokens=max_new_tokens)
        return {"ids": run.ids, "tps": run.tokens_per_second}
    start = time.perf_counter()
    run = generate(prompt, target=target, draft=draft, method=name, candidates=k,
                   max_new_tokens=max_new_tokens, temperature=0)
    seconds = time.perf_counter() - start
    stats = run.stats
    return {"ids": [t.id for t in run.tokens], "tps": len(run.tokens) / seconds,
            "predicted": stats.account.predicted_speedup(), "acceptance": stats.acceptance_rate,
            "target_forward": (stats.account.passes + stats.account.checks) / stats.forwards["target"]}


def measure_group(family: dict, prompt: str, k: int, max_new_tokens: int, rotation: int) -> dict:
    order = RUNS[rotation % len(RUNS):] + RUNS[:rotation % len(RUNS)]
    runs = {name: one_run(name, family, prompt, k, max_new_tokens) for name in order}
    sd, ar = runs["sd"], runs["ar"]
    speedup = sd["tps"] / ar["tps"]
    return {
        "sd/assisted": sd["tps"] / runs["assisted"]["tps"],
        "sd/ar": speedup,
        "measured/predicted": speedup / sd["predicted"] if sd["predicted"] else None,
        "ar/hf-ar": ar["tps"] / runs["hf-ar"]["tps"],
        "verify/ar-step": sd["target_forward"] / ar["target_forward"],
        "acceptance": sd["acceptance"],
        "identical": len({tuple(r["ids"]) for r in runs.values()}) == 1,
        **{f"{name} tok/s": run["tps"] for name, run in runs.items()},
    }


def measure(family: dict, k: int, max_new_tokens: int, repeats: int) -> list[dict]:
    one_run("sd", family, PROMPTS[0], k, 8)  # warm-up: first-call allocations are not the loop's cost
    groups, rotation = [], 0
    for _ in range(repeats):
        for prompt in PROMPTS:
            groups.append(measure_group(family, prompt, k, max_new_tokens, rotation))
            rotation += 1
    return groups


def report(groups: list[dict], title: str, info: dict) -> str:
    keys = [k for k in groups[0] if k != "identical"]
    lines = [f"## {title}", "", *(f"- {k}: {v}" for k, v in info.items()),
             f"- groups (prompts x repeats): {len(groups)}; outputs identical (sd, assisted, ar, hf-ar) in "
             f"{sum(g['identical'] for g in groups)}/{len(groups)}", "",
             "| quantity | median | q1 | q3 | min | max |", "|---|---|---|---|---|---|"]
    for key in keys:
        values = [g[key] for g in groups if g[key] is not None]
        s = spread(values)
        lines.append(f"| {key} | {s['median']:.3f} | {s['q1']:.3f} | {s['q3']:.3f} | {min(values):.3f} "
                     f"| {max(values):.3f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=("tiny", "embedded"), default="tiny")
    parser.add_argument("--target", default="smollm2-135m", help="embedded family: target spec")
    parser.add_argument("--draft", default="smollm2-draft", help="embedded family: draft spec")
    parser.add_argument("--candidates", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    parser.add_argument("--out", help="append the Markdown section to this file")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    family = tiny_family() if args.family == "tiny" else embedded_family(args.target, args.draft)
    groups = measure(family, args.candidates, args.max_new_tokens, args.repeats)
    info = {**machine_info(), "target": family["target"].spec, "draft": family["draft"].spec,
            "K": args.candidates, "max_new_tokens": args.max_new_tokens, "greedy": True}
    text = report(groups, f"{args.family}: {family['target'].spec} + {family['draft'].spec}, K={args.candidates}", info)
    print(text)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
