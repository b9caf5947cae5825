"""Step mode: one verification round at a time, explained from the step's own evidence.

Every number shown is one the run used: each step carries, per verified position, the top tokens
of the distributions its rule looked at and the rule's own figures (`playground.decoding.step.Evidence`);
nothing is recomputed here. Raw (temperature-1) distributions, which divergences and the CSD gate
compare, are labelled apart from the processed ones the SD ratio and the draws use.
`Toy` is the seed-001 worked example (p = [0.6, 0.3, 0.1], q = [0.4, 0.4, 0.2] over A, B, C).
"""

import random
from dataclasses import dataclass, field

import torch

from ...decoding.sampling import residual
from ...decoding.step import Evidence
from ...decoding.token_tree import branches
from ...methods.draft_levers import describe

ROLES = {"p": "target", "q": "draft", "r": "qualifier"}
VERIFIER_SYMBOL = {"target": "p", "qualifier": "r"}
STAGES = {"qualifier": "Stage 1: the qualifier checks the draft's tokens",
          "target": "Acceptance test per candidate"}


@dataclass
class Explanation:
    """What one round did, ready to show: each check with its evidence (PyramidSD's stage-1 checks
    first), the emitted tokens with reasons, and the draft as the run drafted with it."""

    drafted: int
    checks: list[Evidence]
    emitted: list[tuple[int, str, str]]  # (token id, origin, why)
    drafter: str = ""  # the draft as the run drafted with it (its levers), in words
    tree: dict | None = None  # a token tree's nodes, parents and accepted path (methods/walk.py)
    qualifier_trees: list = field(default_factory=list)  # PyramidSD's stage-1 rounds' trees


def symbols(e: Evidence) -> tuple[str, str]:
    """(verifier, proposer) symbols of a check: p/q, r/q (PyramidSD stage 1) or p/r (stage 2)."""
    verifier = VERIFIER_SYMBOL[e.stage]
    proposer = next((name for name in e.top if name in ROLES and name != verifier), "q")
    return verifier, proposer


def distribution_label(name: str, e: Evidence) -> str:
    """What a distribution is and what the rule used it for."""
    verifier, proposer = symbols(e)
    if name == "residual":
        return f"residual norm(max(0, {verifier} - {proposer})): a rejection draws from it"
    symbol, raw = name.removesuffix("_raw"), name.endswith("_raw")
    role = f"{symbol} {ROLES[symbol]}"
    if raw:
        return f"{role}, raw T=1: what divergences and gates compare"
    ratio = e.rule_check.is_ratio
    if symbol == verifier:
        return f"{role}, sampling settings: " + ("the SD ratio's numerator, the draws" if ratio else "the draws")
    return f"{role}, as drawn (one-hot if greedy)" + (": the SD ratio's denominator" if ratio else "")


def reason(token) -> str:
    if token.bonus:
        return ("bonus: every candidate on the accepted path was kept, so the verifier's next distribution gives "
                "one more token")
    if token.origin == "rescued":
        return "rescued: rejected, but the correction memory and gate put the draft token back"
    if token.is_correction:
        return _correction_reason(token)
    if token.lookup:
        return f"accepted {token.origin} candidate, from the prompt lookup's branch of the tree"
    if token.branch:
        return (f"accepted {token.origin} candidate, from branch {token.branch + 1} of its node (a sibling the tree "
                f"added), after {len(token.replaced)} rejected before it")
    if token.checked:
        return f"accepted {token.origin} candidate"
    return f"sampled by the {token.origin} model alone"


def _correction_reason(token) -> str:
    count = len(token.replaced)
    which = ("no candidate was proposed" if not count else "the candidate was rejected" if count == 1
             else f"all {count} candidates at this node were rejected")
    source = ("the residual, what p leaves after the rejected candidates" if token.drawn_from ==
              "residual" else "the verifier's own distribution")
    return f"correction: {which}, so this token was drawn from {source}"


def explain_step(step, config) -> Explanation:
    emitted = [(t.id, t.origin, reason(t)) for t in step.tokens]
    notes = [_lookup_note(step) or describe(config), _feature_note(step), _draft_pieces_note(step)]
    tree = step.tree  # drawn where it branches; a chain's round reads as a block
    return Explanation(step.drafted, list(step.evidence), emitted, " ".join(note for note in notes if note),
                       tree if tree and branches(tree["parents"]) else None, step.qualifier_trees)


def _feature_note(step) -> str:
    """What a feature draft read this round ("" for any other draft)."""
    read = step.feature_read
    if not read:
        return ""
    layers = ", ".join(map(str, read["layers"]))
    source = ("the target first read the prompt for it (round one only)" if read["target_read_prompt"]
              else "kept from the target's own verification pass: no extra target forward")
    own = read["own_features"]
    return (f"The feature draft read the inputs of the target's layers {layers} at {read['target_positions']} new "
            f"position(s) ({source}), with each next token's embedding; "
            + (f"its {own} later token(s) read its own output feature instead, since the target has not read "
               "those tokens yet." if own else "it drafted one token from them."))


def _draft_pieces_note(step) -> str:
    """A heterogeneous method's draft tokens this round, in its own vocabulary ("" otherwise)."""
    pieces = step.draft_pieces
    if not pieces:
        return ""
    return f"The draft wrote {len(pieces)} of its own tokens: {' · '.join(repr(piece) for piece in pieces)}."


def _lookup_note(step) -> str:
    """What a prompt-lookup draft found this round ("" for a draft model)."""
    if step.ngram_match is None:
        return ""
    matched = step.ngram_match
    if not matched:
        return ("The draft is a prompt lookup, and the context's last two tokens occur nowhere before it: no "
                "candidates, the target stepped alone.")
    return (f"The draft is a prompt lookup: the context's last {matched} token(s) occurred before, and what "
            "followed them there was proposed (q is one-hot on each proposed token).")


def bars(e: Evidence, decode) -> dict[str, dict[str, float]]:
    """Each distribution a check used as {token label: probability}, keyed by its label (the
    residual only where the candidate was rejected: an accepted one draws nothing from it)."""
    return {distribution_label(name, e): {f"{decode(i)!r} ({i})": prob for i, prob in top}
            for name, top in e.top.items() if name != "residual" or e.verdict != "accepted"}


# The seed-001 worked example.
TOY_SEEDS = 2**32  # its seeds are 0 .. TOY_SEEDS - 1
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
