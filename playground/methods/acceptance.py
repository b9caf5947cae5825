"""Each rule's acceptance test of one candidate, as a typed record: its numbers, whether it held,
and how it reads in words. Step mode, hover and the JSON evidence ask the record (`figures()`: its numbers as a token
record and the evidence carry them), so a new rule
brings its own record and no view needs a branch for it.

`describe(verifier, proposer, at_candidate, decode)`: the symbols of the two distributions
(p/q, r/q or p/r), the candidate's probability under each (Evidence.at_candidate), and id -> text.
"""

from dataclasses import dataclass

NEGATION = {"<": "≥", "<=": ">"}
SYMBOL_TEXT = {"<=": "≤", "<": "<"}


def number(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Ratio:
    """SD (seed 001): keep x with probability min(1, p(x) / q(x)); `u` the uniform draw."""

    accept_prob: float
    u: float
    kind: str = "ratio"

    @property
    def held(self) -> bool:
        return self.u < self.accept_prob

    def figures(self) -> dict:
        return {"accept_prob": self.accept_prob, "u": self.u}

    def describe(self, verifier, proposer, at_candidate, decode) -> str:
        return (f"keep with min(1, {verifier}(x) / {proposer}(x)) = min(1, {number(at_candidate[verifier])} / "
                f"{number(at_candidate[proposer])}) = {number(self.accept_prob)}; u = {number(self.u)}")


@dataclass(frozen=True)
class Threshold:
    """FSD and PyramidSD: Div(verifier raw, proposer raw) against tau, strict (fsd) or inclusive (psd)."""

    divergence: str
    value: float
    tau: float
    comparison: str
    kind: str = "threshold"

    @property
    def held(self) -> bool:
        return self.value <= self.tau if self.comparison == "<=" else self.value < self.tau

    def figures(self) -> dict:
        return {"tau": self.tau, "comparison": self.comparison}

    def describe(self, verifier, proposer, at_candidate, decode) -> str:
        shown = SYMBOL_TEXT[self.comparison] if self.held else NEGATION[self.comparison]
        return f"{self.divergence}({verifier} raw, {proposer} raw) = {number(self.value)} {shown} tau {self.tau:g}"


@dataclass(frozen=True)
class Rescue:
    """CSD (seed 003): after the ratio rejected x~ for t*, the memory's count against lambda
    (is_freq) and the gate p(x~) / p(t*) on raw T = 1 probabilities against tau (is_safe)."""

    ratio: Ratio
    memory_count: int
    lambda_: float
    is_freq: bool
    p_candidate_raw: float
    p_correction_raw: float
    gate_tau: float
    is_safe: bool
    rescued: bool
    kind: str = "rescue"

    @property
    def held(self) -> bool:
        return self.ratio.held or self.rescued

    def figures(self) -> dict:
        return self.ratio.figures()

    def describe(self, verifier, proposer, at_candidate, decode) -> str:
        ratio = self.ratio.describe(verifier, proposer, at_candidate, decode)
        if self.ratio.held:
            return ratio
        freq, safe = "≥" if self.is_freq else "<", "≥" if self.is_safe else "<"
        gate = number(self.p_candidate_raw / self.p_correction_raw) if self.p_correction_raw else "inf"
        return (f"{ratio}; then memory count {self.memory_count} {freq} lambda {self.lambda_:g}; gate p(x~)/p(t*) = "
                f"{number(self.p_candidate_raw)} / {number(self.p_correction_raw)} = {gate} {safe} tau "
                f"{self.gate_tau:g} (raw T=1)")


@dataclass(frozen=True)
class DrawMatch:
    """PSD_A's qualifier and SLEM's target: the verifier draws its own token; keep x iff it is that token."""

    drew: int
    candidate: int
    kind: str = "exact match"

    @property
    def held(self) -> bool:
        return self.drew == self.candidate

    def figures(self) -> dict:
        return {"verifier_draw": self.drew}

    def describe(self, verifier, proposer, at_candidate, decode) -> str:
        return f"{verifier} drew {decode(self.drew)!r}: keep the candidate only if it is that token"


@dataclass(frozen=True)
class RandomControl:
    """FSD's control (seed 000, Figure 6): keep each candidate with a fixed probability."""

    rate: float
    u: float
    kind: str = "random control"

    @property
    def held(self) -> bool:
        return self.u < self.rate

    def figures(self) -> dict:
        return {"random_accept": self.rate}

    def describe(self, verifier, proposer, at_candidate, decode) -> str:
        return f"random control: keep with probability {self.rate:g} (u = {number(self.u)})"


@dataclass(frozen=True)
class StringRatio:
    """SLRS (seed 004, Alg. 3): keep the target token t with min(1, p(t) / psi(t)); None when it
    was rejected without a ratio (psi skipped, capped or 0)."""

    psi: float | None
    accept_prob: float | None
    accepted: bool
    kind: str = "string ratio"

    @property
    def held(self) -> bool:
        return self.accepted

    def figures(self) -> dict:
        return {"psi": self.psi, "accept_prob": self.accept_prob}

    def describe(self, verifier, proposer, at_candidate, decode) -> str:
        if self.accept_prob is None:
            return "rejected without a ratio: psi(t) skipped (u * P(path) >= p(t)), capped, or 0"
        return (f"keep with min(1, p(t) / psi(t)) = min(1, {number(at_candidate['p'])} / {number(self.psi)}) "
                f"= {number(self.accept_prob)}")
