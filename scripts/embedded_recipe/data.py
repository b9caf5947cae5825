"""Step 1-2: the target's answers to the training prompts (stored in DATA_DIR), and its top-k
log-probabilities on them (cached in the work directory), so a re-run retrains without regenerating."""

import pathlib

import torch
from distill_prompts import extra_prompts, self_prompts, training_prompts
from tqdm import tqdm
from transformers import set_seed

from playground.measure.agreement import generate_answers

from .batches import answer_positions, length_batches, padded
from .settings import DATA_DIR, EXTRA_PROMPTS, MAX_ANSWER_TOKENS, PROMPTS, SEED, SELF_PROMPTS, TOP_K


def progress(batch_starts):
    return tqdm(batch_starts, desc="target answers", unit="batch")


def cached(path: pathlib.Path, build):
    if path.exists():
        return torch.load(path)
    value = build()
    torch.save(value, path)
    return value


def answered(target, tokenizer, prompts, name):
    """The target's answers to `prompts`: the first half greedy, the rest sampled, each half stored
    in DATA_DIR on its own, so two processes can write them at once."""
    half = len(prompts) // 2

    def greedy():
        return generate_answers(target, tokenizer, prompts[:half], MAX_ANSWER_TOKENS, progress=progress)

    def sampled():
        set_seed(SEED)  # the same samples whether or not the greedy half (which draws none) ran first
        return generate_answers(target, tokenizer, prompts[half:], MAX_ANSWER_TOKENS, sample=True, progress=progress)
    return cached(DATA_DIR / f"{name}-greedy.pt", greedy) + cached(DATA_DIR / f"{name}-sampled.pt", sampled)


def stored_conversations() -> list[tuple[list[int], list[int]]]:
    """Every stored (prompt ids, answer ids): the three sets, greedy and sampled halves."""
    return [example for path in sorted(DATA_DIR.glob("answers-*.pt")) for example in torch.load(path)]


def own_prompts(target, tokenizer) -> list[str]:
    """The first SELF_PROMPTS questions the target writes. They come as one seeded stream, so a
    longer stored run starts with the same questions and serves a smaller count."""
    path = DATA_DIR / "prompts-self.pt"
    stored = torch.load(path) if path.exists() else []
    if len(stored) < SELF_PROMPTS:
        stored = self_prompts(target, tokenizer, SELF_PROMPTS, SEED)
        torch.save(stored, path)
    return stored[:SELF_PROMPTS]


def training_data(target, tokenizer):
    """The prompts and the target's answers to them: PROMPTS templated ones, EXTRA_PROMPTS more
    templated ones, then SELF_PROMPTS the target wrote (each set read from DATA_DIR if stored there)."""
    DATA_DIR.mkdir(exist_ok=True)
    base = training_prompts(PROMPTS, SEED)
    extra = extra_prompts(EXTRA_PROMPTS, SEED, exclude=base)
    own = own_prompts(target, tokenizer)
    prompts, examples = [], []
    for part, name in ((base, f"answers-{PROMPTS}"), (extra, f"answers-extra-{EXTRA_PROMPTS}"),
                       (own, f"answers-self-{SELF_PROMPTS}")):
        prompts += part
        examples += answered(target, tokenizer, part, name)
    print(f"{len(examples)} conversations, {sum(len(a) for _, a in examples)} answer tokens")
    return prompts, examples


@torch.no_grad()
def teacher_pass(target, examples, pad_id, frozen):
    """Per example: the target's top-k log-probs (float16) and ids at its answer positions, and, for
    a student with `frozen` > 0 layers, its hidden states (bfloat16, whole sequence) after them."""
    result = [None] * len(examples)
    for batch in tqdm(length_batches([sum(map(len, e)) for e in examples], 4096), desc="teacher pass"):
        ids, mask = padded([examples[i][0] + examples[i][1] for i in batch], pad_id)
        out = target(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        for row, (i, (_, first, last)) in enumerate(zip(batch, answer_positions(examples, batch))):
            values, indices = out.logits[row, first:last].float().log_softmax(-1).topk(TOP_K, dim=-1)
            length = last + 1
            result[i] = {"top_logprobs": values.half(), "top_ids": indices.int()}
            if frozen:
                result[i]["hidden"] = out.hidden_states[frozen][row, :length].to(torch.bfloat16)
    return result
