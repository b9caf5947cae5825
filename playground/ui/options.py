"""The UI's controls, discovered from GenerationConfig and the METHODS registry.

Every option a method reads (`Method.options`) becomes one control, labelled with the field's
help text, so a new method or a new config field shows up in the UI without editing it.
"""

import math
from dataclasses import MISSING, dataclass, fields

from ..config import GenerationConfig
from ..methods import METHODS

# Shown for every method: the sampling settings and the run's length and seed.
COMMON = ("temperature", "top_k", "top_p", "max_new_tokens", "seed")

# Slider ranges (minimum, maximum, step) for the numeric options that have a natural range.
# A numeric field not listed here gets a number box, so new fields still work.
RANGES = {
    "temperature": (0.0, 2.0, 0.05),
    "top_k": (0, 200, 1),
    "top_p": (0.05, 1.0, 0.05),
    "max_new_tokens": (1, 512, 1),
    "candidates": (1, 16, 1),
    "draft_vocab": (0, 32768, 1024),
    "draft_confidence": (0.0, 1.0, 0.05),
    "tau": (0.0, 1.0, 0.01),
    "tau_q": (0.0, 1.0, 0.01),
    "tau_t": (0.0, 1.0, 0.01),
    "draft_length": (1, 16, 1),
    "qualifier_length": (1, 32, 1),
    "gate_tau": (0.0, 1.0, 0.005),
}


@dataclass(frozen=True)
class Control:
    name: str  # the GenerationConfig field
    kind: str  # "slider" | "number" | "dropdown" | "checkbox" | "text"
    default: object
    help: str
    choices: tuple = ()
    range: tuple = ()

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
    return "slider" if f.name in RANGES and math.isfinite(default) else "number"


def _control(f) -> Control:
    default = f.default if f.default is not MISSING else f.default_factory()
    return Control(f.name, _kind(f, default), default, f.metadata.get("help", ""),
                   tuple(f.metadata.get("choices", ())), RANGES.get(f.name, ()))


def method_option_names() -> list[str]:
    """Every option any registered method reads, in GenerationConfig order, minus COMMON."""
    wanted = {name for method in METHODS.values() for name in method.options}
    return [f.name for f in fields(GenerationConfig) if f.name in wanted and f.name not in COMMON]


def all_controls() -> list[Control]:
    """COMMON first, then the method options; this order is the generate handler's inputs."""
    by_name = {f.name: f for f in fields(GenerationConfig)}
    return [_control(by_name[name]) for name in (*COMMON, *method_option_names())]


def control(name: str) -> Control:
    return next(c for c in all_controls() if c.name == name)


def visible_options(method: str) -> set[str]:
    method = METHODS.get(method)
    return set(COMMON) | set(method.options if method else ())


def method_choices(vocabulary_relation: str | None = None, roles: set | None = None) -> list[tuple[str, str]]:
    """(label, name) pairs for the method dropdown; given a loaded family, only the methods it
    can run (every role present; a shared vocabulary unless the method accepts any)."""
    usable = [m for m in METHODS.values()
              if (vocabulary_relation in (None, "same") or m.vocabulary == "any")
              and (roles is None or set(m.roles) <= roles)]
    return [(f"{m.name}: {m.summary}", m.name) for m in usable]


# What a Compare sweep starts from: the first of these the method reads (the knob its rule turns on).
SWEEP_FIRST = ("tau", "tau_q", "tau_t", "gate_tau", "lambda_", "candidates", "draft_length", "temperature")
# Values that show an option's effect; other sliders get three points across their range.
SWEEP_VALUES = {"tau": (0.1, 0.3, 0.6), "tau_q": (0.1, 0.3, 0.6), "tau_t": (0.1, 0.3, 0.6),
                "gate_tau": (0.005, 0.01, 0.05), "lambda_": (2, 6, 12), "candidates": (2, 4, 8),
                "draft_length": (1, 2, 4), "temperature": (0, 0.7, 1), "seed": (0, 1, 2),
                "random_accept": (0.1, 0.3, 0.6)}


def sweep_options(method: str) -> list[str]:
    """The numeric options `method` reads, its own before the common ones: what Compare can sweep."""
    by_name = {c.name: c for c in all_controls()}
    own = METHODS[method].options if method in METHODS else ()
    return [name for name in (*own, *COMMON) if by_name[name].kind in ("slider", "number")]


def sweep_values(option: str) -> str:
    """Three values of `option` worth comparing, as the Compare tab's values box shows them."""
    values = SWEEP_VALUES.get(option)
    if values is None:
        low, high, step = control(option).range
        values = [low + round((high - low) * share / step) * step for share in (0.1, 0.3, 0.6)]
    return ", ".join(f"{v:g}" for v in values)


def default_sweep(method: str) -> str:
    options = sweep_options(method)
    return next(name for name in SWEEP_FIRST if name in options)


def coerce(control: Control, value):
    """A widget value as the config field's type (sliders return floats, boxes may send '')."""
    if value is None or value == "":
        return control.default
    if isinstance(control.default, bool):
        return bool(value)
    if isinstance(control.default, int):
        return int(round(float(value)))
    if isinstance(control.default, float):
        return float(value)
    return value


def options_from_values(method: str, values) -> dict:
    """The keyword options for `stream()` from the controls' values (in all_controls order)."""
    wanted = visible_options(method)
    return {c.name: coerce(c, v) for c, v in zip(all_controls(), values, strict=True) if c.name in wanted}
