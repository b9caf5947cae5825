"""Named model families (presets/*.toml): which models play which role, the method settings
recommended for them, and where each recommendation comes from (`sources`: the paper's value on
its own divergence scale, or why there is none). Read with the standard library's tomllib."""

import pathlib
from dataclasses import dataclass, field

import tomllib

from ..errors import PlaygroundError

PRESETS_DIR = pathlib.Path(__file__).resolve().parents[2] / "presets"
DEFAULT_PRESET = "embedded"  # works offline on a CPU
ROLES = ("target", "draft", "qualifier")
FITS = ("cpu", "gpu-24gb", "multi-gpu")  # where the bf16 weights fit: <= 8 GB, <= 20 GB, more
REQUIRED_KEYS = ("description", "target", "draft", "approx_memory_gb", "fits", "gated", "default_method",
                 "methods")


@dataclass(frozen=True)
class Preset:
    """A model family: the app's preset dropdown, the CLI's `models` list and the bench read it.
    A family built in code (tests, benchmarks) may leave the TOML-only facts at their defaults."""

    name: str
    target: str  # a hub id or an embedded name
    draft: str = ""
    qualifier: str | None = None
    description: str = ""
    default_method: str = ""  # the method the app selects with this family
    methods: dict = field(default_factory=dict)  # method name -> RunConfig field values
    sources: dict = field(default_factory=dict)  # method name -> where its settings come from
    approx_memory_gb: float = 0.0  # bf16 weights of all its models, before KV caches
    fits: str = "cpu"  # one of FITS
    gated: bool = False  # needs a Hub login and an accepted license
    note: str = ""
    measured: dict = field(default_factory=dict)  # e.g. draft_agreement, for families measured here

    @property
    def memory_bytes(self) -> int:
        return int(self.approx_memory_gb * 1e9)

    def settings(self, method: str) -> dict:
        """The recommended RunConfig values for `method` ({} when the preset has none)."""
        return dict(self.methods.get(method, {}))

    def specs(self) -> dict[str, str]:
        """Each role's model spec, "" for a role the family leaves empty."""
        return {role: getattr(self, role) or "" for role in ROLES}


def _preset(name: str, table: dict, source: pathlib.Path) -> Preset:
    missing = [key for key in REQUIRED_KEYS if key not in table]
    if missing:
        raise PlaygroundError(f"preset {name!r} in {source.name} lacks {', '.join(missing)}: add them")
    if table["fits"] not in FITS:
        raise PlaygroundError(f"preset {name!r} in {source.name}: fits must be one of {', '.join(FITS)}")
    return Preset(name=name, qualifier=table.get("qualifier"), note=table.get("note", ""),
                  measured=table.get("measured", {}), sources=table.get("sources", {}),
                  **{key: table[key] for key in REQUIRED_KEYS})


def load_presets(directory: pathlib.Path = PRESETS_DIR) -> dict[str, Preset]:
    """Every preset of every presets/*.toml file, by name (names are unique across files)."""
    presets: dict[str, Preset] = {}
    for source in sorted(directory.glob("*.toml")):
        with source.open("rb") as handle:
            tables = tomllib.load(handle)
        for name, table in tables.items():
            if name in presets:
                raise PlaygroundError(f"preset {name!r} is defined twice: rename the one in {source.name}")
            presets[name] = _preset(name, table, source)
    return presets
