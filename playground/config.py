"""Everything a generation run is configured with, validated in one place.

Each field carries its help and its range in its metadata; the CLI builds its flags from these
fields and the UI its controls, so a new option is added here once and appears in the CLI, the
API, the UI, share links and the JSON output, refused the same way everywhere.
"""

import math
from dataclasses import asdict, dataclass, field, fields

from .decoding.divergence import SCALES
from .errors import PlaygroundError

DIVERGENCES = tuple(SCALES)
DIVERGENCE_HELP = (
    "divergence of the raw (temperature-1) distributions, natural log; the verifier is the target "
    "(fsd, psd stage 2) or the qualifier (psd-f stage 1), the proposer the draft (fsd, stage 1) or the "
    "qualifier (stage 2); sd, csd and tli only record it for each candidate: "
    + "; ".join(f"{name} = {scale.describe('verifier', 'proposer')}"
                                       for name, scale in SCALES.items()))
# Read by every method: the sampling settings, the run's length and seed, the prompt's format.
READ_BY_EVERY_METHOD = ("method", "max_new_tokens", "temperature", "top_k", "top_p", "seed", "chat_template")


@dataclass(frozen=True)
class Range:
    """Where a numeric option's values may lie, the same for the API, the CLI, the UI's controls,
    share links, Compare sweeps and the bench. `step`: the UI slider's step (None: a number box).
    `limit`: the `Limits` field that may lower `high` for a deployment. `off`: a value outside
    the range that switches the option off."""

    low: float
    high: float
    step: float | None = None
    limit: str = ""
    off: float | None = None


# The divergence thresholds: (verifier, proposer, comparison) of the test each one sets. Their
# range is the chosen divergence's scale (`threshold_high`), so a threshold means one thing.
THRESHOLDS = {"tau": ("target", "draft", "<"), "tau_q": ("qualifier", "draft", "<="),
              "tau_t": ("target", "qualifier", "<=")}


def _opt(default, help_text, range_: Range | None = None, **extra):
    return field(default=default, metadata={"help": help_text, "range": range_, **extra})


@dataclass
class RunConfig:
    """One run's settings, read by every method (named apart from transformers' GenerationConfig,
    which configures `model.generate`). Each field declares its type, default, help and range
    here once; `check_option` enforces them for every way a value comes in."""

    method: str = _opt("sd", "decoding method (see `python -m playground methods`)")
    max_new_tokens: int = _opt(128, "stop after this many generated tokens",
                               Range(1, 512, 1, limit="max_new_tokens"))
    temperature: float = _opt(0.0, "sampling temperature; 0 means greedy", Range(0.0, 2.0, 0.05))
    top_k: int = _opt(0, "keep the k most likely tokens (0: off)", Range(0, 200, 1))
    top_p: float = _opt(1.0, "keep the smallest set of tokens with this total probability (1: off)",
                        Range(0.05, 1.0, 0.05))
    seed: int = _opt(0, "random seed of the run", Range(0, 2**64 - 1))  # what torch.Generator takes
    candidates: int = _opt(4, "candidate length K: the most tokens drafted per verification step",
                           Range(1, 16, 1, limit="max_candidates"))
    draft_sampling: str = _opt("sample", "how the draft proposes: 'sample' from q or 'greedy' argmax",
                               choices=("sample", "greedy"))
    draft_vocab: int = _opt(8192, "drafting lever: the draft scores only its N most frequent tokens, q = 0 for "
                            "the rest (FR-Spec pruned output layer; sd stays lossless; 0: all tokens)",
                            Range(0, 131072, 1024))
    draft_confidence: float = _opt(0.6, "drafting lever: end a draft block after a token the draft gives less "
                                   "than this probability (0: always draft K; sd stays lossless)",
                                   Range(0.0, 1.0, 0.05))
    draft_int8: bool = _opt(True, "drafting lever: a CPU float32 draft runs its linear layers in int8 (about "
                            "half its step on a small CPU; q is the quantized draft's, so sd stays lossless)")
    tree_width: int = _opt(2, "drafting lever: candidates per node of a token tree; where the draft doubts a token (at "
                           "every depth when draft_confidence is 0) tree_width - 1 more tokens go beside it, a prompt "
                           "lookup's proposal is one more branch, and the verifier checks every node in one pass "
                           "(1: a chain; sd stays lossless)",
                           Range(1, 8, 1), flag="--tree")
    chat_template: bool = _opt(True, "wrap the prompt in the tokenizer's chat template")
    # Fuzzy SD (seed 000)
    tau: float = _opt(0.4, "fsd: accept a candidate when Div(target, draft) < tau, on the divergence's "
                      "own scale: js at most ln 2 = 0.693 (tau up to 1), tv at most 1 (tau up to 2), kl, "
                      "kl-draft and fsd-js unbounded (tau up to 5, 5 and 2); past the maximum every "
                      "candidate is accepted",
                      Range(0.0, math.inf, 0.01))
    divergence: str = _opt("js", DIVERGENCE_HELP, choices=DIVERGENCES)
    random_accept: float = _opt(-1.0, "fsd control: accept each candidate with this probability "
                                "instead of the divergence test (-1: off)", Range(0.0, 1.0, off=-1.0))
    # PyramidSD (seed 002)
    tau_q: float = _opt(0.3, "psd-f: stage 1 accepts a draft token when Div(qualifier, draft) <= tau_q",
                        Range(0.0, math.inf, 0.01))
    tau_t: float = _opt(0.5, "psd: stage 2 accepts a collected token when Div(target, qualifier) <= tau_t",
                        Range(0.0, math.inf, 0.01))
    draft_length: int = _opt(2, "psd: l_D, tokens the draft proposes per qualifier check",
                             Range(1, 16, 1, limit="max_candidates"))
    qualifier_length: int = _opt(6, "psd: l_Q, tokens collected before the target verifies",
                                 Range(1, 32, 1, limit="max_candidates"))
    assisted_rule: str = _opt("sample-qualifier", "psd-a: how the qualifier checks a draft token. "
                              "'sample-qualifier' (the paper, Section 3.4): the qualifier draws its own token "
                              "y ~ r, keeps the draft token if it equals y, else emits y; 'residual': the SD rule, "
                              "keep it with probability min(1, r/q), else draw from norm(max(0, r - q))",
                              choices=("sample-qualifier", "residual"))
    # Calibrated SD (seed 003)
    lambda_: float = _opt(6.0, "csd: rescue a rejected pair seen at least this often (inf: never)",
                          Range(0.0, math.inf), flag="--lambda", infinite_allowed=True)
    gate_tau: float = _opt(0.01, "csd: rescue only if p(draft token) / p(correction) >= gate_tau, both from the "
                          "target's raw (temperature-1) distribution", Range(0.0, 1.0, 0.005))
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
    return [name for name in given if name not in READ_BY_EVERY_METHOD and name not in method.reads]


