"""Resident memory of the public app around a burst of visitors, through the real server: the app
on 127.0.0.1 with the embedded models warm, then N visitors at once, each a gradio_client client
with its own session. Of every five, one generates, one uploads a correction memory (20,000
pairs, the public cap) and runs csd, one steps through a long prompt, one runs a Compare (ar and
sd side by side, its rounds in turn with everyone's), one generates and downloads its JSON and
charts three times. Half of each kind leave (they close their client: Gradio ends the session),
the other half abandon theirs (they stop calling with the client left open, so only the app's idle
limit ends it). RSS is sampled throughout; the figures are the baseline, the peak, RSS when the
last session ended, how long RSS then took to come back within 10% of the baseline (watched for a
minute), and the app's files on disk (Gradio's copies and the sessions' downloads) along the way.

    HF_HUB_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False python -m bench.session_memory [--visitors 24] [--out F.json]
"""

import argparse
import json
import os
import random
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("PLAYGROUND_PUBLIC", "1")
os.environ.setdefault("PLAYGROUND_RUNS_PER_MINUTE", "0")
os.environ.setdefault("PLAYGROUND_RUNS_AT_ONCE", "0")  # the visitors all come from 127.0.0.1
os.environ.setdefault("PLAYGROUND_EVENTS_AT_ONCE", "0")
os.environ.setdefault("PLAYGROUND_UPLOADS_PER_MINUTE", "0")
os.environ.setdefault("PLAYGROUND_SESSION_IDLE_SECONDS", "420")  # longer than the visits take on 2 busy cores
os.environ.setdefault("PLAYGROUND_EXPORTS_PER_MINUTE", "0")
os.environ.setdefault("PLAYGROUND_MODEL_SECONDS_PER_MINUTE", "0")
FILES = Path(tempfile.mkdtemp(prefix="session-memory-"))  # this app's files alone, measured
os.environ["GRADIO_TEMP_DIR"] = str(FILES / "gradio")

from playground.methods.correction_memory import CorrectionMemory  # noqa: E402
from playground.models.presets import DEFAULT_PRESET, load_presets  # noqa: E402
from playground.ui import handlers as handlers_module  # noqa: E402
from playground.ui.options import all_controls  # noqa: E402
from playground.ui.sharing import disk  # noqa: E402

disk.DOWNLOADS_ROOT = FILES / "downloads"
KINDS = ("generate", "upload", "step", "compare", "export")
WITHIN = 0.10  # of the baseline
WATCH_SECONDS = 60
MEMORY_PAIRS = 20_000
STEP_ROUNDS = 3


def resident_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


class Sampler:
    """RSS every half second in a thread; `peak` is the highest seen since start."""

    def __init__(self):
        self.peak, self._stop = 0.0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.5):
            self.peak = max(self.peak, resident_mb())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def controls(rng: random.Random, tokens: int) -> list:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": tokens, "seed": rng.randint(0, 99),
                                                            "temperature": rng.choice([0.0, 0.7])}
    return [chosen[c.name] for c in all_controls()]


