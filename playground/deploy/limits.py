"""Upper bounds on request sizes and rates, set from the environment, enforced by the API itself
(per visitor: runs per minute and at once, uploads, and a session's lifetime and memory: by the app)."""

import os
from dataclasses import dataclass

from ..models.policy import public_mode

PUBLIC_RUNS_PER_MINUTE = 20
# The embedded target's prefill over 1,024 tokens took about 5 s on a busy 2-core CPU, 2,048 about
# 11 s (a visitor's prefill holds up every other visitor's run).
PUBLIC_MAX_PROMPT_TOKENS = 1024
PUBLIC_RUNS_AT_ONCE = 2  # a visitor's runs waiting in the queue or running
# A visitor's events waiting in the queue or running, of those that wait for a worker: a page
# holds a few at once (a run, its charts, a method's change); the queue holds 32 by default.
PUBLIC_EVENTS_AT_ONCE = 8
PUBLIC_UPLOADS_PER_MINUTE = 6
# A correction memory holds about 200 bytes per (draft token, correction) pair in memory: a
# visitor's memories stay near 4 MB, however many uploads they make.
PUBLIC_MAX_MEMORY_PAIRS = 20_000
SESSION_IDLE_SECONDS = 30 * 60
# The page's heartbeat (layout.py) keeps an open tab's session alive; this only frees the
# sessions of closed tabs whose unload never came, and of API clients.
PUBLIC_SESSION_IDLE_SECONDS = 5 * 60
# Gradio keeps each session's component state (about 200 KiB here) for its last N sessions, closed
# ones included, 10,000 by default (2 GB); a class of 30 opening and closing tabs needs far fewer.
PUBLIC_STATE_SESSIONS = 500
GRADIO_STATE_SESSIONS = 10_000
# Runs taking turns on the model at once (ui/sharing/waiting_line.py), a round each; the rest wait in line. A class
# of 30 with prompts of their own (bench/results/class_visitors, embedded family, 2 cores): with 3
# taking turns, first tokens at 21 s (p50) and 41 s (p95), done at 24 / 43 s; with 10, 17 / 38 s and
# 30 / 45 s; with all 30, 3.0 / 4.4 s and 42 / 50 s. Everyone's answer starting within seconds is
# worth the later end: every run the line admits takes turns.
RUNS_SHARING = 32
# A visitor's model seconds in the last minute, past which their next run waits for the window to
# clear: the model thread gives 60 a minute, so one visitor takes at most half the machine's time.
PUBLIC_MODEL_SECONDS_PER_MINUTE = 30
# How long a finished deterministic run is replayed to identical runs (ui/sharing/identical.py).
PUBLIC_REPLAY_SECONDS = 300
# The app's files on disk (Gradio's copies of uploads and downloads, the sessions' exports), in MB.
PUBLIC_DISK_MB = 400
PUBLIC_EXPORTS_PER_MINUTE = 6  # per visitor: run JSON, charts, correction memory downloads


@dataclass(frozen=True)
class Limits:
    max_new_tokens: int
    max_candidates: int
    max_prompt_chars: int
    max_prompt_tokens: int  # 0: only the model's context bounds a prompt
    runs_per_minute: int  # per visitor; 0: no limit
    runs_at_once: int  # per visitor, waiting or running; 0: no limit
    events_at_once: int  # per visitor, waiting or running, runs included (queue_cap.py); 0: no limit
    max_upload_bytes: int
    uploads_per_minute: int  # per visitor; 0: no limit
    max_memory_pairs: int  # in one session's correction memories; 0: no limit
    session_idle_seconds: int  # a session without a call (or heartbeat) for this long is dropped
    state_sessions: int  # sessions whose component state Gradio keeps, the oldest dropped first
    runs_sharing: int  # runs taking turns on the model at once; the rest wait in line
    model_seconds_per_minute: int  # per visitor, counted before a run starts; 0: no limit
    replay_seconds: int  # a finished run is replayed to identical runs for this long; 0: never
    disk_mb: int  # the app's files on disk, past which exports and uploads are refused; 0: no limit
    exports_per_minute: int  # per visitor; 0: no limit


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) if value.strip().isdigit() else default


def current_limits() -> Limits:
    public = public_mode()
    return Limits(
        max_new_tokens=_env_int("PLAYGROUND_MAX_NEW_TOKENS", 2048),
        max_candidates=_env_int("PLAYGROUND_MAX_CANDIDATES", 64),
        max_prompt_chars=_env_int("PLAYGROUND_MAX_PROMPT_CHARS", 20000),
        max_prompt_tokens=_env_int("PLAYGROUND_MAX_PROMPT_TOKENS", PUBLIC_MAX_PROMPT_TOKENS if public else 0),
        runs_per_minute=_env_int("PLAYGROUND_RUNS_PER_MINUTE", PUBLIC_RUNS_PER_MINUTE if public else 0),
        runs_at_once=_env_int("PLAYGROUND_RUNS_AT_ONCE", PUBLIC_RUNS_AT_ONCE if public else 0),
        events_at_once=_env_int("PLAYGROUND_EVENTS_AT_ONCE", PUBLIC_EVENTS_AT_ONCE if public else 0),
        max_upload_bytes=_env_int("PLAYGROUND_MAX_UPLOAD_BYTES", 8 * 2**20),
        uploads_per_minute=_env_int("PLAYGROUND_UPLOADS_PER_MINUTE", PUBLIC_UPLOADS_PER_MINUTE if public else 0),
        max_memory_pairs=_env_int("PLAYGROUND_MAX_MEMORY_PAIRS", PUBLIC_MAX_MEMORY_PAIRS if public else 0),
        session_idle_seconds=_env_int("PLAYGROUND_SESSION_IDLE_SECONDS",
                                      PUBLIC_SESSION_IDLE_SECONDS if public else SESSION_IDLE_SECONDS),
        state_sessions=_env_int("PLAYGROUND_STATE_SESSIONS",
                                PUBLIC_STATE_SESSIONS if public else GRADIO_STATE_SESSIONS),
        runs_sharing=max(1, _env_int("PLAYGROUND_RUNS_SHARING", RUNS_SHARING)),
        model_seconds_per_minute=_env_int("PLAYGROUND_MODEL_SECONDS_PER_MINUTE",
                                          PUBLIC_MODEL_SECONDS_PER_MINUTE if public else 0),
        replay_seconds=_env_int("PLAYGROUND_REPLAY_SECONDS", PUBLIC_REPLAY_SECONDS if public else 0),
        disk_mb=_env_int("PLAYGROUND_DISK_MB", PUBLIC_DISK_MB if public else 0),
        exports_per_minute=_env_int("PLAYGROUND_EXPORTS_PER_MINUTE", PUBLIC_EXPORTS_PER_MINUTE if public else 0),
    )
