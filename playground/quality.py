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

from .errors import PlaygroundError

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


def mean_log_likelihood(model, prompt_ids: list[int], generated: list[int]) -> float | None:
    """The model's mean log-probability per generated token: minus its own loss, from one forward
    over prompt+text with the prompt masked out of the labels."""
    if not generated:
        return None
    ids = torch.tensor([prompt_ids + generated], device=model.device)
    labels = ids.clone()
    labels[0, :len(prompt_ids)] = -100  # the loss's ignore index
    with torch.inference_mode():
        return -float(model(input_ids=ids, labels=labels).loss)