FIELDS = {f.name: f for f in fields(RunConfig)}


def option_range(name: str, divergence: str = "js", limits=None) -> Range | None:
    """The range of option `name` as it applies now: a threshold's follows the scale of
    `divergence` (up to its maximum, or to where the slider stops for an unbounded one), and a
    deployment's `limits` may lower the high end."""
    from .deploy.limits import current_limits  # noqa: PLC0415  (limits reads the environment lazily)

    declared = FIELDS[name].metadata.get("range")
    if declared is None:
        return None
    high = SCALES[divergence].slider_max if name in THRESHOLDS else declared.high
    if declared.limit:
        high = min(high, getattr(limits or current_limits(), declared.limit))
    return Range(declared.low, high, declared.step, declared.limit, declared.off)


def describe_range(name: str, span: Range, divergence: str) -> str:
    low, high = ("2**64 - 1" if v == 2**64 - 1 else f"{v:g}" for v in (span.low, span.high))
    where = f" under {divergence}{_past_maximum(divergence, span.high)}" if name in THRESHOLDS else ""
    off = f", or {span.off:g} (off)" if span.off is not None else ""
    return f"between {low} and {high}{where}{off}"


def _past_maximum(divergence: str, high: float) -> str:
    """Why a threshold's range runs past its divergence's maximum (a reviewer read "between 0 and 1
    under js" beside "past JS's maximum 0.693" and could not tell why)."""
    bound = SCALES[divergence].bound
    if not math.isfinite(bound) or high <= bound:
        return ""
    return f" ({divergence.upper()} reaches at most {bound:.3g}: from there to {high:g} every candidate passes)"


def check_option(name: str, value, divergence: str = "js", limits=None):
    """Raise PlaygroundError, in one line naming the option and its range, unless `value` is of
    the option's type, one of its choices, and inside its range. Returns the value."""
    f = FIELDS[name]
    _check_value_type(f, value)
    label = name.rstrip("_")
    if "choices" in f.metadata:
        _require(value in f.metadata["choices"],
                 f"{label} must be one of {', '.join(f.metadata['choices'])}, got {value!r}")
    span = option_range(name, divergence, limits)
    if span is not None and value != span.off:
        _require(span.low <= value <= span.high,
                 f"{label} must be {describe_range(name, span, divergence)}, got {value!r}")
    return value


def validate(config: RunConfig, limits=None) -> RunConfig:
    """Raise PlaygroundError with a one-line fix for the first bad setting."""
    thresholds_last = sorted(fields(config), key=lambda f: f.name in THRESHOLDS)  # they need a valid divergence
    for f in thresholds_last:
        check_option(f.name, getattr(config, f.name), config.divergence, limits)
    return config
