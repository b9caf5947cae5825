"""`python -m playground models`: the embedded models and the preset families, what is available
offline, and how much memory each needs (estimated without loading weights)."""

from .embedded import EMBEDDED_MODELS, is_available
from .loading import available_offline
from .presets import load_presets


def register(subparsers) -> None:
    parser = subparsers.add_parser("models", help="list embedded models and preset families")
    parser.set_defaults(run=list_models)


def _gigabytes(count: float) -> str:
    return f"{count / 1e9:.2f} GB"


def _measured(figures: dict) -> str:
    """`draft_agreement = 0.478` reads "draft agreement 47.8%"; `draft_speed_vs_target = 3.2`, "... 3.2x"."""
    return ", ".join(f"{key.replace('_', ' ')} {value:.1%}" if "agreement" in key
                     else f"{key.replace('_', ' ')} {value}x" for key, value in figures.items())


def list_models(args) -> int:
    print("Embedded models (offline, CPU):")
    for model in EMBEDDED_MODELS.values():
        state = "ready" if is_available(model.name) else "run `python -m playground.models.embedded prepare`"
        print(f"  {model.name:20} {model.role:10} {_gigabytes(model.memory_bytes):>9}  {state}")
    print("\nPreset families (memory: bf16 weights of all roles):")
    for preset in load_presets().values():
        specs = [preset.target, preset.qualifier, preset.draft]
        offline = all(available_offline(spec) for spec in specs if spec)
        flags = ", ".join(filter(None, [preset.fits, "gated" if preset.gated else "",
                                        "available offline" if offline else "needs download"]))
        roles = " / ".join(spec for spec in specs if spec)
        print(f"  {preset.name:18} {_gigabytes(preset.memory_bytes):>9}  [{flags}]  {roles}")
        if preset.measured:
            print(f"  {'':18} measured: {_measured(preset.measured)}")
    return 0
