"""A model plus its KV cache: ask for next-token logits of a sequence; the cache follows.

This is the only module that knows transformers' cache API. The cache always holds a prefix of
the sequence last asked about, so rolling back after a rejection is implicit: asking about a
sequence that shares a shorter prefix crops the cache to that prefix first.
"""

import torch
from transformers import DynamicCache

from ..errors import PlaygroundError
from .speed import forward_costs
from .speed.speed_account import Clock
from .token_tree import TokenTree, tree_attention, tree_positions


class KVRunner:
    """`head`, when given, replaces the model's output layer (e.g. a pruned draft head): it maps
    the last hidden states to logits. `tokens`, when given, is how many ids the tokenizer knows:
    logits past it belong to the padding rows of the output layer and are set to -inf, so padded
    ids have probability 0 everywhere and are never drawn. With `feature_layers` (a target a
    feature draft reads) it also keeps, per cached position, the inputs of those layers joined
    (`features`), from the same passes."""

    def __init__(self, model, name: str = "model", head=None, tokens: int | None = None,
                 feature_layers: list[int] | None = None):
        self.model = model
        self.name = name
        self.head = head
        self.tokens = tokens
        self.device = model.device
        self.cache = DynamicCache(config=model.config)
        self.ids: list[int | None] = []  # the tokens whose keys/values the cache holds (None: see logits_after)
        self.forwards = 0
        self.first_pass: float | None = None  # seconds of its first forward
        self.last_pass: tuple[int, float, float] | None = None  # (new tokens, wall, CPU) of its latest
        self._tree_base: int | None = None  # after tree_logits: where the tree's nodes start in the cache
        self.feature_layers = feature_layers
        self.features: torch.Tensor | None = None  # [cached positions, len(feature_layers) x width]

    @property
    def vocab_size(self) -> int:
        """How many rows its logits have."""
        return self.model.config.get_text_config().vocab_size

    @property
    def support(self) -> torch.Tensor | None:
        """The ids its logits can score (the rest are -inf: a pruned head's), None for all."""
        return None if self.head is None else self.head.token_ids

    def next_logits(self, sequence: list[int], positions: int = 1) -> torch.Tensor:
        """Logits [positions, vocab] predicting the token after each of the last `positions`
        prefixes of `sequence` (row -1 predicts the token after the whole sequence)."""
        keep = self._reusable(sequence, positions)
        new = sequence[keep:]
        logits = self._timed_forward(self._as_input(new), positions)
        self.ids = list(sequence)
        return logits

    def logits_after(self, token: torch.Tensor) -> torch.Tensor:
        """Logits [vocab] after the sequence last asked about plus `token`, an id still on the
        device (a draft's own sample): nothing waits for its value. Its place in `ids` is None,
        which matches no id, until `settle` names it."""
        logits = self._timed_forward(token.reshape(1, 1), 1)
        self.ids.append(None)
        return logits[-1]

    def settle(self, sequence: list[int]) -> None:
        """Name the ids that logits_after fed: the cache holds a prefix of `sequence`."""
        self.ids = list(sequence[:len(self.ids)])

    def tree_logits(self, sequence: list[int], tree: TokenTree) -> torch.Tensor:
        """Logits [1 + len(tree), vocab]: row 0 predicts the token after `sequence`, row 1 + i the
        token after node i's path, all from one forward with tree attention (token_tree.py). The
        cache holds every node until `keep_path` keeps the accepted ones."""
        keep = self._reusable(sequence, 1)
        context_new = len(sequence) - keep
        extra = {"attention_mask": tree_attention(tree, keep, context_new, self.model.dtype, self.device),
                 "position_ids": tree_positions(tree, keep, context_new, self.device)}
        logits = self._timed_forward(self._as_input(sequence[keep:] + tree.tokens), 1 + len(tree), **extra)
        self.ids = list(sequence) + tree.tokens
        self._tree_base = len(sequence)
        return logits

    def keep_path(self, nodes: list[int]) -> None:
        """After tree_logits: keep the context and these nodes (a path from the root down) in the
        cache, so that it holds the accepted sequence as if it had been decoded token by token."""
        base, self._tree_base = self._tree_base, None
        keep = base + _common_prefix(nodes, list(range(len(nodes))))  # nodes stored in place
        moved = [base + node for node in nodes[keep - base:]]
        if moved or len(self.ids) > keep:
            moved_rows = torch.tensor(moved, dtype=torch.long, device=self.device)
            _keep_positions(self.cache, keep, moved_rows)
            if self.features is not None:
                self.features = torch.cat([self.features[:keep], self.features.index_select(0, moved_rows)])
        self.ids = self.ids[:keep] + [self.ids[i] for i in moved]

    def _reusable(self, sequence: list[int], positions: int) -> int:
        """Crop the cache to what `sequence` can reuse, feeding at least `positions` tokens anew."""
        if self._tree_base is not None:  # a tree nobody settled: keep none of its nodes
            self.rollback(self._tree_base)
            self._tree_base = None
        keep = min(_common_prefix(self.ids, sequence), len(sequence) - positions)
        self.rollback(keep)
        return keep

    def _as_input(self, new: list[int]) -> torch.Tensor:
        return torch.tensor([new], device=self.device)

    def timed_step(self, sequence: list[int]) -> tuple[float, float] | None:
        """`ar`'s step where the cache stands: one forward over the next token of `sequence`, timed
        (wall, CPU seconds) and then rolled back, so the cache is as it was. None while a tree
        waits for `keep_path`, or where the cache holds ids it cannot name."""
        held = len(self.ids)
        if self._tree_base is not None or None in self.ids or not sequence:
            return None
        token = sequence[held] if held < len(sequence) else sequence[-1]
        clock = Clock()
        with torch.inference_mode():
            self._forward(self._as_input([token]), 1)
        timing = clock.read()
        self.cache.crop(-1)  # the one position it fed (transformers 5.x: a count to remove)
        if self.features is not None:
            self.features = self.features[:-1]
        return timing

    def _timed_forward(self, input_ids: torch.Tensor, positions: int, **extra) -> torch.Tensor:
        clock = Clock()
        with torch.inference_mode():
            logits = self._forward(input_ids, positions, **extra)
            if self.tokens is not None and self.tokens < logits.shape[-1]:
                logits[..., self.tokens:] = -torch.inf
        count_pass(self, input_ids.shape[-1], clock)
        return logits[0, -positions:]

    def _forward(self, input_ids: torch.Tensor, positions: int, **extra) -> torch.Tensor:
        if self.feature_layers:
            extra["output_hidden_states"] = True
        if self.head is None:
            out = self.model(input_ids=input_ids, past_key_values=self.cache, use_cache=True,
                             logits_to_keep=positions, **extra)
            logits = out.logits
        else:
            out = self.model.base_model(input_ids=input_ids, past_key_values=self.cache, use_cache=True, **extra)
            logits = self.head(out.last_hidden_state[:, -positions:])
        if self.feature_layers:
            self._keep_features(out.hidden_states)
        return logits

    def _keep_features(self, hidden_states) -> None:
        """hidden_states[i] is layer i's input: the fed positions' rows of `feature_layers` join the store."""
        new = torch.cat([hidden_states[i][0] for i in self.feature_layers], dim=-1)
        self.features = new if self.features is None else torch.cat([self.features, new])

    def rollback(self, length: int) -> None:
        """Drop cached positions past `length`."""
        excess = len(self.ids) - length
        if excess > 0:
            _ensure_croppable(self.cache, self.name)
            self.cache.crop(-excess)  # transformers 5.x: a negative count of tokens to remove
            self.ids = self.ids[:length]
            if self.features is not None:
                self.features = self.features[:length]


