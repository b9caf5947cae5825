"""Token-level intersection (TLI, seed 004 Algorithm 4): the drafter samples only tokens whose
string is also a target token (its distribution renormalized onto T ∩ D), its distributions are
moved onto target-vocabulary rows, and the standard SD loop verifies them unchanged. Lossless,
and it accepts at least as often as drafting over the union (Algorithm 1; Theorem 4.1)."""

import torch

from ...errors import PlaygroundError
from ...sampling import raw_probs
from ...step import Step
from ...vocabulary import Intersection, intersection, token_strings
from ..base import Decoding, Method
from ..speculative import Drafted, sd_check, speculative_steps
from .common import draft_probs, pair_figures
from .context import DraftContext


def shared_vocabulary(ctx: Decoding) -> Intersection:
    shared = intersection(ctx.target_tokenizer, ctx.draft_tokenizer)
    if not len(shared):
        raise PlaygroundError("tli: the target and draft vocabularies share no token string; use slem")
    return shared


def draft_on_intersection(ctx: Decoding, context: DraftContext, shared: Intersection, k: int,
                          rows: int) -> tuple[Drafted, list[int]]:
    """Draft k tokens restricted to T ∩ D. Returns them as target ids with their distributions on
    target rows (what SD verifies), and as draft ids (what the drafter's context continues with)."""
    target_ids, draft_ids, qs, q_raws = [], [], [], []
    for _ in range(k):
        logits = shared.draft_logits_on_target(ctx.draft.next_logits(context.ids + draft_ids)[-1], rows)
        q = draft_probs(ctx, logits)
        target_ids.append(ctx.sampler.draw(q))
        draft_ids.append(shared.draft_id(target_ids[-1]))
        qs.append(q)
        q_raws.append(raw_probs(logits))
        if ctx.doubts(q_raws[-1], target_ids[-1]):
            break
    empty = torch.empty(0, rows, device=ctx.target.device)
    return Drafted(target_ids, torch.stack(qs) if qs else empty, torch.stack(q_raws) if q_raws else empty), draft_ids


class IntersectionDrafter:
    """The `drafter` of the SD loop for tli: keeps the drafter's own context in step with the
    target's text, and remembers which draft tokens it proposed."""

    def __init__(self, ctx: Decoding):
        self.shared, self.strings = shared_vocabulary(ctx), token_strings(ctx.draft_tokenizer)
        self.rows = ctx.target.model.config.vocab_size
        self.context, self.draft_ids, self.resynced = DraftContext(ctx), [], 0

    def __call__(self, ctx: Decoding, k: int) -> Drafted:
        self.resynced = self.context.sync(ctx.ids, [([d], self.strings[d]) for d in self.draft_ids])
        drafted, self.draft_ids = draft_on_intersection(ctx, self.context, self.shared, k, self.rows)
        return drafted

    def annotate(self, step: Step) -> None:
        """Which draft token each kept candidate was, and the string figures of the step."""
        kept = self.draft_ids[:step.accepted]
        for record, draft_id in zip(step.tokens, kept):
            record.diagnostics.update(draft_tokens=[draft_id], draft_text=self.strings[draft_id])
        step.extra.update(chars_accepted=sum(len(self.strings[d]) for d in kept),
                          draft_pieces=[self.strings[d] for d in self.draft_ids], draft_resync_chars=self.resynced)


def tli_steps(ctx: Decoding):
    drafter = IntersectionDrafter(ctx)
    pair = pair_figures(ctx, **drafter.shared.shares())
    for step in speculative_steps(ctx, sd_check(ctx), drafter):
        drafter.annotate(step)
        step.pair, pair = pair, None  # on the first step only
        yield step


TLI = Method("tli", tli_steps, "heterogeneous vocabularies: draft restricted to shared tokens, then "
             "standard SD (seed 004, Alg. 4)", vocabulary="any", options=("candidates", "draft_sampling"))
