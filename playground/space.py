"""Whether this process runs on a Hugging Face Space (no heavy imports: read at startup)."""

import os


def on_space() -> bool:
    """A Hugging Face Space sets SPACE_ID and SYSTEM=spaces."""
    return bool(os.environ.get("SPACE_ID")) or os.environ.get("SYSTEM") == "spaces"
