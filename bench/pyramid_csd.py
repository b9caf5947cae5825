"""Compare sd, fsd, psd-a, psd-f and csd (uncalibrated and calibrated) on a few chat prompts.

    python bench/pyramid_csd.py                    # the embedded family (run `embedded prepare` first)
    python bench/pyramid_csd.py --tiny             # the random tiny family of the tests
    python bench/pyramid_csd.py --out bench/results/pyramid_csd.json

Prints one row per method (acceptance rate, mean acceptance length, tokens/s, speedup over the
target alone, share of each origin) and PyramidSD's predicted vs measured throughput.
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import playground
from playground.decoding.step import ORIGINS
from playground.measure.calibrate import calibrate, read_corpus
from playground.methods.correction_memory import CorrectionMemory
from playground.methods.pyramid import pyramid_summary
from playground.models.tiny import tiny_family

PROMPTS = [
    "What is the capital of Italy, and what is it famous for?",
    "Give me three tips for learning to cook.",
    "Explain what a black hole is in simple words.",
    "Write a short poem about the morning.",
]
METHODS = [  # (label, method, options)
    ("ar", "ar", {}),
    ("sd", "sd", {}),
    ("fsd", "fsd", {"tau": 0.4}),
    ("psd-a", "psd-a", {}),
    ("psd-f", "psd-f", {}),
    ("csd", "csd", {}),
    ("csd (calibrated)", "csd", {"memory": "CALIBRATED"}),
]


def embedded_family() -> dict:
    from playground.models.default_family import DEFAULT_FAMILY  # noqa: PLC0415

    return {role: playground.load_model(spec, "cpu") for role, spec in DEFAULT_FAMILY.items()}


def calibrated_memory(family: dict, corpus_prompts: int, options: dict) -> str:
    memory = CorrectionMemory(family["target"].spec, family["draft"].spec)
    calibrate(read_corpus()[:corpus_prompts], memory, target=family["target"], draft=family["draft"], **options)
    path = Path(tempfile.mkdtemp()) / "memory.json"
    memory.save(path)
    print(f"calibrated memory: {memory.total} rejections in {len(memory.counts)} pairs; top: "
          f"{memory.top_pairs(5, family['target'].tokenizer)}", file=sys.stderr)
    return str(path)


def measure(family: dict, method: str, options: dict, shared: dict) -> dict:
    """Totals over the prompts: counts are summed, then the rates are taken."""
    totals = {"tokens": 0, "drafted": 0, "accepted": 0, "target_forwards": 0, "seconds": 0.0}
    origins = dict.fromkeys(ORIGINS, 0)
    summaries = []
    for prompt in PROMPTS:
        run = playground.generate(prompt, method=method, **family, **shared, **options)
        stats = run.stats
        totals["tokens"] += stats.tokens
        totals["drafted"] += stats.drafted
        totals["accepted"] += stats.accepted
        totals["target_forwards"] += stats.forwards["target"]
        totals["seconds"] += stats.account.clock
        for origin in ORIGINS:
            origins[origin] += stats.origins[origin]
        if method.startswith("psd"):
            summaries.append(pyramid_summary(run))
    result = {
        "acceptance_rate": totals["accepted"] / totals["drafted"] if totals["drafted"] else None,
        "mean_acceptance_length": totals["tokens"] / totals["target_forwards"],
        "tokens_per_second": totals["tokens"] / totals["seconds"],
        "origin_shares": {origin: count / totals["tokens"] for origin, count in origins.items()},
        **totals,
    }
    if summaries:
        result["pyramid"] = {key: sum(s[key] or 0 for s in summaries) / len(summaries)
                             for key in ("beta_qd", "beta_tq", "predicted_tokens_per_second",
                                         "predicted_tokens_per_second_leviathan", "measured_tokens_per_second")}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="use the random tiny family of the tests")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=0.7, help="PyramidSD's paper setting")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus-prompts", type=int, default=40, help="corpus lines for the calibrated csd")
    parser.add_argument("--out", help="also write the results as JSON here")
    args = parser.parse_args()
    family = tiny_family() if args.tiny else embedded_family()
    shared = {"max_new_tokens": args.max_new_tokens, "temperature": args.temperature, "seed": args.seed}
    memory = calibrated_memory(family, args.corpus_prompts, shared)
    results = {}
    for label, method, options in METHODS:
        options = {key: memory if value == "CALIBRATED" else value for key, value in options.items()}
        results[label] = measure(family, method, options, shared)
    ar_speed = results["ar"]["tokens_per_second"]
    print(f"{'method':18} {'accept':>7} {'mean len':>8} {'tok/s':>7} {'speedup':>7}  "
          "origins (draft/qualifier/target/rescued)")
    for label, r in results.items():
        rate = "-" if r["acceptance_rate"] is None else f"{r['acceptance_rate']:.3f}"
        shares = "/".join(f"{r['origin_shares'][o]:.2f}" for o in ORIGINS)
        print(f"{label:18} {rate:>7} {r['mean_acceptance_length']:8.2f} {r['tokens_per_second']:7.1f} "
              f"{r['tokens_per_second'] / ar_speed:7.2f}  {shares}")
    for label in ("psd-a", "psd-f"):
        p = results[label]["pyramid"]
        print(f"{label}: beta_QD {p['beta_qd']:.3f}, beta_TQ {p['beta_tq']:.3f}, predicted V_PSD "
              f"{p['predicted_tokens_per_second']:.1f} tok/s (Leviathan's expectation: "
              f"{p['predicted_tokens_per_second_leviathan']:.1f}) vs measured {p['measured_tokens_per_second']:.1f}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({"settings": vars(args), "prompts": PROMPTS, "results": results},
                                             indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
