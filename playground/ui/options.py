"""The UI's controls, discovered from RunConfig and the METHODS registry.

Every option a method reads (`Method.reads`) becomes one control, labelled with the field's help
text and bounded by the field's range (config.py's one table of options), so a new method or a
new config field shows up in the UI without editing it, and is refused as the API refuses it.
"""

import math
import re
from dataclasses import MISSING, dataclass, fields

from ..config import THRESHOLDS, RunConfig, check_option, option_range
from ..decoding.divergence import SCALES
from ..errors import PlaygroundError
from ..methods import METHODS

# Shown for every method: the sampling settings and the run's length and seed.
COMMON = ("temperature", "top_k", "top_p", "max_new_tokens", "seed")

DEFAULT_DIVERGENCE = RunConfig().divergence
DEFAULT_METHOD = "sd" if "sd" in METHODS else next(iter(METHODS))  # the method a page opens on
# Shorter than the CLI's help where the sidebar has no room for it.
UI_HELP = {"divergence": "compared on the raw (temperature-1) distributions, natural log; each threshold "
                         "slider states what it compares and the bound of the chosen divergence"}
MAX_SWEEP_VALUES = 8  # a compare runs one generation per value, plus the target-only reference


@dataclass(frozen=True)
class Control:
    name: str  # the RunConfig field
    kind: str  # "slider" | "number" | "dropdown" | "checkbox" | "text"
    default: object
    help: str
    choices: tuple = ()
    range: tuple = ()
    takes_inf: bool = False  # a number whose box also takes the word "inf", where infinity means something

    @property
    def label(self) -> str:
        return self.name.rstrip("_").replace("_", " ")

    @property
    def elem_id(self) -> str:
        return "opt-" + self.name.rstrip("_").replace("_", "-")


def _kind(f, default) -> str:
    if "choices" in f.metadata:
        return "dropdown"
    if f.type in (bool, "bool"):
        return "checkbox"
    if f.type in (str, "str"):
        return "text"
    span = option_range(f.name, DEFAULT_DIVERGENCE)
    return "slider" if span is not None and span.step is not None and math.isfinite(default) else "number"


def _control(f) -> Control:
    default = f.default if f.default is not MISSING else f.default_factory()
    help_text = UI_HELP.get(f.name) or f.metadata.get("help", "")
    if f.name in THRESHOLDS:
        help_text = threshold_scale(f.name, DEFAULT_DIVERGENCE)[1]
    span = option_range(f.name, DEFAULT_DIVERGENCE)
    return Control(f.name, _kind(f, default), default, help_text, tuple(f.metadata.get("choices", ())),
                   (span.low, span.high, span.step) if span is not None and span.step is not None else (),
                   bool(f.metadata.get("infinite_allowed")))


def threshold_scale(name: str, divergence: str) -> tuple[float, str]:
    """A threshold slider's maximum under `divergence`, and its info line: the test it sets, with
    the divergence written out for its verifier and proposer, its bound and log base."""
    verifier, proposer, comparison = THRESHOLDS[name]
    scale = SCALES[divergence]
    past = ", past its maximum every candidate is accepted" if math.isfinite(scale.bound) else ""
    stop = f"; thresholds up to {scale.slider_max:g}{past}"
    return scale.slider_max, (f"accept when {scale.label(verifier, proposer)} {comparison} {name.rstrip('_')} "
                              f"({divergence}: {scale.range_text}{stop})")


def method_option_names() -> list[str]:
    """Every option any registered method reads, in RunConfig order, minus COMMON."""
    wanted = {name for method in METHODS.values() for name in method.reads}
    return [f.name for f in fields(RunConfig) if f.name in wanted and f.name not in COMMON]


def all_controls() -> list[Control]:
    """COMMON first, then the method options; this order is the generate handler's inputs."""
    by_name = {f.name: f for f in fields(RunConfig)}
    return [_control(by_name[name]) for name in (*COMMON, *method_option_names())]


def control(name: str) -> Control:
    return next(c for c in all_controls() if c.name == name)


def visible_options(method: str) -> set[str]:
    method = METHODS.get(method) if isinstance(method, str) else None
    return set(COMMON) | set(method.reads if method else ())


def method_choices(vocabulary_relation: str | None = None, roles: set | None = None,
                   lookup: bool = False, features: bool = False) -> list[tuple[str, str]]:
    """(label, name) pairs for the method dropdown; given a loaded family, only the methods it
    can run (every role present; a shared vocabulary unless the method accepts any or runs the
    target alone, as ar does: the reference every family compares with; with a prompt-lookup
    draft or a feature draft, only the methods that take one)."""
    usable = [m for m in METHODS.values()
              if (vocabulary_relation in (None, "same") or m.vocabulary == "any" or set(m.roles) == {"target"})
              and (roles is None or set(m.roles) <= roles)
              and not (lookup and "draft" in m.roles and not m.drafts_by_lookup)
              and not (features and "draft" in m.roles and not m.drafts_by_features)]
    return [(method_label(m), m.name) for m in usable]


# The method dropdown's labels: short enough for the sidebar's box (a summary was cut there), the
# whole summary shows under it (the method's description). Another method shows its summary's
# first words.
SHORT_LABELS = {"ar": "the target alone", "draft-only": "the draft alone", "sd": "standard SD", "fsd": "fuzzy SD",
                "psd-a": "PyramidSD assisted", "psd-f": "PyramidSD fuzzy", "csd": "calibrated SD",
                "csd-memory": "CSD memory only", "csd-gate": "CSD gate only", "slem": "string-level match",
                "tli": "shared-token SD", "slrs": "string-level sampling"}
