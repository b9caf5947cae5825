"""Batching conversations (prompt ids, answer ids) for the teacher pass and for training."""

import torch


def length_batches(lengths: list[int], max_tokens: int, generator: torch.Generator | None = None):
    """Index batches of similar lengths, each under `max_tokens` padded tokens; shuffled if seeded."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches, current = [], []
    for i in order:
        if current and (len(current) + 1) * lengths[i] > max_tokens:
            batches.append(current)
            current = []
        current.append(i)
    batches.append(current)
    if generator is not None:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator)]
    return batches


def padded(sequences: list[list[int]], pad_id: int):
    width = max(map(len, sequences))
    ids = torch.full((len(sequences), width), pad_id)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, :len(seq)] = torch.tensor(seq)
        mask[row, :len(seq)] = 1
    return ids, mask


def answer_positions(examples, batch) -> list[tuple[int, int, int]]:
    """(row, first, last+1) of the positions whose next token is an answer token."""
    spans = []
    for row, i in enumerate(batch):
        prompt, answer = examples[i]
        spans.append((row, len(prompt) - 1, len(prompt) + len(answer) - 1))
    return spans


def hidden_at_answers(model, ids, mask, spans):
    hidden = model.model(input_ids=ids, attention_mask=mask).last_hidden_state
    return torch.cat([hidden[row, first:last] for row, first, last in spans])
