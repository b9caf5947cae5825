"""Token-level intersection (TLI, seed 004 Algorithm 4): the drafter samples only tokens whose
string is also a target token (its distribution renormalized onto T ∩ D), its distributions are
moved onto target-vocabulary rows, and standard SD's walk verifies them unchanged, chain or tree. Lossless,
and it accepts at least as often as drafting over the union (Algorithm 1; Theorem 4.1)."""

import torch

from ...decoding.vocabulary import Intersection, intersection, token_strings
from ...errors import PlaygroundError
from ..base import Decoding, Method
from ..drafting import Drafted, draft_tree
from ..rules import ResidualRatio
from ..standard import SD_OPTIONS
from ..walk import rounds
from .common import pair_figures
from .context import DraftContext


def shared_vocabulary(ctx: Decoding) -> Intersection:
    shared = intersection(ctx.target_tokenizer, ctx.draft_tokenizer)
    if not len(shared):
        raise PlaygroundError("tli: the target and draft vocabularies share no token string; use slem")
    return shared


class OnIntersection:
    """The draft runner as drafting.py sees it: in the target's vocabulary. It continues the
    drafter's own context (DraftContext), maps each drafted target id to its draft id on the
    device, and returns the draft's logits on target rows, -inf outside T ∩ D, so that any
    softmax of them is q renormalized onto the intersection (Algorithm 4)."""

    def __init__(self, runner, context: DraftContext, shared: Intersection, rows: int):
        self.runner, self.context, self.shared, self.vocab_size = runner, context, shared, rows
        self.device, self.name = runner.device, runner.name
        self.to_draft = torch.zeros(rows, dtype=torch.long, device=runner.device)
        self.to_draft[shared.target_ids.to(runner.device)] = shared.draft_ids.to(runner.device)
        self.draft_id = self.to_draft.tolist()  # the same map, on the host
        self.context_length = 0

    def next_logits(self, target_ids: list[int]) -> torch.Tensor:
        self.context_length = len(target_ids)
        return self._on_target(self.runner.next_logits(self.context.ids)[-1])[None]

    def logits_after(self, token: torch.Tensor) -> torch.Tensor:
        return self._on_target(self.runner.logits_after(self.to_draft[token]))

    def settle(self, target_ids: list[int]) -> None:
        self.runner.settle(self.context.ids + [self.draft_id[t] for t in target_ids[self.context_length:]])

    def _on_target(self, draft_logits: torch.Tensor) -> torch.Tensor:
        return self.shared.draft_logits_on_target(draft_logits, self.vocab_size)


class IntersectionDrafter:
    """The `drafter` of tli's walk: keeps the drafter's own context in step with the target's
    text, drafts its tree on T ∩ D, and notes which draft token each node was."""

    def __init__(self, ctx: Decoding):
        self.shared, self.strings = shared_vocabulary(ctx), token_strings(ctx.draft_tokenizer)
        self.context, self.proposed, self.resynced = DraftContext(ctx), [], 0
        self.runner = OnIntersection(ctx.draft, self.context, self.shared, ctx.target.vocab_size)

    def __call__(self, ctx: Decoding, k: int) -> Drafted:
        self.resynced = self.context.sync(ctx.ids, [([d], self.strings[d]) for d in self.proposed])
        drafted = draft_tree(ctx, self.runner, k)
        for token, note, looked_up in zip(drafted.tree.tokens, drafted.notes, drafted.from_lookup):
            if not looked_up:  # a lookup branch's node is the target's own token, not the drafter's
                d = self.runner.draft_id[token]
                note.update(draft_tokens=[d], draft_text=self.strings[d])
        chain = drafted.tree.tokens[:drafted.draft_forwards]  # what the drafter's cache holds
        self.proposed = [self.runner.draft_id[token] for token in chain]
        return drafted


def tli_steps(ctx: Decoding):
    drafter = IntersectionDrafter(ctx)
    pair = pair_figures(ctx, **drafter.shared.shares())
    for step in rounds(ctx, ResidualRatio(), drafter):
        kept = [token.diagnostics["draft_text"] for token in step.tokens if "draft_text" in token.diagnostics]
        step.extra.update(chars_accepted=sum(map(len, kept)), draft_resync_chars=drafter.resynced,
                          draft_pieces=[drafter.strings[d] for d in drafter.proposed])
        step.pair, pair = pair, None  # on the first step only
        yield step


TLI = Method("tli", tli_steps, "heterogeneous vocabularies: draft restricted to shared tokens, then "
             "standard SD (seed 004, Alg. 4)", vocabulary="any", options=SD_OPTIONS)
