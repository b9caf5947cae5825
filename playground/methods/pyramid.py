"""PyramidSD (Byun et al., "3-Model Speculative Decoding", seed 002): a draft D, a qualifier Q and a
target T sharing one tokenizer. Stage 1: D drafts l_D tokens and Q verifies them, repeated until
l_Q tokens are collected; stage 2: T verifies the collected tokens in one forward (Figure 1).

- psd-f (PSD_F, Section 3.2): stage 1 accepts iff Div(P_Q, P_D) <= tau_Q, stage 2 accepts iff
  Div(P_T, P_Q) <= tau_T; a rejection samples the verifier's own distribution.
- psd-a (PSD_A, Section 3.4): stage 1 uses assisted decoding in place of tau_Q: Q draws its own
  token y ~ r and keeps the draft token only if it equals y, else emits y, so every collected
  token is a draw from r ("samples directly from the qualifier's distribution"). The standard SD
  rule with the residual norm(max(0, r - q)), also exact for r, is the option
  `assisted_rule = "residual"`. Stage 2 as in psd-f.

No public code exists for the paper; each rule below cites the section it implements. Names:
`q` the draft's distribution, `r` the qualifier's, `p` the target's (docs/rules.md, "PyramidSD"
says how each stage verifies a token tree).
"""

import time
from dataclasses import dataclass, field, replace

import torch

from ..decoding.speed.cost_model import predicted_throughput
from ..decoding.step import STAGE_ONE_RECORD
from .base import Decoding, Method
from .drafting import Drafted, chain, draft_tree
from .evidence import Pending
from .fuzzy import DIVERGENCE_DRAFT
from .rules import DivergenceThreshold, OwnDrawMatch, ResidualRatio
from .walk import Walk, timed_round, verify

STAGE_ONE = ("qualifier", "draft")  # (verifier, proposer) of each stage
STAGE_TWO = ("target", "qualifier")


@dataclass
class Collected:
    """Stage-1 output: the tokens Q passes on, each with the qualifier rows T compares against.

    Figure 1: "P_MD is replaced with P_MQ in target comparison". `r` holds, per token, the
    distribution Q kept or drew it from (the residual for a correction of psd-a's `residual`
    rule); `r_raw` Q's raw (temperature-1) row there, which the divergences compare.
    """

    tokens: list[int] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)
    r: list[torch.Tensor] = field(default_factory=list)
    r_raw: list[torch.Tensor] = field(default_factory=list)
    checks: list[dict] = field(default_factory=list)  # stage-1 record of each token
    trees: list[dict] = field(default_factory=list)  # each stage-1 round's tree, path and count of checks
    evidence: list[Pending] = field(default_factory=list)  # Q's checks, positions in the block
    drafted: int = 0  # D -> Q candidates
    accepted: int = 0  # D -> Q candidates Q accepted
    rounds: int = 0  # Q forwards
    draft_forwards: int = 0
    draft_seconds: float = 0.0
    qualifier_seconds: float = 0.0

    def add(self, walk: Walk, room: int) -> None:
        """A stage-1 walk's tokens, at most `room` of them (Q's bonus only while there is room)."""
        offset = len(self.tokens)
        self.evidence += [replace(check, position=check.position + offset) for check in walk.evidence]
        for record, (row, raw) in list(zip(walk.records, walk.rows))[:room]:
            self.tokens.append(record.id)
            self.origins.append(record.origin)
            self.r.append(row)
            self.r_raw.append(raw)
            self.checks.append({key: value for key, value in record.to_dict().items()
                                if key not in ("id", "text", "origin")})
        self.accepted += len(walk.path)


def threshold(ctx: Decoding, tau: float) -> DivergenceThreshold:
    """Section 3.2: accept iff Div(verifier, proposer) <= tau (inclusive, as the paper writes it;
    FSD's own rule is strict). On rejection the verifier's own distribution is sampled."""
    return DivergenceThreshold(ctx.config.divergence, tau, "<=")


def _stage_one(ctx: Decoding, block: int, rule) -> Collected:
    """D drafts l_D tokens (a token tree when tree_width > 1), Q verifies them in one forward;
    repeat until `block` tokens are collected (Figure 1)."""
    collected = Collected()
    while len(collected.tokens) < block:
        prefix = ctx.ids + collected.tokens
        done = timed_round(lambda: draft_tree(replace(ctx, ids=prefix), ctx.draft,
                                              min(ctx.config.draft_length, block - len(collected.tokens))),
                           lambda drafted: verify(ctx, drafted, rule, prefix, roles=STAGE_ONE))
        drafted, walk = done.drafted, done.walk
        collected.trees.append({"tokens": list(drafted.tree.tokens), "parents": list(drafted.tree.parents),
                                "path": list(walk.path), "checks": len(walk.evidence)})
        collected.add(walk, block - len(collected.tokens))
        collected.drafted += len(drafted)
        collected.draft_forwards += drafted.draft_forwards
        collected.rounds += 1
        collected.draft_seconds += done.draft_seconds
        collected.qualifier_seconds += done.verify_seconds
    return collected


def _stage_two(ctx: Decoding, collected: Collected, rule) -> tuple[Drafted, Walk]:
    """T verifies the collected tokens in one forward against Q's distributions (Section 3.2,
    Div(P_T, P_Q) <= tau_T); if all pass, T adds its bonus token. A kept token's record carries
    its stage-1 record as `qualifier_check`."""
    drafted = chain(collected.tokens, collected.r, collected.r_raw, origins=collected.origins,
                    notes=[{STAGE_ONE_RECORD: check} for check in collected.checks], forwards=0)
    return drafted, verify(ctx, drafted, rule, ctx.ids, roles=STAGE_TWO)


