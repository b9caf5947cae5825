"""What a bench sweeps: one `Setting` per method x candidate length x threshold, the bench's own
baseline names beside METHODS, and the fsd-random controls matched to measured fsd runs."""

import statistics
from dataclasses import dataclass, field

from ...errors import PlaygroundError
from ...methods import METHODS

BASELINES = ("hf-assisted", "hf-universal", "hf-generate", "hf-lookup")  # the bench's own names, beside METHODS
RANDOM_CONTROL = "fsd-random"
THRESHOLD_FIELDS = ("tau", "tau_t")  # the option --taus sweeps, first one a method reads


@dataclass(frozen=True)
class Setting:
    method: str  # a METHODS name, RANDOM_CONTROL or one of BASELINES
    options: dict = field(default_factory=dict)  # RunConfig overrides
    draft: str | None = None  # which of the bench's models drafts (its key; None: the method's usual one)

    @property
    def label(self) -> str:
        names = {"candidates": "K", "tau": "tau", "tau_t": "tau_t", "random_accept": "p",
                 "draft_vocab": "vocab", "draft_confidence": "conf", "draft_int8": "int8", "tree_width": "tree"}
        parts = [f"{names[k]}={_short(v)}" for k, v in self.options.items() if k in names]
        return " ".join([self.method, *([f"draft={self.draft}"] if self.draft else []), *parts])

    @property
    def tau(self):
        return next((self.options[f] for f in THRESHOLD_FIELDS if f in self.options), None)


def expand_settings(methods: list[str], candidates: list[int], taus: list[float]) -> list[Setting]:
    """One setting per method x K x threshold, sweeping only the options the method reads."""
    settings = []
    for name in methods:
        if name == "ar":
            continue
        if name not in METHODS and name not in BASELINES:
            raise PlaygroundError(f"unknown method {name!r}: choose from {', '.join([*METHODS, *BASELINES])}")
        ks = [{"candidates": k} for k in candidates] if _reads(name, "candidates") else [{}]
        threshold = next((f for f in THRESHOLD_FIELDS if _reads(name, f)), None)
        thresholds = [{threshold: t} for t in taus] if threshold else [{}]
        settings.extend(Setting(name, {**k, **t}) for k in ks for t in thresholds)
    return settings


def _reads(name: str, option: str) -> bool:
    if name in BASELINES:
        return option == "candidates" and name != "hf-generate"
    return option in METHODS[name].options


def random_controls(settings: list[Setting], rows: list[dict]) -> list[Setting]:
    """fsd-random accepting each examined candidate with the probability fsd accepted one."""
    controls = []
    for setting in settings:
        if setting.method != "fsd":
            continue
        rates = [r["candidate_acceptance"] for r in rows
                 if r["setting"] == setting.label and r["candidate_acceptance"] is not None]
        if rates:
            rate = round(statistics.fmean(rates), 3)
            controls.append(Setting(RANDOM_CONTROL,
                                    {"candidates": setting.options["candidates"], "random_accept": rate}))
    return list({c.label: c for c in controls}.values())


def _short(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
