"""Every method on an accelerator, and the cost profile of the embedded family's shapes there.

1. Paths: each method on the tiny family (and tli, slem, slrs on its foreign-vocabulary draft too)
   in float32 on `--device`: greedy output against `ar`'s for the lossless methods and for the lossy
   ones at threshold 0, and a sampled run of each that must complete.
2. Costs: the embedded target's and draft's architectures (their config.json, random weights: a
   forward's cost depends on shapes, not values) in bfloat16: a pass over n new tokens at a
   200-token context, T(n)/T(1), and a draft forward over the target's T(1) (c): the numbers a
   what-if profile takes (assets/cost_profiles.json).

    python -m bench.gpu_paths --device cuda --configs DIR --out results.json
"""

import argparse
import json
import pathlib
import statistics
import time
import traceback

import torch
from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache

from playground import engine
from playground.errors import PlaygroundError
from playground.methods import METHODS
from playground.models import tiny
from playground.models.loading import LoadedModel, pick_device

PROMPT = "the cat sat on the mat. the cat"
AT_THRESHOLD_ZERO = {"fsd": {"tau": 0.0}, "psd-f": {"tau_q": 0.0, "tau_t": 0.0}, "psd-a": {"tau_t": 0.0},
                     "csd": {"lambda_": float("inf")}, "csd-memory": {"lambda_": float("inf")},
                     "csd-gate": {"gate_tau": 1.0}}
PASS_SIZES = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32)
CONTEXT = 200


def on(device: str, family: dict[str, LoadedModel]) -> dict[str, LoadedModel]:
    return {role: LoadedModel(m.spec, m.model.to(device), m.tokenizer, device, "float32") for role, m in family.items()}


def run_tokens(method: str, models: dict, **options) -> list[int]:
    run = engine.generate(PROMPT, method=method, max_new_tokens=48, chat_template=False, **models, **options)
    return [t.id for t in run.tokens]


def paths(device: str) -> list[dict]:
    family = on(device, tiny.tiny_family())
    foreign = on(device, {"draft": tiny.foreign_draft()})["draft"]
    reference = run_tokens("ar", {"target": family["target"]})
    rows = []
    for name, method in METHODS.items():
        models = {role: family[role] for role in method.roles}
        pairs = [("same vocabulary", models)]
        if method.vocabulary == "any":
            pairs.append(("foreign vocabulary", {**models, "draft": foreign}))
        for pair, chosen in pairs:
            rows.append(_check(name, pair, chosen, reference, method.lossless))
    return rows


def _check(name: str, pair: str, models: dict, reference: list[int], lossless: bool) -> dict:
    row = {"method": name, "pair": pair}
    try:
        greedy = run_tokens(name, models, **({} if lossless else AT_THRESHOLD_ZERO.get(name, {})))
        row["greedy_identical_to_ar"] = greedy == reference if (lossless or name in AT_THRESHOLD_ZERO) else None
        row["sampled_tokens"] = len(run_tokens(name, models, temperature=0.7, seed=3))
    except Exception as error:  # noqa: BLE001  (a report: every method's failure is a row)
        row["error"] = "".join(traceback.format_exception_only(error)).strip()
        row["trace"] = traceback.format_exc()[-2000:]
    return row


def _seconds(model, cache_of, new_tokens: int, device: str, repeats: int = 30) -> float:
    """Median seconds of a pass over `new_tokens` after a CONTEXT-token prefix (the cache cropped back
    after each pass)."""
    ids = torch.randint(100, 1000, (1, new_tokens), device=device)
    synchronize = torch.cuda.synchronize if device.startswith("cuda") else lambda: None
    times = []
    for _ in range(repeats + 5):
        cache = cache_of()
        synchronize()
        began = time.perf_counter()
        with torch.no_grad():
            model(input_ids=ids, past_key_values=cache, use_cache=True)
        synchronize()
        times.append(time.perf_counter() - began)
        cache.crop(-new_tokens)
    return statistics.median(times[5:])


def _model(config_dir: str, device: str):
    config = AutoConfig.from_pretrained(config_dir)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).to(device).eval()
    cache = DynamicCache()
    with torch.no_grad():
        model(input_ids=torch.randint(100, 1000, (1, CONTEXT), device=device), past_key_values=cache, use_cache=True)
    return model, lambda: cache


def costs(configs: pathlib.Path, device: str) -> dict:
    """T(n)/T(1) of configs/target, and c of every other folder's model (draft, qualifier, ...)."""
    target, target_cache = _model(configs / "target", device)
    passes = {n: _seconds(target, target_cache, n, device) for n in PASS_SIZES}
    one = passes[1]
    ratios = {folder.name: round(_seconds(*_model(folder, device), 1, device) / one, 3)
              for folder in sorted(configs.iterdir()) if folder.name != "target"}
    name = torch.cuda.get_device_name() if device.startswith("cuda") else device
    return {"device": name, "torch": torch.__version__, "context": CONTEXT,
            "target_T1_ms": round(one * 1e3, 3), "cost_ratios": ratios,
            "verify_curve": [[n, round(seconds / one, 3)] for n, seconds in passes.items()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--configs", type=pathlib.Path,
                        help="folder of folders with a config.json each: target/, and the models whose c to measure")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    try:
        device = pick_device(args.device)
    except PlaygroundError as error:
        parser.error(str(error))
    report = {"paths": paths(device)}
    if args.configs:
        report["costs"] = costs(args.configs, device)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    for row in report["paths"]:
        print({k: v for k, v in row.items() if k != "trace"})
    print(report.get("costs"))


if __name__ == "__main__":
    main()