def pyramid_steps(ctx: Decoding, stage_one_rule):
    """Each step carries both stages' evidence: Q's checks of the draft, then T's of the block."""
    while ctx.remaining() > 0:
        collected = _stage_one(ctx, ctx.block_size(ctx.config.qualifier_length), stage_one_rule)
        verify_start = time.perf_counter()
        drafted, walk = _stage_two(ctx, collected, threshold(ctx, ctx.config.tau_t))
        walk.evidence = collected.evidence + walk.evidence
        yield walk.step(drafted,
                        draft_seconds=collected.draft_seconds + collected.qualifier_seconds,
                        verify_seconds=time.perf_counter() - verify_start,
                        forwards={ctx.draft.name: collected.draft_forwards, ctx.qualifier.name: collected.rounds,
                                  ctx.target.name: 1},
                        extra={"qualifier_drafted": collected.drafted, "qualifier_accepted": collected.accepted,
                               "qualifier_rounds": collected.rounds, "qualifier_trees": collected.trees,
                               "draft_model_seconds": collected.draft_seconds,
                               "qualifier_model_seconds": collected.qualifier_seconds})


def pyramid_fuzzy(ctx: Decoding):
    yield from pyramid_steps(ctx, threshold(ctx, ctx.config.tau_q))


# Section 3.4 (PSD_A): Q draws its own token y ~ r (argmax r when greedy) and keeps the draft
# token iff it equals y, else emits y; or the SD rule with the residual. Both emit exactly a draw
# from r at stage 1 (the paper's "quality floor matching M_Q"); greedy, they coincide.
ASSISTED_RULES = {"sample-qualifier": OwnDrawMatch, "residual": ResidualRatio}


def pyramid_assisted(ctx: Decoding):
    yield from pyramid_steps(ctx, ASSISTED_RULES[ctx.config.assisted_rule]())


def model_speeds(steps) -> dict[str, float | None]:
    """Forwards per second of each model over a PyramidSD run's steps. D runs one forward per
    token; Q and T run verification forwards over l_D + 1 and l_Q + 1 positions, which on a
    memory-bound device cost about one decoding forward (the model's assumption)."""
    seconds = {"draft": sum(s.extra.get("draft_model_seconds", 0.0) for s in steps),
               "qualifier": sum(s.extra.get("qualifier_model_seconds", 0.0) for s in steps),
               "target": sum(s.verify_seconds for s in steps)}
    forwards = {role: sum(s.forwards.get(role, 0) for s in steps) for role in seconds}
    return {role: forwards[role] / seconds[role] if forwards[role] and seconds[role] else None
            for role in seconds}


def _predicted_psd(beta_qd, beta_tq, l_d: int, l_q: int, speeds: dict, expectation: str) -> float | None:
    """V_PSD from V_FSD_QD, nesting the two stages as Section 3.3 does."""
    if beta_qd is None or beta_tq is None or not all(speeds.values()):
        return None
    v_fsd_qd = predicted_throughput(beta_qd, l_d, speeds["draft"], speeds["qualifier"], expectation)
    return predicted_throughput(beta_tq, l_q, v_fsd_qd, speeds["target"], expectation)


def pyramid_summary(run) -> dict:
    """Run-level figures of a psd-f / psd-a run: the two stages' acceptance rates, per-model
    speeds, and the throughput Section 3.3 predicts from them beside the measured one."""
    drafted_qd = sum(s.extra.get("qualifier_drafted", 0) for s in run.steps)
    accepted_qd = sum(s.extra.get("qualifier_accepted", 0) for s in run.steps)
    beta_qd = accepted_qd / drafted_qd if drafted_qd else None
    beta_tq = run.stats.acceptance_rate
    speeds = model_speeds(run.steps)
    l_d, l_q = run.config.draft_length, run.config.qualifier_length
    account = run.stats.account
    method_seconds = account.drafting + account.passes + account.checks
    return {"beta_qd": beta_qd, "beta_tq": beta_tq, "draft_length": l_d, "qualifier_length": l_q,
            "tokens_per_second_by_model": speeds,
            "predicted_tokens_per_second": _predicted_psd(beta_qd, beta_tq, l_d, l_q, speeds, "paper"),
            "predicted_tokens_per_second_leviathan": _predicted_psd(beta_qd, beta_tq, l_d, l_q, speeds,
                                                                    "leviathan"),
            "measured_tokens_per_second": run.stats.tokens / method_seconds if method_seconds else None}


_ROLES = ("target", "draft", "qualifier")
_OPTIONS = ("draft_length", "qualifier_length", "tau_t", "divergence", "draft_sampling")
PSD_F = Method("psd-f", pyramid_fuzzy,
               "PyramidSD fuzzy: qualifier filters drafts (Div <= tau_q), target checks (Div <= tau_t)",
               roles=_ROLES, options=("tau_q", *_OPTIONS), lossless=False, divergence_on_draft=True,
               defaults=DIVERGENCE_DRAFT)
PSD_A = Method("psd-a", pyramid_assisted,
               "PyramidSD assisted: the qualifier's own sample checks each draft token (assisted_rule), "
               "fuzzy qualifier->target (Div <= tau_t)",
               roles=_ROLES, options=(*_OPTIONS, "assisted_rule"), lossless=False)
