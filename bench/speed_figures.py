"""Do a Generate and a Compare of the same setting tell the same speedup, quiet and busy?

For each chat prompt and method: one run alone, as the Generate tab makes it, whose speedup is its
speed account's (against T(1) timed beside its own rounds); then the Compare tab's paired runs
(paired_speedups.py: a warm-up, then `ar` and the method alternately, 3 repeats), whose speedup is the
median of the paired ratios. Beside them, the estimate the account replaced: tokens x T(1) over
the run's seconds, with T(1) timed on a throwaway cache before the run.

    python bench/speed_figures.py --out bench/results/speed_account/quiet.json
    python bench/speed_figures.py --burners 2 --out bench/results/speed_account/busy.json
"""

import argparse
import json
import multiprocessing
import os
import pathlib
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import DynamicCache

from playground import generate
from playground.measure.benchmark import machine_info
from playground.models.loading import load_model
from playground.ui.views.paired_speedups import REPEATS, Timed, repeated

CHAT_PROMPTS = pathlib.Path(__file__).with_name("chat_prompts.txt").read_text(encoding="utf-8").splitlines()[:3]
METHODS = ("sd", "psd-f", "tli")
TARGET = "smollm2-135m"


def burn() -> None:
    while True:
        pass


def throwaway_single_step(model, context: int = 64, passes: int = 4) -> float:
    """T(1) as the app timed it before: on a fresh cache, before the run."""
    cache, ids = DynamicCache(config=model.config), torch.zeros(1, context, dtype=torch.long)
    times = []
    with torch.inference_mode():
        model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        for _ in range(passes):
            started = time.perf_counter()
            model(input_ids=ids[:, :1], past_key_values=cache, use_cache=True, logits_to_keep=1)
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def one_setting(prompt: str, method: str, tokens: int) -> dict:
    generate(prompt, method=method, max_new_tokens=4)  # loads and warms the family
    old_step = throwaway_single_step(load_model(TARGET).model)
    alone = generate(prompt, method=method, max_new_tokens=tokens)
    account = alone.stats.account
    sides = [lambda **o: generate(prompt, method="ar", **{"max_new_tokens": tokens, **o}),
             lambda **o: generate(prompt, method=method, **{"max_new_tokens": tokens, **o})]
    timed = [Timed(), Timed()]
    for side, repeat, run in repeated(sides, REPEATS):
        if repeat >= 0:
            timed[side].add(repeat, run)
    paired = timed[1].speedup(timed[0])
    return {"prompt": prompt, "method": method, "tokens": alone.stats.tokens,
            "generate_speedup": account.speedup(), "utilization": account.utilization(),
            "generate_unsettled": account.unsettled(),
            "reference_ms": [round(t.wall * 1000, 2) for t in account.reference],
            "old_estimate": alone.stats.tokens * old_step / account.decoder_seconds,
            "old_single_step_ms": old_step * 1000,
            "compare_median": paired.median, "compare_unsettled": paired.unsettled, "compare_text": str(paired),
            "compare_ratios": timed[1].ratios(timed[0])}


def summary(rows: list[dict]) -> dict:
    """How far each single-run figure fell from the Compare's paired median, over the rows where both
    settled a figure; and how many rows either side called not settled."""
    settled = [r for r in rows if not r["generate_unsettled"] and not r["compare_unsettled"]]

    def gaps(key):
        return [abs(r[key] / r["compare_median"] - 1) for r in settled if r[key] and r["compare_median"]]
    return {"both_settled": len(settled), "generate_unsettled": sum(bool(r["generate_unsettled"]) for r in rows),
            "compare_unsettled": sum(bool(r["compare_unsettled"]) for r in rows),
            **{key: {"median_gap": statistics.median(gaps(key)), "max_gap": max(gaps(key))} if gaps(key) else None
               for key in ("generate_speedup", "old_estimate")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burners", type=int, default=0, help="processes burning a core each beside the runs")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    burners = [multiprocessing.Process(target=burn, daemon=True) for _ in range(args.burners)]
    for process in burners:
        process.start()
    try:
        rows = [one_setting(prompt, method, args.tokens) for method in METHODS for prompt in CHAT_PROMPTS]
    finally:
        for process in burners:
            process.terminate()
    result = {"machine": machine_info(), "burners": args.burners, "tokens": args.tokens, "rows": rows,
              "agreement_with_compare": summary(rows)}
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(json.dumps(result["agreement_with_compare"], indent=1))
    for r in rows:
        print(f"{r['method']:6} generate {r['generate_speedup']:.2f} (thread had its core {r['utilization']:.0%}"
              f"{', not settled' if r['generate_unsettled'] else ''}) old {r['old_estimate']:.2f} "
              f"compare {r['compare_text'][:60]}")


if __name__ == "__main__":
    main()