MAX_LABEL_CHARS = 28


def method_label(method) -> str:
    """'fsd: fuzzy SD': the method's name and a few words, at most MAX_LABEL_CHARS characters."""
    words = SHORT_LABELS.get(method.name) or re.split(r"[:,(]", method.summary)[0].strip()
    label = f"{method.name}: {words}"
    return label if len(label) <= MAX_LABEL_CHARS else label[:MAX_LABEL_CHARS - 1].rsplit(" ", 1)[0] + "…"


# What a Compare sweep starts from: the first of these the method reads (the knob its rule turns on).
SWEEP_FIRST = ("tau", "tau_q", "tau_t", "gate_tau", "lambda_", "candidates", "draft_length", "temperature")
# Values that show an option's effect; other sliders get three points across their range.
SWEEP_VALUES = {"tau": (0.1, 0.3, 0.6), "tau_q": (0.1, 0.3, 0.6), "tau_t": (0.1, 0.3, 0.6),
                "gate_tau": (0.005, 0.01, 0.05), "lambda_": (2, 6, 12), "candidates": (2, 4, 8),
                "draft_length": (1, 2, 4), "temperature": (0, 0.7, 1), "seed": (0, 1, 2),
                "random_accept": (0.1, 0.3, 0.6), "tree_width": (1, 2, 4)}


def sweep_options(method: str) -> list[str]:
    """The numeric options `method` reads, its own before the common ones: what Compare can sweep."""
    by_name = {c.name: c for c in all_controls()}
    own = METHODS[method].reads if method in METHODS else ()
    return [name for name in (*own, *COMMON) if by_name[name].kind in ("slider", "number")]


def suggested_sweep(option: str) -> str:
    """Three values of `option` worth comparing, as the Compare tab's values box shows them."""
    values = SWEEP_VALUES.get(option)
    if values is None:
        low, high, step = control(option).range
        values = [low + round((high - low) * share / step) * step for share in (0.1, 0.3, 0.6)]
    return ", ".join(f"{v:g}" for v in values)


def default_sweep(method: str) -> str:
    options = sweep_options(method)
    return next(name for name in SWEEP_FIRST if name in options)


def coerce(control: Control, value, divergence: str = DEFAULT_DIVERGENCE):
    """A widget value as the config field's type, then checked as the API checks it (a
    threshold on the scale of `divergence`): sliders send floats for whole numbers, an empty
    text box means its default, and a box that takes inf sends its text. Anything else is refused
    with one line."""
    if control.kind == "text" and value is None:
        return control.default
    if control.takes_inf and isinstance(value, str):  # its box is text, to take "inf"
        value = _number_or_inf(control, value)
    if control.kind in ("slider", "number") and isinstance(control.default, int) and finite_number(value) \
            and float(value).is_integer():
        value = int(value)
    elif control.kind in ("slider", "number") and isinstance(control.default, float) and finite_number(value):
        value = float(value)
    return check_option(control.name, value, divergence)


def _number_or_inf(control: Control, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise PlaygroundError(f"{control.label} must be a number or inf, got {text!r}") from None


def finite_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def sweep_values(control: Control, text: str, divergence: str = DEFAULT_DIVERGENCE) -> list:
    """The comma-separated values of a compare sweep, each as the option's type and in its range."""
    if control.kind not in ("slider", "number"):
        raise PlaygroundError(f"{control.label} is not a number: sweep a numeric option")
    parts = [part.strip() for part in re.split("[,;]", text) if part.strip()] if isinstance(text, str) else []
    if not parts or len(parts) > MAX_SWEEP_VALUES:
        raise PlaygroundError(f"give 1 to {MAX_SWEEP_VALUES} sweep values separated by commas, got {len(parts)}")
    words = [part for part in parts if not _is_number(part)]
    if words:
        raise PlaygroundError(f"sweep values must be numbers separated by commas, got {' and '.join(map(repr, words))} "
                              f"in {text!r}")
    values, refused = [], []  # every bad value named (a reviewer's "-1, 0.4, 7" named only the -1)
    for part in parts:
        try:
            values.append(coerce(control, float(part), divergence))
        except PlaygroundError as error:
            refused.append(str(error))
    if refused:
        raise PlaygroundError("; ".join(refused))
    twice = sorted({value for value in values if values.count(value) > 1})
    if twice:  # "0.2, 0.2" ran as two identical columns
        raise PlaygroundError(f"sweep values {', '.join(f'{v:g}' for v in twice)} given twice in {text!r}: "
                              "give each value once")
    return values


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def options_from_values(method: str, values) -> dict:
    """The keyword options for `stream()` from the controls' values (in all_controls order)."""
    wanted = visible_options(method)
    divergence = chosen_divergence(values)
    return {c.name: coerce(c, v, divergence) for c, v in zip(all_controls(), values, strict=True) if c.name in wanted}


def chosen_divergence(values) -> str:
    """The divergence among the controls' values (a bad one is refused when its control is coerced)."""
    divergence = dict(zip((c.name for c in all_controls()), values)).get("divergence")
    return divergence if isinstance(divergence, str) and divergence in SCALES else DEFAULT_DIVERGENCE
