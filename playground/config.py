"""Everything a generation run is configured with, validated in one place.

Each field carries its CLI help in `metadata["help"]`; the CLI builds its flags from these fields,
so a new method option is added here once and appears in the CLI, the API and the JSON output.
"""

import math
from dataclasses import asdict, dataclass, field, fields

from .divergence import SCALES
from .errors import PlaygroundError

DIVERGENCES = tuple(SCALES)
DIVERGENCE_HELP = (
    "divergence of the raw (temperature-1) distributions, natural log; the verifier is the target "
    "(fsd, psd stage 2) or the qualifier (psd-f stage 1), the proposer the draft (fsd, stage 1) or the "
    "qualifier (stage 2): " + "; ".join(f"{name} = {scale.describe('verifier', 'proposer')}"
                                       for name, scale in SCALES.items()))
SEED_RANGE = (0, 2**64 - 1)  # what torch.Generator.manual_seed takes
# Read by every method: the sampling settings, the run's length and seed, the prompt's format.
READ_BY_EVERY_METHOD = ("method", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "chat_template")


def _opt(default, help_text, **extra):
    return field(default=default, metadata={"help": help_text, **extra})


@dataclass
class RunConfig:
    """One run's settings, read by every method (named apart from transformers' GenerationConfig,
    which configures `model.generate`)."""

    method: str = _opt("sd", "decoding method (see `python -m playground methods`)")
    max_new_tokens: int = _opt(128, "stop after this many generated tokens")
    temperature: float = _opt(0.0, "sampling temperature; 0 means greedy")
    top_k: int = _opt(0, "keep the k most likely tokens (0: off)")
    top_p: float = _opt(1.0, "keep the smallest set of tokens with this total probability (1: off)")
    seed: int = _opt(0, "random seed of the run")
    candidates: int = _opt(4, "candidate length K: the most tokens drafted per verification step")
    draft_sampling: str = _opt("sample", "how the draft proposes: 'sample' from q or 'greedy' argmax",
                               choices=("sample", "greedy"))
    draft_vocab: int = _opt(8192, "sd: the draft scores only its N most frequent tokens, q = 0 for the rest "
                            "(FR-Spec pruned output layer; stays lossless; 0: all tokens)")
    draft_confidence: float = _opt(0.6, "sd: end a draft block after a token the draft gives less than "
                                   "this probability (0: always draft K; stays lossless)")
    draft_int8: bool = _opt(True, "sd: a CPU float32 draft runs its linear layers in int8 (about half its step "
                            "on a small CPU; q is the quantized draft's, so sd stays lossless)")
    chat_template: bool = _opt(True, "wrap the prompt in the tokenizer's chat template")
    # Fuzzy SD (seed 000)
    tau: float = _opt(0.4, "fsd: accept a candidate when Div(target, draft) < tau, on the divergence's "
                      "own scale (js at most ln 2 = 0.693, tv at most 1, kl, kl-draft and fsd-js unbounded)")
    divergence: str = _opt("js", DIVERGENCE_HELP, choices=DIVERGENCES)
    random_accept: float = _opt(-1.0, "fsd control: accept each candidate with this probability "
                                "instead of the divergence test (-1: off)")
    # PyramidSD (seed 002)
    tau_q: float = _opt(0.3, "psd-f: stage 1 accepts a draft token when Div(qualifier, draft) <= tau_q")
    tau_t: float = _opt(0.5, "psd: stage 2 accepts a collected token when Div(target, qualifier) <= tau_t")
    draft_length: int = _opt(2, "psd: l_D, tokens the draft proposes per qualifier check")
    qualifier_length: int = _opt(6, "psd: l_Q, tokens collected before the target verifies")
    assisted_rule: str = _opt("sample-qualifier", "psd-a: how the qualifier checks a draft token. "
                              "'sample-qualifier' (the paper, Section 3.4): the qualifier draws its own token "
                              "y ~ r, keeps the draft token if it equals y, else emits y; 'residual': the SD rule, "
                              "keep it with probability min(1, r/q), else draw from norm(max(0, r - q))",
                              choices=("sample-qualifier", "residual"))
    # Calibrated SD (seed 003)
    lambda_: float = _opt(6.0, "csd: rescue a rejected pair seen at least this often (inf: never)",
                          flag="--lambda", infinite_allowed=True)
    gate_tau: float = _opt(0.01, "csd: rescue only if p(draft token) / p(correction) >= gate_tau, both from the "
                          "target's raw (temperature-1) distribution")
    memory: str = _opt("", "csd: correction memory JSON to start from (from `calibrate`)")

    def to_dict(self) -> dict:
        return asdict(self)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise PlaygroundError(message)