def memory_file(directory: str) -> str:
    """A correction memory of the default preset's pair holding MEMORY_PAIRS pairs."""
    preset = load_presets()[DEFAULT_PRESET]
    counts = {(i % 200, i // 200): 1 + i % 9 for i in range(MEMORY_PAIRS)}
    memory = CorrectionMemory(preset.target, preset.draft, counts)
    return str(memory.save(Path(directory) / "memory.json"))


def visit(client, kind: str, rng: random.Random, tokens: int, memory_path: str) -> None:
    from gradio_client import handle_file  # noqa: PLC0415

    if kind == "upload":
        accepted(client.predict(handle_file(memory_path), api_name="/upload_memory"))
        accepted(client.predict("Tell me about the sea.", "csd", False, *controls(rng, tokens), api_name="/generate"))
    elif kind == "step":
        long_prompt = "Describe the tides, the waves and the winds of the open sea. " * 70  # 981 tokens
        for _ in range(STEP_ROUNDS):
            accepted(client.predict(long_prompt, "sd", 0, *controls(rng, tokens), api_name="/step"))
    elif kind == "compare":
        accepted(client.predict("Tell me about the sea.", "sd", "methods", "tau", "", ["ar", "sd"],
                                *controls(rng, tokens), api_name="/compare"))
    elif kind == "export":
        accepted(client.predict("Tell me about the sea.", "sd", False, *controls(rng, tokens), api_name="/generate"))
        for _ in range(3):
            client.predict(api_name="/export_json")
            client.predict(api_name="/export_charts")
    else:
        method = rng.choice(["sd", "fsd", "csd", "ar", "psd-f"])
        accepted(client.predict("Tell me about the sea.", method, False, *controls(rng, tokens), api_name="/generate"))


def accepted(answer) -> None:
    """Raise if the app refused the call (its status, or the upload's view, is an error line)."""
    shown = answer[0] if isinstance(answer, (list, tuple)) else answer
    if "status-error" in str(shown):
        raise RuntimeError(f"the app refused a visit: {shown}")


def files_mb() -> float:
    """The app's files on disk: Gradio's copies of uploads and downloads, the sessions' exports."""
    return round(sum(disk._size(folder) for folder in disk.folders()) / 2**20, 1)


def wait_for_no_sessions(sessions, limit: float) -> float:
    started = time.monotonic()
    while len(sessions) and time.monotonic() - started < limit:
        time.sleep(0.5)
    return time.monotonic() - started


def watch_return(baseline: float) -> tuple[float | None, int]:
    """(seconds until RSS is within WITHIN of `baseline`, or None; RSS then, or at the end of the watch)."""
    started = time.monotonic()
    while time.monotonic() - started < WATCH_SECONDS:
        if resident_mb() <= baseline * (1 + WITHIN):
            return time.monotonic() - started, round(resident_mb())
        time.sleep(1)
    return None, round(resident_mb())


def launch(visitors: int):
    """(the demo, its URL, the app's Sessions) with the server on 127.0.0.1."""
    from playground.ui import build_demo, launch_options  # noqa: PLC0415

    created = []
    original = handlers_module.Sessions
    handlers_module.Sessions = lambda: created.append(original()) or created[-1]  # to watch the sessions
    demo = build_demo()
    handlers_module.Sessions = original
    _, url, _ = demo.queue(default_concurrency_limit=2, max_size=visitors * STEP_ROUNDS).launch(
        prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, **launch_options())
    return demo, url, created[0]


def warm_up(url: str, tokens: int, memory_path: str, sessions) -> None:
    """Every model loaded, every kind of visit made once, and their sessions ended."""
    from gradio_client import Client  # noqa: PLC0415

    rng = random.Random(0)
    for kind in (*KINDS, *(["generate"] * 4)):
        client = Client(url, verbose=False)
        visit(client, kind, rng, tokens, memory_path)
        client.close()
    wait_for_no_sessions(sessions, 120)


def run_visitors(url: str, visitors: int, tokens: int, memory_path: str) -> tuple[list, list]:
    """(clients that left, clients that abandoned their session), after every visit ended."""
    from gradio_client import Client  # noqa: PLC0415

    clients = [Client(url, verbose=False) for _ in range(visitors)]
    threads = [threading.Thread(target=visit,
                                args=(client, KINDS[i % len(KINDS)], random.Random(i), tokens, memory_path))
               for i, client in enumerate(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return clients[::2], clients[1::2]


def measure(visitors: int, tokens: int, directory: str) -> dict:
    memory_path = memory_file(directory)
    demo, url, sessions = launch(visitors)
    try:
        warm_up(url, tokens, memory_path, sessions)
        figures = {"visitors": visitors, "idle_limit_s": int(os.environ["PLAYGROUND_SESSION_IDLE_SECONDS"]),
                   "baseline_mb": round(resident_mb()), "files_baseline_mb": files_mb()}
        with Sampler() as sampler:
            leaving, abandoning = visits(url, visitors, tokens, memory_path, sessions, figures)
            leave(leaving, sessions, figures)
            figures["peak_mb"] = round(sampler.peak)
        back_in, figures["after_watch_mb"] = watch_return(figures["baseline_mb"])
        figures["back_within_10pct_s"] = None if back_in is None else round(back_in, 1)
        for client in abandoning:
            client.close()
    finally:
        demo.close()
    return figures


def visits(url: str, visitors: int, tokens: int, memory_path: str, sessions, figures: dict) -> tuple[list, list]:
    """The visitors' burst, its figures added to `figures`; returns (leaving, abandoning) clients."""
    started = time.monotonic()
    leaving, abandoning = run_visitors(url, visitors, tokens, memory_path)
    figures["visits_s"] = round(time.monotonic() - started, 1)
    figures["sessions_after_visits"] = len(sessions)
    figures["after_visits_mb"] = round(resident_mb())
    figures["files_after_visits_mb"] = files_mb()
    return leaving, abandoning


def leave(leaving: list, sessions, figures: dict) -> None:
    """The leaving visitors close their clients; then wait for every session to end (the
    abandoned ones by the idle limit), and add the figures at that moment to `figures`."""
    for client in leaving:
        client.close()
    ended_in = wait_for_no_sessions(sessions, figures["idle_limit_s"] + WATCH_SECONDS)
    figures["sessions_ended_s"] = round(ended_in, 1)  # after the leaving visitors closed their clients
    figures["sessions_left"] = len(sessions)
    figures["at_sessions_end_mb"] = round(resident_mb())
    figures["files_at_sessions_end_mb"] = files_mb()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visitors", type=int, default=24)
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--out", help="write the figures here as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        figures = measure(args.visitors, args.tokens, directory)
    for name, value in figures.items():
        print(f"{name:24} {value}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
