"""Quality proxies for the compare view, measured against the target model.

- token agreement: the share of tokens a run has in common with the target-only run once the two
  are aligned (their longest matching blocks, difflib's), so that one inserted token does not make
  every later token disagree, as comparing position by position would;
- target log-likelihood: the target's mean log-probability of the run's text after the prompt,
  from one forward over prompt + text (playground.measure.quality), higher is closer to the target; a
  text that repeats itself scores well here, hence:
- repetition: the share of the run's word 3-grams that repeat an earlier one (0: none);
- a word diff against the target-only run's text.
"""

import difflib
from html import escape

from ...deploy.prompt_guard import format_prompt
from ...measure.quality import mean_log_likelihood
from ...models.loading import LoadedModel
from ..sharing import model_thread


def target_ids(run, target: LoadedModel) -> list[int]:
    """The run's output as target token ids (re-tokenized if another model's vocabulary made it)."""
    if run.stats.target_role == "target":
        return [t.id for t in run.tokens]
    return target.tokenizer(run.text, add_special_tokens=False).input_ids


AGREEMENT = "agreement with target (aligned tokens)"


def token_agreement(ids: list[int], reference: list[int]) -> float | None:
    longest = max(len(ids), len(reference))
    if not longest:
        return None
    blocks = difflib.SequenceMatcher(None, ids, reference, autojunk=False).get_matching_blocks()
    return sum(block.size for block in blocks) / longest


def target_log_likelihood(target: LoadedModel, prompt: str, ids: list[int], chat_template: bool) -> float | None:
    prompt_ids = format_prompt(target.tokenizer, prompt, chat_template, model=target.model, max_new_tokens=len(ids))
    return model_thread.call("scoring a text under the target", mean_log_likelihood, target.model, prompt_ids, ids)


def repetition(text: str, n: int = 3) -> float | None:
    """The share of the text's word n-grams that already occurred earlier in it."""
    words = text.split()
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if grams else None


DIFF_LABEL = "<b>word diff against the target-only run:</b>"


def diff_html(text: str, reference: str) -> str:
    """The run's words against the target-only run's, under a label (unlabelled, the text read
    as a garbled copy of the column's): words only the run has marked inserted, words only the
    target wrote struck through; one line when they are the same."""
    ours, theirs = text.split(), reference.split()
    if ours == theirs:
        return f'<div class="diff">{DIFF_LABEL} the same words</div>'
    parts = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=theirs, b=ours, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            parts.append(f"<del>{escape(' '.join(theirs[i1:i2]))}</del>")
        if tag in ("replace", "insert"):
            parts.append(f"<ins>{escape(' '.join(ours[j1:j2]))}</ins>")
        if tag == "equal":
            parts.append(escape(" ".join(ours[j1:j2])))
    return f'<div class="diff">{DIFF_LABEL} {" ".join(parts)}</div>'