KINDS = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}


def _has_type(kind: type, value) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _is_finite(value) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False


def _check_value_type(f, value) -> None:
    """Each field holds its declared type (no bool for a number, no 3.7 tokens, no "no" for a
    switch); numbers are finite, except where infinity has a meaning (lambda)."""
    name = f.name.rstrip("_")
    _require(_has_type(f.type, value), f"{name} must be {KINDS[f.type]}, got {value!r}")
    if f.type is float:
        meaningful_inf = f.metadata.get("infinite_allowed") and value == math.inf
        _require(_is_finite(value) or meaningful_inf, f"{name} must be a finite number, got {value!r}")


def unread_options(method, given) -> list[str]:
    """The given option names that `method` (a Method) does not read."""
    return [name for name in given if name not in READ_BY_EVERY_METHOD and name not in method.options]


def validate(config: RunConfig, limits=None) -> RunConfig:
    """Raise PlaygroundError with a one-line fix for the first bad setting."""
    from .limits import current_limits  # noqa: PLC0415  (limits reads the environment lazily)

    limits = limits or current_limits()
    for f in fields(config):
        _check_value_type(f, getattr(config, f.name))
    _require(SEED_RANGE[0] <= config.seed <= SEED_RANGE[1],
             f"seed must be between {SEED_RANGE[0]} and 2**64 - 1, got {config.seed}")
    _require(1 <= config.max_new_tokens <= limits.max_new_tokens,
             f"max_new_tokens must be between 1 and {limits.max_new_tokens}, got {config.max_new_tokens}")
    _require(1 <= config.candidates <= limits.max_candidates,
             f"candidates (K) must be between 1 and {limits.max_candidates}, got {config.candidates}: "
             "use at least one drafted token per step")
    _require(config.draft_vocab >= 0,
             f"draft_vocab must be a whole number >= 0 (0 = full vocabulary), got {config.draft_vocab!r}")
    _require(config.temperature >= 0, f"temperature must be >= 0 (0 = greedy), got {config.temperature}")
    _require(config.top_k >= 0, f"top_k must be >= 0 (0 = off), got {config.top_k}")
    _require(0 < config.top_p <= 1, f"top_p must be in (0, 1], got {config.top_p}")
    _require(0 <= config.draft_confidence <= 1,
             f"draft_confidence must be a probability in [0, 1] (0 = off), got {config.draft_confidence}")
    for name in ("tau", "tau_q", "tau_t", "gate_tau"):
        _require(getattr(config, name) >= 0, f"{name} must be >= 0, got {getattr(config, name)}")
    _require(config.lambda_ >= 0, f"lambda must be >= 0 (inf disables rescue), got {config.lambda_}")
    _require(config.divergence in DIVERGENCES,
             f"unknown divergence {config.divergence!r}: choose one of {', '.join(DIVERGENCES)}")
    _require(config.assisted_rule in ("sample-qualifier", "residual"),
             f"assisted_rule must be 'sample-qualifier' or 'residual', got {config.assisted_rule!r}")
    _require(config.draft_sampling in ("sample", "greedy"),
             f"draft_sampling must be 'sample' or 'greedy', got {config.draft_sampling!r}")
    _require(config.random_accept < 0 or config.random_accept <= 1,
             f"random_accept must be a probability in [0, 1] or -1 (off), got {config.random_accept}")
    for name in ("draft_length", "qualifier_length"):
        value = getattr(config, name)
        _require(1 <= value <= limits.max_candidates,
                 f"{name} must be between 1 and {limits.max_candidates}, got {value}")
    return config
