"""Resident memory of the public app around a burst of concurrent visitors: with the embedded
models loaded and warm, after N concurrent runs, and once the visitors have left (their sessions
dropped, which hands the C allocator's free pages back to the system).

    HF_HUB_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False python -m bench.session_memory [--visitors 24]
"""

import argparse
import gc
import os
import random
import threading
import time

os.environ.setdefault("PLAYGROUND_PUBLIC", "1")
os.environ.setdefault("PLAYGROUND_RUNS_PER_MINUTE", "0")

from playground.ui import handlers as handlers_module  # noqa: E402
from playground.ui.options import all_controls  # noqa: E402


def resident_mb() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def controls(rng: random.Random, tokens: int) -> list:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": tokens, "seed": rng.randint(0, 99),
                                                            "temperature": rng.choice([0.0, 0.7])}
    return [chosen[c.name] for c in all_controls()]


def wait_for_no_sessions(sessions, limit: float = 120.0) -> float:
    started = time.monotonic()
    while len(sessions) and time.monotonic() - started < limit:
        time.sleep(1)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visitors", type=int, default=24)
    parser.add_argument("--tokens", type=int, default=16)
    args = parser.parse_args()
    from gradio_client import Client  # noqa: PLC0415

    from playground.ui import build_demo, launch_options  # noqa: PLC0415

    created = []
    original = handlers_module.Sessions
    handlers_module.Sessions = lambda: created.append(original()) or created[-1]  # to watch the sessions
    demo = build_demo()
    sessions = created[0]
    _, url, _ = demo.queue(default_concurrency_limit=2).launch(prevent_thread_lock=True, server_name="127.0.0.1",
                                                               quiet=True, **launch_options())
    rng = random.Random(0)
    for method in ("sd", "fsd", "csd", "ar", "psd-f"):  # every model loaded, every per-model cache built
        client = Client(url, verbose=False)
        client.predict("warm up", method, False, *controls(rng, args.tokens), api_name="/generate")
        client.close()
    wait_for_no_sessions(sessions)
    gc.collect()
    figures = {"models loaded and warm, no session (baseline)": resident_mb()}
    clients = [Client(url, verbose=False) for _ in range(args.visitors)]

    def visitor(seed):
        local = random.Random(seed)
        method = local.choice(["sd", "fsd", "csd", "ar", "psd-f"])
        clients[seed].predict("Tell me about the sea.", method, False, *controls(local, args.tokens),
                              api_name="/generate")

    threads = [threading.Thread(target=visitor, args=(seed,)) for seed in range(args.visitors)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    figures[f"after {args.visitors} concurrent runs, {len(sessions)} sessions open"] = resident_mb()
    time.sleep(10)
    figures["10 s later, sessions still open"] = resident_mb()
    for client in clients:
        client.close()  # the visitors leave: Gradio calls demo.unload for each session
    waited = wait_for_no_sessions(sessions)
    gc.collect()
    figures[f"visitors gone ({waited:.0f} s for Gradio to end the sessions)"] = resident_mb()
    demo.close()
    for name, value in figures.items():
        print(f"{name:45} {value:8.0f} MB")


if __name__ == "__main__":
    main()
