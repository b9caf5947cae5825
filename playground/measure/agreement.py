"""How often a student predicts its target's greedy answer (the embedded family's quality figure).

Greedy agreement: over held-out chat prompts, take the target's greedy answer (chat template,
batched generation with left padding), teacher-force prompt + answer through the student, and
count the answer positions where argmax(student) equals the answer's token. For a student with
another vocabulary, the answer is first decoded to text and re-encoded with the student's tokenizer
(for the byte drafter: next-byte agreement).
"""

import torch


def chat_text(tokenizer, prompt: str) -> str:
    return tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                         add_generation_prompt=True, tokenize=False)


def _until_end_of_turn(row: torch.Tensor, eos_id: int) -> list[int]:
    ids = row.tolist()
    return ids[: ids.index(eos_id) + 1] if eos_id in ids else ids


@torch.no_grad()
def generate_answers(target, tokenizer, prompts, max_new_tokens, sample=False, batch_size=32, progress=None):
    """[(prompt_ids, answer_ids)] per prompt; answers end with the end-of-turn token if reached."""
    tokenizer.padding_side = "left"
    sampling = {"do_sample": True, "temperature": 0.7, "top_p": 0.95} if sample else {"do_sample": False}
    examples = []
    starts = range(0, len(prompts), batch_size)
    for start in progress(starts) if progress else starts:
        texts = [chat_text(tokenizer, p) for p in prompts[start:start + batch_size]]
        batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        out = target.generate(**batch, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                              top_k=None, **sampling)
        width = batch["input_ids"].shape[1]
        for row, mask, generated in zip(batch["input_ids"], batch["attention_mask"], out[:, width:]):
            examples.append((row[mask.bool()].tolist(), _until_end_of_turn(generated, tokenizer.eos_token_id)))
    return examples


def retokenized(examples, prompts, source_tokenizer, tokenizer, max_tokens=None):
    """The same conversations in another tokenizer's ids (its own chat template renders the prompt)."""
    result = []
    for prompt, (_, answer) in zip(prompts, examples):
        prompt_ids = tokenizer(chat_text(tokenizer, prompt), add_special_tokens=False)["input_ids"]
        answer_ids = tokenizer(source_tokenizer.decode(answer), add_special_tokens=False)["input_ids"]
        keep = len(answer_ids) if max_tokens is None else max_tokens - len(prompt_ids)
        result.append((prompt_ids, answer_ids[:keep]))
    return result


@torch.no_grad()
def greedy_agreement(student, examples) -> float:
    """Share of answer positions where argmax(student | prompt, answer so far) == the answer's token."""
    hits = total = 0
    for prompt, answer in examples:
        ids = torch.tensor([prompt + answer])
        logits = student(input_ids=ids).logits[0, len(prompt) - 1:len(prompt) + len(answer) - 1]
        hits += (logits.argmax(-1) == torch.tensor(answer)).sum().item()
        total += len(answer)
    return hits / total
