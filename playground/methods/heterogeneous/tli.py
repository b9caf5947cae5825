"""Token-level intersection (TLI, seed 004 Algorithm 4): the drafter samples only tokens whose
string is also a target token (its distribution renormalized onto T ∩ D), its distributions are
moved onto target-vocabulary rows, and standard SD verifies them unchanged. Lossless, and it
accepts at least as often as drafting over the union (Algorithm 1; Theorem 4.1)."""

import time

import torch

from ...errors import PlaygroundError
from ...sampling import raw_probs
from ...step import Step
from ...vocabulary import Intersection, intersection, token_strings
from ..base import Decoding, Method
from ..speculative import Drafted, bonus_record, sd_check, verify_block
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
    empty = torch.empty(0, rows, device=ctx.target.device)
    return Drafted(target_ids, torch.stack(qs) if qs else empty, torch.stack(q_raws) if q_raws else empty), draft_ids


def tli_steps(ctx: Decoding):
    shared, strings = shared_vocabulary(ctx), token_strings(ctx.draft_tokenizer)
    rows = ctx.target.model.config.vocab_size
    context, proposed, extra = DraftContext(ctx), [], {**pair_figures(ctx), **shared.shares()}
    while ctx.remaining() > 0:
        resynced = context.sync(ctx.ids, proposed)
        k = ctx.block_size(ctx.config.candidates)
        start = time.perf_counter()
        drafted, draft_ids = draft_on_intersection(ctx, context, shared, k, rows)
        drafted_at = time.perf_counter()
        logits = ctx.target.next_logits(ctx.ids + drafted.tokens, positions=k + 1)
        p, p_raw = ctx.sampler.probs(logits), raw_probs(logits)
        records, flags = verify_block(ctx, drafted, p, p_raw, sd_check(ctx))
        if all(flags):
            records.append(bonus_record(ctx, p[k], k))
        accepted = sum(flags)
        for record, draft_id in zip(records[:accepted], draft_ids):
            record.diagnostics.update(draft_tokens=[draft_id], draft_text=strings[draft_id])
        yield Step(records, drafted=k, accepted=accepted, accepted_flags=flags,
                   draft_seconds=drafted_at - start, verify_seconds=time.perf_counter() - drafted_at,
                   forwards={ctx.draft.name: k, ctx.target.name: 1},
                   extra={**extra, "chars_accepted": sum(len(strings[d]) for d in draft_ids[:accepted]),
                          "draft_resync_chars": resynced})
        proposed, extra = [([d], strings[d]) for d in draft_ids[:accepted]], {}


TLI = Method("tli", tli_steps, "heterogeneous vocabularies: draft restricted to shared tokens, then "
             "standard SD (seed 004, Alg. 4)", vocabulary="any", options=("candidates", "draft_sampling"))
