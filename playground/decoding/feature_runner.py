"""A feature draft as a run drafts with it (docs/rules.md "Feature drafts"): the same calls as
a draft model's KVRunner (next_logits, logits_after, settle), so every method's drafting and walk
take it unchanged.

Its cache holds one entry per position t, made from the target's features at t (the inputs of the
head's three layers, which the target's runner keeps from its own passes: no second target
forward) and the embedding of token t+1. A drafted token's entry is made from the head's own
output instead, since the target has not read that token yet; those entries go at the next
round, when the target's features for the accepted tokens replace them. Logits come over the
target's vocabulary: the head's draft vocabulary (`support`) in place (`d2t`), -inf elsewhere
(q = 0).
"""

import torch

from .cache import KVRunner, _common_prefix, count_pass
from .speed.speed_account import Clock


class FeatureRunner:
    def __init__(self, head, target: KVRunner, embedding, name: str = "draft"):
        self.model, self.target, self.embedding, self.name = head, target, embedding, name
        self.device = head.device
        self.head = None  # no pruned output layer: the head's vocabulary is its own
        self.ids: list[int] = []  # the tokens the target-feature entries were made with (token t+1 at entry t)
        self.keys = self.values = None
        self.output: torch.Tensor | None = None  # the last entry's output feature
        self.forwards, self.first_pass, self.last_pass = 0, None, None
        self.read: dict = {}  # what this round's drafting read, for the round's record
        self.read_prompt = False  # read_context had the target read the prompt for this round
        self.support = head.target_ids(torch.arange(head.config.draft_vocab_size, device=self.device))

    @property
    def vocab_size(self) -> int:
        return self.model.config.vocab_size

    def read_context(self, sequence: list[int]) -> bool:
        """Have the target read what it has not of `sequence` but its last token (the prompt, in a
        run's first round: its verification pass then reuses it); whether it had to."""
        unread = _common_prefix(self.target.ids, sequence) < len(sequence) - 1
        if unread:
            self.target.next_logits(sequence[:-1])
        self.read_prompt = unread
        return unread

    def next_logits(self, sequence: list[int], positions: int = 1) -> torch.Tensor:
        """Logits [1, vocab] for the token after `sequence` (a draft asks for one position)."""
        unread = self.read_context(sequence) or self.read_prompt
        self.read_prompt = False
        keep = min(_common_prefix(self.ids, sequence[1:]), len(sequence) - 2)
        start, end = keep, len(sequence) - 1
        self.read = {"layers": self.model.layer_ids, "target_positions": end - start, "own_features": 0,
                     "target_read_prompt": unread}
        features = self.model.fuse(self.target.features[start:end].to(self.model.dtype))[None]
        logits = self._step(features, sequence[start + 1:end + 1], start, keep)
        self.ids = list(sequence[1:])
        return logits[None]

    def logits_after(self, token: torch.Tensor) -> torch.Tensor:
        """Logits [vocab] after the last position plus `token` (a drafted one, still on the device):
        the entry reads the head's own output feature."""
        position = self.keys.shape[2]
        self.read["own_features"] += 1
        return self._step(self.output, token.reshape(1), position, position)

    def settle(self, sequence: list[int]) -> None:
        """The drafted entries need no name: the next round drops them."""

    def _step(self, features, tokens, start: int, keep: int) -> torch.Tensor:
        """Entries for positions start.. (the cache kept to `keep` entries first) -> the last one's logits."""
        clock = Clock()
        token_ids = torch.as_tensor(tokens, device=self.device).reshape(1, -1)
        positions = torch.arange(start, start + token_ids.shape[1], device=self.device)[None]
        past = (self.keys[:, :, :keep], self.values[:, :, :keep]) if self.keys is not None and keep else (None, None)
        with torch.inference_mode():
            output, keys, values = self.model(features, self.embedding(token_ids).to(features.dtype), positions, *past)
            scores = self.model.logits(output[:, -1])[0]
            logits = torch.full((self.vocab_size,), -torch.inf, dtype=scores.dtype, device=self.device)
            logits[self.support] = scores
        self.keys = keys if past[0] is None else torch.cat([past[0], keys], dim=2)
        self.values = values if past[1] is None else torch.cat([past[1], values], dim=2)
        self.output = output[:, -1:]
        count_pass(self, token_ids.shape[1], clock)
        return logits
