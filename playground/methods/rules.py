"""Each method's verification rule as the one walk (walk.py) applies it to every node of a round.

A rule is a per-node test computed for all nodes at once (docs/rules.md, "One walk"):
- a stochastic rule (sd, csd, tli, psd-a's `residual` option) keeps recursive rejection sampling:
  after a rejected child, its siblings meet the residual p_(i+1) = norm(max(0, p_i - q_i));
- a deterministic rule (fsd, psd's thresholds, psd-a's and slem's draw match, fsd's random
  control) tests every child against the verifier's own p; the walk takes the first that passes.

Where no child passes, the walk draws the rule's correction from what is left: the residual
after every child (stochastic), the verifier's p (deterministic). A draw-match rule's child
passes only if it equals that very draw, so the correction is the verifier's own draw.
"""

from dataclasses import dataclass

from .acceptance import DrawMatch, RandomControl, Ratio, Threshold


@dataclass(frozen=True)
class NodeNumbers:
    """What a rule may test one node by, read from the device with the round's other numbers:
    `tried` the verifier's p_i(x) (the residual left by earlier siblings, for a stochastic rule),
    `q` the proposer's q_i(x), `divergence` between the raw rows (None: the proposer has no row
    in the verifier's vocabulary), `u` a uniform draw, `drawn` the verifier's draw at the parent."""

    token: int
    tried: float
    q: float
    divergence: float | None
    u: float
    drawn: int


@dataclass(frozen=True)
class ResidualRatio:
    """SD (docs/rules.md, "Standard SD" and "Token trees"): keep x with min(1, p_i(x) / q_i(x))."""

    keeps_residual: bool = True
    needs_uniform: bool = True

    def test(self, node: NodeNumbers) -> Ratio:
        return Ratio(min(1.0, node.tried / node.q) if node.q > 0 else 1.0, node.u)


@dataclass(frozen=True)
class DivergenceThreshold:
    """FSD (strict `<`) and PyramidSD (inclusive `<=`): Div(verifier raw, proposer raw) against tau."""

    divergence: str
    tau: float
    comparison: str
    keeps_residual: bool = False
    needs_uniform: bool = False

    def test(self, node: NodeNumbers) -> Threshold:
        return Threshold(self.divergence, node.divergence, self.tau, self.comparison)


@dataclass(frozen=True)
class OwnDrawMatch:
    """PSD_A's qualifier and SLEM's target: keep x iff it is the verifier's own draw at its parent."""

    keeps_residual: bool = False
    needs_uniform: bool = False

    def test(self, node: NodeNumbers) -> DrawMatch:
        return DrawMatch(node.drawn, node.token)


@dataclass(frozen=True)
class RandomAcceptance:
    """FSD's control (seed 000, Figure 6): keep each candidate with a fixed probability."""

    rate: float
    keeps_residual: bool = False
    needs_uniform: bool = True

    def test(self, node: NodeNumbers) -> RandomControl:
        return RandomControl(self.rate, node.u)