def count_pass(runner, tokens: int, clock: Clock) -> None:
    """Count a runner's forward over `tokens` new positions, timed by `clock`: its first pass, its
    latest (new tokens, wall, CPU), how many, and the model's recorded costs."""
    wall, cpu = clock.read()
    forward_costs.record(runner.model, tokens, wall, cpu)
    if runner.first_pass is None:
        runner.first_pass = wall
    runner.last_pass = (tokens, wall, cpu)
    runner.forwards += 1


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _keep_positions(cache: DynamicCache, keep: int, moved: torch.Tensor) -> None:
    """Keep the first `keep` cached positions of every layer, followed by positions `moved`."""
    for layer in cache.layers:
        layer.keys = torch.cat([layer.keys[..., :keep, :], layer.keys.index_select(-2, moved)], dim=-2)
        layer.values = torch.cat([layer.values[..., :keep, :], layer.values.index_select(-2, moved)], dim=-2)


def _ensure_croppable(cache: DynamicCache, name: str) -> None:
    if not getattr(cache, "is_croppable", True):
        raise PlaygroundError(
            f"{name}: its KV cache (sliding-window or linear-attention layers) cannot roll back "
            "exactly; choose a model with full attention for speculative decoding")


def check_rollback_support(model, name: str) -> None:
    """Refuse models whose cache cannot be cropped, before any generation starts."""
    _ensure_croppable(DynamicCache(config=model.config), name)
