"""Quality measures for the benchmark: agreement with the target-only output, the target's
log-likelihood of a text, and answer checking on a small task set.

Answer rule (`is_correct`): an output is correct when one of the task's accepted answers occurs
in it as a whole word or number, ignoring case (commas inside numbers ignored: "1,000" = "1000").
Simple on purpose: the same rule for every method, so accuracy differences come from the text.
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import DynamicCache

from ..errors import PlaygroundError

LIKELIHOOD_CHUNK = 256  # positions per pass of the log-likelihood


@dataclass(frozen=True)
class Task:
    id: str
    prompt: str
    answers: tuple[str, ...] = field(default_factory=tuple)  # empty: no answer check


def load_tasks(path: str | Path) -> list[Task]:
    """Tasks from JSONL (`{"id", "prompt", "answers": [...]}`) or plain text (one prompt a line)."""
    path = Path(path)
    if not path.is_file():
        raise PlaygroundError(f"prompt file not found: {path}")
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if path.suffix == ".jsonl":
        return [_task(json.loads(line), i) for i, line in enumerate(lines)]
    return [Task(str(i), line.strip()) for i, line in enumerate(lines)]


def _task(record: dict, index: int) -> Task:
    if "prompt" not in record:
        raise PlaygroundError(f"task {index} has no 'prompt' field")
    return Task(str(record.get("id", index)), record["prompt"], tuple(record.get("answers", ())))


def is_correct(text: str, answers: tuple[str, ...]) -> bool | None:
    """None when the task has no answers to check."""
    if not answers:
        return None
    normalized = _normalize(text)
    return any(re.search(rf"(?<![\w.]){re.escape(_normalize(a))}(?![\w]|\.\d)", normalized) for a in answers)


def _normalize(text: str) -> str:
    return re.sub(r"(?<=\d),(?=\d{3})", "", text).lower()


def agreement(ids: list[int], reference: list[int]) -> tuple[bool, int | None]:
    """(exact match, first position where the two differ; None when they are identical)."""
    for i, (a, b) in enumerate(zip(ids, reference)):
        if a != b:
            return False, i
    if len(ids) != len(reference):
        return False, min(len(ids), len(reference))
    return True, None


def mean_log_likelihood(model, prompt_ids: list[int], generated: list[int],
                        chunk: int = LIKELIHOOD_CHUNK) -> float | None:
    """The model's mean log-probability per generated token (minus its loss on them with the prompt
    masked out). The sequence goes through the model `chunk` positions at a time over a cache, so
    no pass builds full-vocabulary logits for more than `chunk` positions (at 4,000 positions and a
    49,152-token vocabulary, one pass would hold 0.8 GB of logits)."""
    if not generated:
        return None
    ids = torch.tensor([prompt_ids + generated], device=model.device)
    first_scored = len(prompt_ids) - 1  # the position whose logits predict the first generated token
    cache, total = DynamicCache(config=model.config), 0.0
    with torch.inference_mode():
        for start in range(0, ids.shape[1] - 1, chunk):
            logits = model(input_ids=ids[:, start:start + chunk], past_key_values=cache, use_cache=True).logits
            total += _scored_log_probs(logits[0], ids[0], start, first_scored)
    return total / len(generated)


def _scored_log_probs(logits, ids, start: int, first_scored: int) -> float:
    """The summed log-probabilities of the generated tokens that `logits` (positions from `start`) predict."""
    positions = torch.arange(start, start + logits.shape[0], device=ids.device)
    wanted = (positions >= first_scored) & (positions < ids.shape[0] - 1)
    if not wanted.any():
        return 0.0
    log_probs = torch.log_softmax(logits[wanted].float(), dim=-1)
    return float(log_probs.gather(-1, ids[positions[wanted] + 1].unsqueeze(-1)).sum())
