"""Prompt-lookup drafting (n-gram; transformers' `prompt_lookup_num_tokens`, vLLM's `ngram`): the
block proposed is what followed the latest earlier occurrence of the context's last n tokens
(the longest n from MAX_NGRAM down to 1 that occurs). It costs no model at all and pays where an
answer repeats its prompt (edits, summaries, code).

The proposal is deterministic, so q is one-hot on each proposed token: SD's rule accepts it with
probability p(x) and draws a rejection from p without x, renormalized, which is exact
(methods.md, one-hot drafts). Fuzzy rules compare p with that one-hot q.
"""

import torch

from .methods.speculative import Drafted

NGRAM = "ngram"  # the draft spec that asks for it
MAX_NGRAM = 3


def lookup(ids: list[int], k: int, longest: int = MAX_NGRAM) -> tuple[list[int], int]:
    """The at most `k` tokens that followed the latest earlier occurrence of the last n tokens of
    `ids`, and n (0 and no tokens when not even the last token occurred before)."""
    for n in range(min(longest, len(ids) - 1), 0, -1):
        tail = ids[-n:]
        for start in range(len(ids) - n - 1, -1, -1):
            if ids[start:start + n] == tail:
                return ids[start + n:start + n + k], n
    return [], 0


class PromptLookup:
    """The `drafter` of the SD loop for a prompt-lookup draft; `matched` is the n of its last
    proposal (0: no earlier occurrence, so the round is the target's step alone)."""

    def __init__(self, vocab_size: int, device):
        self.vocab_size, self.device, self.matched = vocab_size, device, 0

    def __call__(self, ctx, k: int) -> Drafted:
        tokens, self.matched = lookup(ctx.ids, k) if k > 0 else ([], 0)
        q = torch.zeros(len(tokens), self.vocab_size, device=self.device)
        if tokens:
            q[torch.arange(len(tokens)), torch.tensor(tokens)] = 1.0
        return Drafted(tokens, q, q)
