"""Step 5: held-out agreement and speed of the models as `prepare()` builds them."""

import statistics
import time

import torch
from distill_prompts import HELD_OUT
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from playground.engine import generate
from playground.measure.agreement import generate_answers, greedy_agreement, retokenized
from playground.models import embedded

from .settings import EVAL_MAX_NEW_TOKENS, QUICK_CHECK, QUICK_CHECK_SLEM


@torch.no_grad()
def greedy_tokens_per_second(model, prompt_ids: list[int], new_tokens: int = 48) -> float:
    """Batch 1, greedy, KV cache, no stopping: the loop a speculative method runs."""
    cache = DynamicCache()
    ids = torch.tensor([prompt_ids])
    started = time.perf_counter()
    for _ in range(new_tokens):
        logits = model(input_ids=ids, past_key_values=cache, use_cache=True).logits
        ids = logits[:, -1:].argmax(-1)
    return new_tokens / (time.perf_counter() - started)


def speeds(models: dict, reference: str, rounds: int = 15) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Median tokens/s of each model given {name: (model, prompt_ids)}, and the quartiles of each
    round's ratio to `reference`. Models run alternately in one process and each round's ratio
    compares neighbouring measurements, so a shared CPU's slow spells cancel out."""
    samples = {name: [] for name in models}
    for _ in range(rounds):
        for name, (model, prompt_ids) in models.items():
            samples[name].append(greedy_tokens_per_second(model, prompt_ids))
    tokens_per_second = {name: statistics.median(values) for name, values in samples.items()}
    ratios = {name: statistics.quantiles([a / b for a, b in zip(values, samples[reference])], n=4)
              for name, values in samples.items()}
    return tokens_per_second, ratios


def load_prepared(name: str):
    """A prepared model in float32, as the app runs it on a CPU (its files are bfloat16: loaded as
    stored, a CPU without bf16 units runs the batched passes about 6x slower)."""
    path = embedded.embedded_path(name)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return model.eval(), AutoTokenizer.from_pretrained(path)


def measure(target, tokenizer, names: list[str]) -> dict:
    """Held-out figures for the models `names` as `prepare()` builds them. A model with another
    vocabulary is measured on the target's answers retokenized (next-token agreement in its own
    tokens: next-byte for the byte drafter)."""
    heldout = generate_answers(target, tokenizer, HELD_OUT, EVAL_MAX_NEW_TOKENS)
    quick = generate_answers(target, tokenizer, HELD_OUT[:QUICK_CHECK["prompts"]], QUICK_CHECK["max_new_tokens"])
    metrics = {"held_out_prompts": len(HELD_OUT), "held_out_answer_tokens": sum(len(a) for _, a in heldout),
               "quick_check": QUICK_CHECK, "agreement": {}, "quick_check_agreement": {},
               "tokens_per_target_token": {}}
    timed = {embedded.DEFAULT_TARGET: (target, heldout[1][0])}
    for name in names:
        model, own = load_prepared(name)
        held, fast = heldout, quick
        if own.get_vocab() != tokenizer.get_vocab():
            held, fast = (retokenized(answers, HELD_OUT, tokenizer, own) for answers in (heldout, quick))
            metrics["tokens_per_target_token"][name] = round(
                sum(len(a) for _, a in held) / metrics["held_out_answer_tokens"], 2)
        metrics["agreement"][name] = round(greedy_agreement(model, held), 4)
        metrics["quick_check_agreement"][name] = round(greedy_agreement(model, fast), 4)
        timed[name] = (model, held[1][0])
    tokens_per_second, ratios = speeds(timed, reference=embedded.DEFAULT_TARGET)
    metrics["tokens_per_second"] = {name: round(value, 1) for name, value in tokens_per_second.items()}
    metrics["speed_vs_target"] = {name: round(quartiles[1], 2) for name, quartiles in ratios.items()}
    metrics["speed_vs_target_quartiles"] = {name: [round(quartiles[0], 2), round(quartiles[2], 2)]
                                            for name, quartiles in ratios.items()}
    if "byte-draft" in names:
        metrics["target_bytes_per_token"] = metrics["tokens_per_target_token"]["byte-draft"]
    metrics["quick_check_slem"] = {name: slem_check(name, HELD_OUT[:QUICK_CHECK["prompts"]])
                                   for name in names if name in QUICK_CHECK_SLEM}
    return metrics


def slem_check(name: str, prompts: list[str]) -> dict:
    """Greedy slem on the embedded target with drafter `name` (QUICK_CHECK_SLEM's options, QUICK_CHECK's
    length), as the app runs it: its acceptance in target tokens, which tests/test_bpe_draft.py re-measures."""
    options = QUICK_CHECK_SLEM[name]
    runs = [generate(prompt, draft=name, method="slem", max_new_tokens=QUICK_CHECK["max_new_tokens"], **options).stats
            for prompt in prompts]
    return {**options, "acceptance": round(sum(r.accepted for r in runs) / sum(r.drafted for r in runs), 4)}


PER_MODEL = ("agreement", "quick_check_agreement", "tokens_per_target_token", "tokens_per_second",
             "speed_vs_target", "speed_vs_target_quartiles", "quick_check_slem")


def merged(recorded: dict, measured: dict) -> dict:
    """`measured` over `recorded`, model by model: a model not measured this run keeps its recorded
    figures (its speed ratio was measured against the target in its own run)."""
    result = {**recorded, **measured}
    for key in PER_MODEL:
        result[key] = {**recorded.get(key, {}), **measured.get(key, {})}
    return result
