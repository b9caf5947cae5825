"""What a public deployment may load, and whether a model fits before it is loaded.

Public mode (on by default on a Hugging Face Space, `PLAYGROUND_PUBLIC=0/1` to override): only
embedded models, preset models and ids in `PLAYGROUND_ALLOWED_MODELS` (comma-separated) load; no
server path is read (models, correction memories); `trust_remote_code` is never honoured.
Locally, any path or id may be loaded.
"""

import os

import torch

from ..errors import PlaygroundError
from ..space import on_space

MEMORY_HEADROOM = 0.9  # refuse a model whose weights need more than this share of free memory


def public_mode() -> bool:
    setting = os.environ.get("PLAYGROUND_PUBLIC", "").strip().lower()
    if setting:
        return setting in ("1", "true", "yes", "on")
    return on_space()


def allowed_specs() -> set[str]:
    from .embedded import EMBEDDED_MODELS  # noqa: PLC0415
    from .presets import load_presets  # noqa: PLC0415

    allowed = set(EMBEDDED_MODELS)
    for preset in load_presets().values():
        allowed.update(spec for spec in (preset.target, preset.draft, preset.qualifier) if spec)
    extra = os.environ.get("PLAYGROUND_ALLOWED_MODELS", "")
    allowed.update(spec.strip() for spec in extra.split(",") if spec.strip())
    return allowed


def check_allowed(spec: str, trust_remote_code: bool) -> None:
    """Refuse, in public mode, anything but allow-listed models and remote code."""
    if not public_mode():
        return
    if trust_remote_code:
        raise PlaygroundError("trust_remote_code is disabled on this public deployment: "
                              "choose a model that runs with transformers' own code")
    if spec not in allowed_specs():  # the answer depends on the text alone: no file is looked at
        raise PlaygroundError(f"model {spec!r} is not allowed on this public deployment (local paths and "
                              "unlisted ids are not): choose a preset family, or run the playground locally "
                              "to load any model")


def refuse_server_path(what: str) -> None:
    """In public mode no file of the server is read on a visitor's say-so. The refusal never
    names or looks at the path, so it tells nothing about which files exist."""
    if public_mode():
        raise PlaygroundError(f"{what} cannot be read from a path on this public deployment: upload the "
                              "file instead, or run the playground locally")


def free_memory_bytes(device: str) -> int | None:
    """Memory free for new weights on `device` (None when it cannot be told)."""
    from accelerate.utils import get_max_memory  # noqa: PLC0415  (looks at every GPU: only when asked)

    where = torch.device(device)
    key = {"cpu": "cpu", "cuda": where.index or 0}.get(where.type)
    return get_max_memory().get(key) if key is not None else None


def check_fits(spec: str, needed_bytes: int | None, device: str) -> None:
    free = free_memory_bytes(device)
    if needed_bytes is None or free is None or needed_bytes <= MEMORY_HEADROOM * free:
        return
    raise PlaygroundError(f"model {spec!r} needs about {needed_bytes / 1e9:.1f} GB but only "
                          f"{free / 1e9:.1f} GB is free on {device}: choose a smaller family, unload "
                          "models, or use --device-map auto on a machine with more memory")
