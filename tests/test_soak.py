"""A bounded soak of the app: many concurrent sessions generating, stopping and re-running on
tiny models, over loopback only. Zero errors, consistent stats, memory back near its baseline.
Each session does a fixed number of rounds and stops or supersedes a run once it has streamed
its first view, so what happens does not depend on the machine's speed."""

import gc
import random
import re
import threading
from concurrent.futures import CancelledError

import pytest

from playground.ui.options import all_controls
from playground.ui.tiny_app import launch_tiny_app

pytestmark = pytest.mark.slow

SESSIONS = 8
ROUNDS = 5  # per session; the last one waits for its run
HANG_SECONDS = 300
RSS_MARGIN_MB = 150  # what Python's allocator may keep after a burst of runs


def resident_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def controls(rng: random.Random) -> list:
    chosen = {c.name: c.default for c in all_controls()}
    chosen |= {"max_new_tokens": rng.randint(5, 40), "temperature": rng.choice([0, 0.7, 1]),
               "seed": rng.randint(0, 99), "tau": rng.choice([0.1, 0.4, 0.69])}
    return [chosen[c.name] for c in all_controls()]


def check_finished(outputs, problems: list) -> bool:
    status, text, *_ = outputs
    if "status-error" in status:
        problems.append(status)
        return False
    done = re.search(r"done: (\d+) tokens", status)
    if done and text.count('class="tok tok-') != int(done.group(1)):
        problems.append(f"token count mismatch: {status}")
    return bool(done)


def visitor(url: str, seed: int, tally: dict, problems: list) -> None:
    from gradio_client import Client  # noqa: PLC0415

    rng, client = random.Random(seed), Client(url, verbose=False)
    for round_ in range(ROUNDS):
        method = rng.choice(["sd", "fsd", "ar", "csd", "psd-f"])
        job = client.submit("hello there", method, False, *controls(rng), api_name="/generate")
        action = "wait" if round_ == ROUNDS - 1 else rng.choice(["wait", "stop", "rerun"])
        try:
            if action != "wait":
                next(job, None)  # the run has started streaming (or already ended)
            if action == "stop":
                job.cancel()
                tally["stopped"] += 1
            elif action == "rerun":  # a slider released mid-run: the new run supersedes the old
                job = client.submit("hello there", method, False, *controls(rng), api_name="/generate")
            if action != "stop" and check_finished(job.result(timeout=120), problems):
                tally["completed"] += 1
        except CancelledError:
            tally["cancelled"] += 1
        except Exception as error:  # noqa: BLE001  (every other failure is what this test counts)
            problems.append(f"{type(error).__name__}: {error}")


def test_concurrent_sessions_soak(family):
    demo, url = launch_tiny_app(family, default_concurrency_limit=2, max_size=64)
    try:
        gc.collect()
        baseline_threads, baseline_rss = threading.active_count(), resident_mb()
        tally, problems = {"completed": 0, "stopped": 0, "cancelled": 0}, []
        visitors = [threading.Thread(target=visitor, args=(url, seed, tally, problems)) for seed in range(SESSIONS)]
        for thread in visitors:
            thread.start()
        for thread in visitors:
            thread.join(timeout=HANG_SECONDS)
        assert not any(thread.is_alive() for thread in visitors), "a session hung"
        assert problems == [], problems[:5]
        assert tally["completed"] >= SESSIONS
        gc.collect()
        assert resident_mb() - baseline_rss < RSS_MARGIN_MB
        print(f"\nsoak: {SESSIONS} sessions, {ROUNDS} rounds each, {tally}, rss {baseline_rss:.0f} -> "
              f"{resident_mb():.0f} MB, threads {baseline_threads} -> {threading.active_count()}")
    finally:
        demo.close()
