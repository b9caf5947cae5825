"""Upper bounds on request sizes and rates, set from the environment, enforced by the API itself
(runs per minute and uploads: by the app)."""

import os
from dataclasses import dataclass

from .policy import public_mode

PUBLIC_RUNS_PER_MINUTE = 20
# The embedded target's prefill over 1,024 tokens took about 5 s on a busy 2-core CPU, 2,048 about
# 11 s (a visitor's prefill holds up every other visitor's run).
PUBLIC_MAX_PROMPT_TOKENS = 1024


@dataclass(frozen=True)
class Limits:
    max_new_tokens: int
    max_candidates: int
    max_prompt_chars: int
    max_prompt_tokens: int  # 0: only the model's context bounds a prompt
    runs_per_minute: int  # per app session; 0: no limit
    max_upload_bytes: int


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.strip().isdigit() else default


def current_limits() -> Limits:
    return Limits(
        max_new_tokens=_env_int("PLAYGROUND_MAX_NEW_TOKENS", 2048),
        max_candidates=_env_int("PLAYGROUND_MAX_CANDIDATES", 64),
        max_prompt_chars=_env_int("PLAYGROUND_MAX_PROMPT_CHARS", 20000),
        max_prompt_tokens=_env_int("PLAYGROUND_MAX_PROMPT_TOKENS", PUBLIC_MAX_PROMPT_TOKENS if public_mode() else 0),
        runs_per_minute=_env_int("PLAYGROUND_RUNS_PER_MINUTE", PUBLIC_RUNS_PER_MINUTE if public_mode() else 0),
        max_upload_bytes=_env_int("PLAYGROUND_MAX_UPLOAD_BYTES", 8 * 2**20),
    )
