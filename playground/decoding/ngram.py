"""Prompt-lookup drafting (n-gram; transformers' `prompt_lookup_num_tokens`, vLLM's `ngram`): the
tokens proposed are what followed the latest earlier occurrence of the context's last n tokens
(the longest n from MAX_NGRAM down to MIN_MATCH that occurs). It costs no model at all and pays
where an answer repeats its prompt (edits, summaries, code). The same policy serves both uses:
the whole draft (`draft="ngram"`), or one more branch of a model's token tree.

The proposal is deterministic, so q is one-hot on each proposed token (docs/rules.md, "Token trees": one-hot
drafts): SD's rule accepts it with probability p(x), which is exact; fuzzy rules compare p with
that one-hot q.
"""

NGRAM = "ngram"  # the draft spec that asks for it
MAX_NGRAM = 3
MIN_MATCH = 2  # a match of the last token alone is found often and proposes noise


def lookup(ids: list[int], k: int, longest: int = MAX_NGRAM) -> tuple[list[int], int]:
    """The at most `k` tokens that followed the latest earlier occurrence of the last n tokens of
    `ids`, and n (0 and no tokens when not even the last token occurred before)."""
    for n in range(min(longest, len(ids) - 1), 0, -1):
        tail = ids[-n:]
        for start in range(len(ids) - n - 1, -1, -1):
            if ids[start:start + n] == tail:
                return ids[start + n:start + n + k], n
    return [], 0


def proposal(ids: list[int], k: int) -> tuple[list[int], int]:
    """What the lookup proposes: `lookup`'s tokens where at least MIN_MATCH tokens matched, and
    that n (else nothing, and 0)."""
    tokens, matched = lookup(ids, k) if k > 0 else ([], 0)
    return (tokens, matched) if matched >= MIN_MATCH else ([], 0)


class PromptLookup:
    """A prompt-lookup draft in the draft model's place; `matched` is the n of its last proposal
    (0: none, so the round is the target's step alone)."""

    def __init__(self):
        self.matched = 0

    def propose(self, ids: list[int], k: int) -> list[int]:
        tokens, self.matched = proposal(ids, k)
        return tokens
