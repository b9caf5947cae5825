"""Step mode: one verification round at a time, explained.

The step stream carries each candidate's p(x), q(x) and verdict but not whole distributions, so
`explain_step` recomputes p and q at the checked positions with one plain forward of the target
and one of the draft over context + candidates, processed with the run's sampling settings.
`Toy` is the seed-001 worked example (p = [0.6, 0.3, 0.1], q = [0.4, 0.4, 0.2] over A, B, C).
"""

import random
from dataclasses import dataclass, field

import torch

from ..sampling import Sampler, residual
from .family import relation

TOP = 8  # tokens shown per distribution


@dataclass
class Candidate:
    position: int
    token: int
    accepted: bool
    diagnostics: dict
    p: float | None = None  # p(x) and q(x) under the run's sampling settings, when recomputed
    q: float | None = None


@dataclass
class Explanation:
    """What one round did, ready to show: candidates with verdicts, emitted tokens with reasons,
    and per checked position the top tokens of p, q and the residual (None without a draft)."""

    drafted: int
    candidates: list[Candidate]
    emitted: list[tuple[int, str, str]]  # (token id, origin, why)
    distributions: list[dict] = field(default_factory=list)  # per position: name -> {token: prob}


def checked_candidates(step) -> list[Candidate]:
    out = []
    for token in step.tokens:
        d = token.diagnostics
        if "position_in_block" not in d or d.get("bonus"):
            continue
        rejected = d.get("rejected_candidate")
        out.append(Candidate(d["position_in_block"], token.id if rejected is None else rejected,
                             rejected is None, d))
    return out


def reason(token) -> str:
    d = token.diagnostics
    if d.get("bonus"):
        return "bonus: every candidate was accepted, so the target's next distribution gives one more token"
    if "rejected_candidate" in d:
        return "correction: the candidate was rejected, so this token was sampled by the verifier instead"
    if token.origin == "rescued":
        return "rescued: rejected, but the correction memory and gate put the draft token back"
    if "position_in_block" in d:
        return f"accepted {token.origin} candidate"
    return f"sampled by the {token.origin} model alone"


@torch.no_grad()
def _probs(model, ids: list[int], positions: int, sampler: Sampler) -> torch.Tensor:
    logits = model(torch.tensor([ids], device=model.device)).logits[0, -positions:]
    return sampler.probs(logits)


def _top(probs: torch.Tensor, decode) -> dict[str, float]:
    values, ids = probs.topk(min(TOP, probs.shape[-1]))
    return {f"{decode(int(i))!r} ({int(i)})": float(v) for v, i in zip(values, ids) if v > 0}


def distributions(models: dict, context: list[int], candidates: list[Candidate], config, decode) -> list[dict]:
    """Top tokens of p (target) and of what the target verified against (the qualifier's r in
    PyramidSD, else the draft's q) at each checked position, and of the residual
    norm(max(0, p - q)) where the SD rule was used; fills in each candidate's p(x) and q(x).
    Empty when the two models do not share a vocabulary (their distributions do not compare)."""
    proposer = "qualifier" if "qualifier" in models else "draft"
    if not candidates or "target" not in models or proposer not in models:
        return []
    if relation({"target": models["target"], proposer: models[proposer]}) != "same":
        return []
    sequence, n = context + [c.token for c in candidates], len(candidates)
    sampler = Sampler(config.temperature, config.top_k, config.top_p)
    p = _probs(models["target"].model, sequence, n + 1, sampler)[:n]
    q = _probs(models[proposer].model, sequence, n + 1, sampler)[:n]
    vocab = min(p.shape[-1], q.shape[-1])
    label = "r (qualifier)" if proposer == "qualifier" else "q (draft)"
    shown = []
    for i, candidate in enumerate(candidates):
        candidate.p, candidate.q = float(p[i, candidate.token]), float(q[i, candidate.token])
        bars = {"p (target)": _top(p[i], decode), label: _top(q[i], decode)}
        if "accept_prob" in candidate.diagnostics:
            bars["residual max(0, p - q)"] = _top(residual(p[i, :vocab], q[i, :vocab]), decode)
        shown.append(bars)
    return shown


def explain_step(step, run, models: dict, context: list[int], decode) -> Explanation:
    candidates = checked_candidates(step)
    emitted = [(t.id, t.origin, reason(t)) for t in step.tokens]
    return Explanation(step.drafted, candidates, emitted,
                       distributions(models, context, candidates, run.config, decode))


# The seed-001 worked example.
TOY_TOKENS = ("A", "B", "C")
TOY_P = torch.tensor([0.6, 0.3, 0.1])
TOY_Q = torch.tensor([0.4, 0.4, 0.2])


@dataclass
class ToyRound:
    candidate: str
    accept_prob: float
    u: float
    accepted: bool
    emitted: str


class Toy:
    """Draw x ~ q, accept with min(1, p(x)/q(x)), else draw from the residual. Over many rounds
    the emitted tokens follow p exactly: the counts show it."""

    def __init__(self, seed: int = 0):
        self.random = random.Random(seed)
        self.rounds: list[ToyRound] = []

    @staticmethod
    def accept_probs() -> dict[str, float]:
        return {t: min(1.0, float(TOY_P[i] / TOY_Q[i])) for i, t in enumerate(TOY_TOKENS)}

    @staticmethod
    def residual() -> dict[str, float]:
        return dict(zip(TOY_TOKENS, residual(TOY_P, TOY_Q).tolist()))

    def _draw(self, probs) -> str:
        return self.random.choices(TOY_TOKENS, weights=list(probs))[0]

    def step(self) -> ToyRound:
        candidate = self._draw(TOY_Q.tolist())
        accept_prob, u = self.accept_probs()[candidate], self.random.random()
        accepted = u < accept_prob
        emitted = candidate if accepted else self._draw(self.residual().values())
        self.rounds.append(ToyRound(candidate, accept_prob, u, accepted, emitted))
        return self.rounds[-1]

    def emitted_shares(self) -> dict[str, float]:
        n = len(self.rounds) or 1
        return {t: sum(r.emitted == t for r in self.rounds) / n for t in TOY_TOKENS}
