"""Calibrated speculative decoding (CSD; seed 003, Algorithm 1) and the paper's two ablations.

Standard SD, plus a rescue attempt at each rejection: the Online Correction Memory (OCM) says
whether the pair (rejected draft token x~, correction t*) is frequent, Semantic Consistency Gating
(SCG) whether the target finds x~ plausible next to t*. A rescued x~ is kept (origin `rescued`)
and verification goes on with the next candidate. No public code exists for the paper; each rule
below cites its line of Algorithm 1 or its equation.

Until a rescue happens, csd draws random numbers exactly as sd does, so lambda = inf is sd.
"""

import math

from .acceptance import Rescue
from .base import Decoding, Method
from .correction_memory import CorrectionMemory, load_memory
from .rules import ResidualRatio
from .standard import SD_OPTIONS
from .walk import rounds

# Which conditions a rescue needs (Algorithm 1, line 19, and the ablations of Section 5.4).
RESCUE_RULES = {
    "csd": lambda is_freq, is_safe: is_freq and is_safe,
    "csd-memory": lambda is_freq, is_safe: is_freq,  # "SD w/ OCM"
    "csd-gate": lambda is_freq, is_safe: is_safe,  # "SD w/ SCG", the static "Lossy SD"
}


def run_memory(ctx: Decoding) -> CorrectionMemory:
    """The memory this run reads and updates, kept in ctx.state: the file named by
    `config.memory` (refused if built for another model pair), else the one the caller gave
    (`stream(correction_memory=...)`), else a fresh one."""
    if "correction_memory" not in ctx.state:
        specs = ctx.state.get("model_specs", {})
        target, draft = specs.get("target", ""), specs.get("draft", "")
        if ctx.config.memory:
            memory = load_memory(ctx.config.memory, target, draft)
        else:
            memory = ctx.state.get("given_memory") or CorrectionMemory(target, draft)
        ctx.state["correction_memory"] = memory
    return ctx.state["correction_memory"]


def rescue_decision(ctx: Decoding, memory: CorrectionMemory, rescue):
    """`decide(x~, t*, p_raw(x~), p_raw(t*), ratio_test) -> (rescued, diagnostics, test)` after the
    SD ratio rejected the draft token x~ and drew t* (lines 15-20), updating the memory (line 18).
    The raw probabilities come read with the round's other checks: a rescue waits for nothing."""
    log_tau = math.log(ctx.config.gate_tau) if ctx.config.gate_tau > 0 else -math.inf

    def decide(token: int, t_star: int, p_candidate_raw: float, p_correction_raw: float, ratio_test):
        memory_count = memory.count(token, t_star)
        is_freq = memory_count >= ctx.config.lambda_  # line 16: T[(x~_i, t*)] >= lambda
        # line 17 in logit space (Eq. 3): z(x~_i) - z(t*) >= log tau, at temperature 1
        logit_gap = _log(p_candidate_raw) - _log(p_correction_raw)
        is_safe = logit_gap >= log_tau
        memory.update(token, t_star)  # line 18, rescued or not
        diagnostics = {"correction": t_star, "memory_count": memory_count, "lambda": ctx.config.lambda_,
                       "is_freq": is_freq, "logit_gap": logit_gap, "p_candidate_raw": p_candidate_raw,
                       "p_correction_raw": p_correction_raw, "gate_ratio": math.exp(logit_gap),
                       "gate_tau": ctx.config.gate_tau, "is_safe": is_safe}
        rescued = rescue(is_freq, is_safe)
        test = Rescue(ratio_test, memory_count, ctx.config.lambda_, is_freq, p_candidate_raw, p_correction_raw,
                      ctx.config.gate_tau, is_safe, rescued)
        return rescued, diagnostics, test
    return decide


def _log(probability: float) -> float:
    return math.log(probability) if probability > 0 else -math.inf


def _calibrated(rule: str):
    def run(ctx: Decoding):
        memory = run_memory(ctx)
        # sd's loop; the rescue tries the draft's own token of a node whose children were all rejected
        for step in rounds(ctx, ResidualRatio(), rescue=rescue_decision(ctx, memory, RESCUE_RULES[rule])):
            step.extra["rescued"] = sum(token.origin == "rescued" for token in step.tokens)
            step.extra["memory_rejections"] = memory.total
            yield step
    return run


CSD = Method("csd", _calibrated("csd"),
             "calibrated SD: rescue a rejected draft token if the pair is frequent and the target finds it plausible",
             options=(*SD_OPTIONS, "lambda_", "gate_tau", "memory"), lossless=False,
             drafts_by_lookup=True)
CSD_MEMORY = Method("csd-memory", _calibrated("csd-memory"),
                    "CSD ablation, SD + correction memory only: rescue frequent rejection pairs",
                    options=(*SD_OPTIONS, "lambda_", "memory"), lossless=False,
                    drafts_by_lookup=True)
CSD_GATE = Method("csd-gate", _calibrated("csd-gate"),
                  "CSD ablation, SD + gating only (static lossy SD): rescue if p(draft)/p(correction) >= gate_tau",
                  options=(*SD_OPTIONS, "gate_tau"), lossless=False, drafts_by_lookup=True)
