"""Model families for the UI: presets, loading through an injectable loader, and a description
of what was loaded (device, dtype, memory, shared vocabulary, which methods are usable).

The loader is `playground.models.load_model` unless the app is built with another one (tests
inject tiny in-code models). `load_model` caches process-wide, so loading twice costs nothing.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from ..engine import DEFAULT_FAMILY
from ..models import LoadedModel, vocabulary_relation

ROLES = ("target", "draft", "qualifier")
Loader = Callable[[str], LoadedModel]


@dataclass(frozen=True)
class Preset:
    name: str
    target: str
    draft: str = ""
    qualifier: str = ""
    description: str = ""
    defaults: dict = field(default_factory=dict)  # method name -> {option: value}
    method: str = ""  # the method to select with this family
    sources: dict = field(default_factory=dict)  # method name -> where its defaults come from

    def specs(self) -> dict[str, str]:
        return {role: getattr(self, role) for role in ROLES}


EMBEDDED = Preset("embedded", DEFAULT_FAMILY["target"], DEFAULT_FAMILY["draft"], DEFAULT_FAMILY["qualifier"],
                  "SmolLM2-135M-Instruct with distilled draft and qualifier: offline, CPU", method="sd")


def _read(entry, key, default=None):
    return entry.get(key, default) if isinstance(entry, dict) else getattr(entry, key, default)


def _adapt(name: str, entry) -> Preset:
    """A Preset from one entry of `playground.presets.load_presets()` (object or dict)."""
    defaults = _read(entry, "methods") or _read(entry, "defaults") or {}
    return Preset(_read(entry, "name", name), _read(entry, "target", ""), _read(entry, "draft", "") or "",
                  _read(entry, "qualifier", "") or "", _read(entry, "description", "") or "", dict(defaults),
                  _read(entry, "default_method", "") or "", dict(_read(entry, "sources") or {}))


def project_presets() -> list[Preset]:
    """The project's presets (embedded family first), or just the embedded family."""
    try:
        from ..presets import load_presets  # noqa: PLC0415  (optional module)
        loaded = load_presets()
    except ImportError:
        return [EMBEDDED]
    items = loaded.items() if isinstance(loaded, dict) else ((_read(e, "name"), e) for e in loaded)
    presets = [_adapt(name, entry) for name, entry in items]
    presets.sort(key=lambda p: p.target != DEFAULT_FAMILY["target"])  # embedded family first
    return presets or [EMBEDDED]


def load_family(specs: dict[str, str], loader: Loader, progress=None) -> dict[str, LoadedModel]:
    """Load every non-empty role; `progress(fraction, desc=...)` is told before each model."""
    wanted = {role: spec.strip() for role, spec in specs.items() if spec and spec.strip()}
    models = {}
    for i, (role, spec) in enumerate(wanted.items()):
        if progress:
            progress(i / len(wanted), desc=f"loading {role}: {spec}")
        models[role] = loader(spec)
    return models


def relation(models: dict[str, LoadedModel]) -> str | None:
    """'same' if every loaded helper shares the target's vocabulary, 'different' if one does not."""
    if "target" not in models:
        return None
    helpers = [m for role, m in models.items() if role != "target"]
    same = all(vocabulary_relation(models["target"].tokenizer, m.tokenizer) == "same" for m in helpers)
    return "same" if same else "different"


def describe_family(models: dict[str, LoadedModel]) -> str:
    """Markdown: each model's device, dtype and weights, the total, and the vocabulary verdict."""
    lines = [f"- **{role}** `{m.spec}`: {m.device}, {m.dtype}, {m.memory_bytes / 2**20:,.0f} MiB"
             for role, m in models.items()]
    total = sum(m.memory_bytes for m in {id(m): m for m in models.values()}.values())
    vocabulary = {"same": "the models share one vocabulary: every method is available",
                  "different": "the vocabularies differ: only methods for heterogeneous vocabularies "
                               "are available"}.get(relation(models), "")
    return "\n".join([*lines, "", f"{total / 2**20:,.0f} MiB of weights in all; {vocabulary}."])
