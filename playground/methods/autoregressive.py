"""The two reference points: the target alone and the draft alone, one token per step."""

import time

from ..decoding.sampling import raw_probs
from ..decoding.step import Step, TokenRecord
from .base import Decoding, Method


def _one_model_steps(ctx: Decoding, runner, origin: str):
    while ctx.remaining() > 0:
        start = time.perf_counter()
        logits = runner.next_logits(ctx.ids)[-1]
        probs = ctx.sampler.probs(logits)
        token = ctx.sampler.draw(probs)
        record = TokenRecord(token, origin, diagnostics={f"p_{origin}": float(probs[token]),
                                                         f"p_{origin}_raw": float(raw_probs(logits)[token])})
        seconds = time.perf_counter() - start
        timing = {"verify_seconds": seconds} if origin == "target" else {"draft_seconds": seconds}
        yield Step([record], forwards={runner.name: 1}, **timing)


def target_only(ctx: Decoding):
    yield from _one_model_steps(ctx, ctx.target, "target")


def draft_only(ctx: Decoding):
    yield from _one_model_steps(ctx, ctx.draft, "draft")


AR = Method("ar", target_only, "autoregressive decoding with the target alone (the reference)",
            roles=("target",), levers=())
DRAFT_ONLY = Method("draft-only", draft_only, "the draft model alone (the other reference point)",
                    roles=("draft",), levers=(), lossless=False)
