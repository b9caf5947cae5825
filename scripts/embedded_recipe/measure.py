"""Step 5: held-out agreement and speed of the models as `prepare()` builds them."""

import statistics
import time

import torch
from distill_prompts import HELD_OUT
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache

from playground.measure.agreement import generate_answers, greedy_agreement, retokenized
from playground.models import embedded

from .settings import EVAL_MAX_NEW_TOKENS, QUICK_CHECK, STUDENTS


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


def measure(target, tokenizer, byte_model, byte_tok) -> dict:
    """Held-out figures for the students as `prepare()` builds them."""
    heldout = generate_answers(target, tokenizer, HELD_OUT, EVAL_MAX_NEW_TOKENS)
    quick = generate_answers(target, tokenizer, HELD_OUT[:QUICK_CHECK["prompts"]], QUICK_CHECK["max_new_tokens"])
    students = {name: load_prepared(name)[0] for name in STUDENTS}
    metrics = {"held_out_prompts": len(HELD_OUT), "held_out_answer_tokens": sum(len(a) for _, a in heldout),
               "quick_check": QUICK_CHECK, "agreement": {}, "quick_check_agreement": {}}
    for name, student in students.items():
        metrics["agreement"][name] = round(greedy_agreement(student, heldout), 4)
        metrics["quick_check_agreement"][name] = round(greedy_agreement(student, quick), 4)
    byte_heldout = retokenized(heldout, HELD_OUT, tokenizer, byte_tok)
    metrics["agreement"]["byte-draft"] = round(greedy_agreement(byte_model, byte_heldout), 4)
    byte_quick = retokenized(quick, HELD_OUT, tokenizer, byte_tok)
    metrics["quick_check_agreement"]["byte-draft"] = round(greedy_agreement(byte_model, byte_quick), 4)
    prompt = heldout[1][0]
    tokens_per_second, ratios = speeds({embedded.DEFAULT_TARGET: (target, prompt),
                                        **{name: (student, prompt) for name, student in students.items()},
                                        "byte-draft": (byte_model, byte_heldout[1][0])},
                                       reference=embedded.DEFAULT_TARGET)
    metrics["tokens_per_second"] = {name: round(value, 1) for name, value in tokens_per_second.items()}
    metrics["speed_vs_target"] = {name: round(quartiles[1], 2) for name, quartiles in ratios.items()}
    metrics["speed_vs_target_quartiles"] = {name: [round(quartiles[0], 2), round(quartiles[2], 2)]
                                            for name, quartiles in ratios.items()}
    answer_bytes = sum(len(a) for _, a in byte_heldout)
    metrics["target_bytes_per_token"] = round(answer_bytes / metrics["held_out_answer_tokens"], 2)
    return metrics
