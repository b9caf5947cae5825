"""Upper bounds on request sizes, set from the environment, enforced by the API itself."""

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_new_tokens: int
    max_candidates: int
    max_prompt_chars: int


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.strip().isdigit() else default


def current_limits() -> Limits:
    return Limits(
        max_new_tokens=_env_int("PLAYGROUND_MAX_NEW_TOKENS", 2048),
        max_candidates=_env_int("PLAYGROUND_MAX_CANDIDATES", 64),
        max_prompt_chars=_env_int("PLAYGROUND_MAX_PROMPT_CHARS", 20000),
    )
