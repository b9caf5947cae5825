"""A class on one Space: many visitors at once against the app in public mode, each behind its own
forwarded address (a gradio_client client, or a Chromium page), and the waits they had.

    HF_HUB_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False python -m bench.class_visitors [--family embedded|tiny]
        [--visitors 30] [--distinct 8] [--pages 4] [--compare-tokens 48] [--out bench/results/class_visitors]

Scenarios, one after another on one server (the app as `app.py` builds it, in a process of its
own, models warmed first by one run of the defaults with another seed):
  topics    N visitors press Generate at once, each with a prompt of its own ("Explain <topic> in two
            sentences."), the default method and settings: a class that types its own prompts
  class     N visitors press Generate on the defaults at once: one run is computed, the rest follow it
  compare   one visitor's Compare (ar and sd side by side) while another visitor's Generate streams
  distinct  M visitors at once, each its own seed at temperature 0.7 (nothing to replay: a real line),
            with K Chromium pages pressing Generate on prompts of their own meanwhile
  exports   ten class visitors download their run's JSON and charts three times each
`--only topics` runs the warm-up and that scenario alone; PLAYGROUND_RUNS_SHARING (inherited by the
server) sets how many runs take turns on the model at once.
Reported: first output p50/p95/max, first status p95/max, done p50/p95, refusals and errors, the
wait each page was told (its first "about N s", a range's middle) against the wait it had until its
first tokens, the longest pause of the stream while
the Compare ran, what the Chromium pages showed while they waited, and the growth of the app's
files on disk (Gradio's copies and the sessions' downloads).
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("PLAYGROUND_PUBLIC", "1")
os.environ.setdefault("PLAYGROUND_TRUSTED_PROXIES", "1")  # each visitor's address is its x-forwarded-for
# This app's files alone, measured: the folder the server (a child process) inherits
FILES = Path(os.environ.setdefault("CLASS_VISITORS_FILES", tempfile.mkdtemp(prefix="class-visitors-")))
os.environ["GRADIO_TEMP_DIR"] = str(FILES / "gradio")

from playground.models.presets import Preset  # noqa: E402
from playground.ui.sharing import disk  # noqa: E402
from playground.ui.tabs.generate import load_examples  # noqa: E402

from .client_views import ETA, Visit, client_for, controls, follow, text_of  # noqa: E402

disk.DOWNLOADS_ROOT = FILES / "downloads"

HERE = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]


TOPICS = ("photosynthesis", "gravity", "a hash map", "recursion", "the water cycle", "inflation", "a black hole",
          "DNA", "a compiler", "democracy", "plate tectonics", "an electric motor", "the immune system",
          "a neural network", "the French Revolution", "supply and demand", "a rainbow", "vaccines",
          "the stock market", "a volcano",
          "encryption", "the moon's phases", "evolution", "a binary search", "climate change", "the internet",
          "a prime number", "osmosis", "the Roman Empire", "a sorting algorithm")


def topic_prompt(n: int) -> str:
    return f"Explain {TOPICS[n % len(TOPICS)]} in two sentences."


def generate_at_once(url: str, names: list[str], prompt, overrides, submitted=None) -> list[Visit]:
    """Every visitor presses Generate at once (then `submitted` is set); returns their visits once
    all have ended. `prompt` is one prompt for all, or a function of the visitor's number."""
    clients = [client_for(url, f"10.45.{n // 250}.{n % 250 + 1}") for n in range(len(names))]
    visits, threads, start = [Visit(name) for name in names], [], time.monotonic()
    for n, (client, visit) in enumerate(zip(clients, visits, strict=True)):
        text = prompt(n) if callable(prompt) else prompt
        job = client.submit(text, "sd", False, *controls(**overrides(n)), api_name="/generate")
        threads.append(threading.Thread(target=follow, args=(visit, job, start)))
        threads[-1].start()
    if submitted is not None:
        submitted.set()
    log(f"{len(names)} visitors pressed Generate")
    for thread in threads:
        thread.join()
    return visits


def log(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", file=sys.stderr, flush=True)


def percentiles(values: list[float]) -> dict:
    """p50, p95 and max of `values` (None where there are none)."""
    values = sorted(values)
    if not values:
        return {"p50": None, "p95": None, "max": None}
    return {"p50": _round(statistics.median(values)), "p95": _round(values[round(0.95 * (len(values) - 1))]),
            "max": _round(values[-1])}


def waits(visits: list[Visit]) -> dict:
    firsts = sorted(v.first_output for v in visits if v.first_output is not None)
    errors = [v.eta_error() for v in visits if v.eta_error() is not None]
    every = [abs(error) for v in visits for error in v.eta_errors()]
    outcomes = {}
    for visit in visits:
        outcomes[visit.outcome.split(":")[0]] = outcomes.get(visit.outcome.split(":")[0], 0) + 1
    others = [visit.outcome for visit in visits if visit.outcome not in ("done", "replayed", "followed")]
    return {"visitors": len(visits), "outcomes": outcomes, "other_outcomes": others[:3],
            "first_output_p50_s": _round(statistics.median(firsts)) if firsts else None,
            "first_output_p95_s": _round(firsts[min(len(firsts) - 1, round(0.95 * (len(firsts) - 1)))]) if firsts
            else None,
            "first_output_max_s": _round(firsts[-1]) if firsts else None,
            "told_a_wait": len(errors),
            "eta_error_median": _round(statistics.median(abs(e) for e in errors)) if errors else None,
            "eta_error_worst": _round(max(errors, key=abs)) if errors else None,
            "eta_within_30pct": sum(abs(e) <= 0.3 for e in errors),
            "eta_within_50pct": sum(abs(e) <= 0.5 for e in errors),
            "first_status_s": percentiles([v.first_status for v in visits if v.first_status is not None]),
            "no_status_in_2s": sum(v.first_status is None or v.first_status > 2 for v in visits),
            "done_s": percentiles([v.done for v in visits if v.done is not None]),
            "pages": [{"told_at": _round(v.told[0]) if v.told else None, "told_s": v.told[1] if v.told else None,
                       "first_output": _round(v.first_output), "done": _round(v.done)} for v in visits],
            "eta_error_every_update_median": _round(statistics.median(every)) if every else None,
            "eta_every_update_within_30pct": f"{sum(e <= 0.3 for e in every)} of {len(every)}"}


def _round(value):
    return None if value is None else round(value, 2)


def compare_while_streaming(url: str, tokens: int) -> dict:
    """A Compare of ar and sd for one visitor; once its first runs are going, another visitor's
    Generate streams: its longest pause between updates, and how long the Compare took."""
    comparer, streamer = client_for(url, "10.46.0.1"), client_for(url, "10.46.0.2")
    start = time.monotonic()
    compare = comparer.submit("Describe a lighthouse at night.", "sd", "methods", "tau", "", ["ar", "sd"],
                              *controls(max_new_tokens=tokens), api_name="/compare")
    time.sleep(3)
    visit = Visit("streamer")
    follow(visit, streamer.submit("Tell me about the tides.", "sd", False, *controls(seed=11),
                                  api_name="/generate"), start)
    try:
        compare_status = text_of(compare.result()[0])
    except Exception as error:  # noqa: BLE001
        compare_status = f"error: {error}"
    pauses = [later - earlier for earlier, later in zip(visit.updates, visit.updates[1:])]
    return {"stream_outcome": visit.outcome, "stream_updates": len(visit.updates),
            "stream_max_pause_s": _round(max(pauses)) if pauses else None,
            "stream_first_output_s": _round(visit.first_output - 3) if visit.first_output else None,
            "compare_s": _round(time.monotonic() - start), "compare_ended": compare_status[:80]}


def pages_waiting(url: str, pages: int, ready: threading.Event, seen: list) -> None:
    """`pages` Chromium pages press Generate on prompts of their own once `ready` is set; each
    page's status is read every 0.2 s: what it said while it waited, and when its tokens came."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tabs = []
        for n in range(pages):
            context = browser.new_context(extra_http_headers={"x-forwarded-for": f"10.47.0.{n + 1}"})
            tab = context.new_page()
            tab.goto(url, wait_until="domcontentloaded")
            tab.locator("#generate").wait_for()
            tab.locator("#prompt textarea").fill(f"Name {n + 2} animals that live in the sea.")
            tabs.append(tab)
        ready.wait()
        time.sleep(1)
        start = time.monotonic()
        for tab in tabs:
            tab.locator("#generate").click()
        shown = [{"page": n, "waiting_lines": [], "first_tokens_s": None, "told": None} for n in range(pages)]
        while any(s["first_tokens_s"] is None for s in shown) and time.monotonic() - start < 600:
            for tab, record in zip(tabs, shown, strict=True):
                if record["first_tokens_s"] is not None:
                    continue
                status = tab.locator("#status").inner_text()
                now = time.monotonic() - start
                if "in line" in status or "identical run" in status:
                    if not record["waiting_lines"] or record["waiting_lines"][-1][1] != status:
                        record["waiting_lines"].append((round(now, 1), status))
                    if record["told"] is None and (found := ETA.search(status)):
                        record["told"] = (round(now, 1), float(found[1]))
                if any(word in status for word in ("generating", "replaying", "following", "done")):
                    record["first_tokens_s"] = round(now, 1)
            time.sleep(0.2)
        for record in shown:
            if record["told"] and record["first_tokens_s"]:
                waited = record["first_tokens_s"] - record["told"][0]
                record["eta_error"] = _round((record["told"][1] - waited) / waited) if waited > 0 else None
            record["waiting_lines"] = record["waiting_lines"][:3] + record["waiting_lines"][-2:]
        seen.extend(shown)
        browser.close()


def exports(url: str, visitors: int) -> dict:
    """Each of the first `visitors` class visitors asks for its JSON and charts three times."""
    outcomes = {"offered": 0, "refused": 0, "error": 0}
    for n in range(visitors):
        client = client_for(url, f"10.45.{n // 250}.{n % 250 + 1}")
        client.predict(load_examples()[0]["prompt"], "sd", False, *controls(), api_name="/generate")
        for _ in range(3):
            for api in ("/export_json", "/export_charts"):
                try:
                    answer = client.predict(api_name=api)
                    outcomes["offered" if answer[0] else "refused"] += 1
                except Exception:  # noqa: BLE001
                    outcomes["error"] += 1
    return outcomes


def app_files_mb() -> float:
    return sum(disk._size(folder) for folder in disk.folders()) / 2**20


def serve(family: str, port: int) -> None:
    """The app as `app.py` builds it (or on the tiny family), on 127.0.0.1:`port`, until killed."""
    from playground.ui import build_demo, launch_options  # noqa: PLC0415
    from playground.ui.sharing.server_settings import queue_settings, quiet_queue  # noqa: PLC0415

    if family == "tiny":
        from playground.models.tiny import tiny_family  # noqa: PLC0415

        by_spec = {m.spec: m for m in tiny_family().values()}
        demo = build_demo(loader=by_spec.__getitem__,
                          presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", default_method="sd")])
    else:
        demo = build_demo()
    quiet_queue(demo.queue(**queue_settings())).launch(server_name="127.0.0.1", server_port=port, quiet=True,
                                                       **launch_options())


def launch(family: str) -> tuple[subprocess.Popen, str]:
    """The server in a process of its own (the visitors' clients here would compete with it for
    one interpreter's lock, which no Space visitor does); returns (the process, its URL)."""
    import httpx  # noqa: PLC0415

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "bench.class_visitors", "--serve", family, "--port", str(port)])
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "config", timeout=5).status_code == 200:
                return server, url
        except httpx.HTTPError:
            time.sleep(1)
    server.kill()
    raise SystemExit("the app did not start within 300 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=["embedded", "tiny"], default="embedded")
    parser.add_argument("--visitors", type=int, default=30)
    parser.add_argument("--distinct", type=int, default=8)
    parser.add_argument("--pages", type=int, default=4)
    parser.add_argument("--compare-tokens", type=int, default=48)
    parser.add_argument("--out", default=str(HERE / "results" / "class_visitors"))
    parser.add_argument("--serve", choices=["embedded", "tiny"], help=argparse.SUPPRESS)  # the server's process
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--only", choices=["topics"], help="the warm-up and this scenario alone")
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve, args.port)
    server, url = launch(args.family)
    prompt = load_examples()[0]["prompt"]
    sharing = os.environ.get("PLAYGROUND_RUNS_SHARING", "default")
    figures = {"family": args.family, "cpus": os.cpu_count(), "runs_sharing": sharing,
               "files_mb_before": round(app_files_mb(), 1)}
    try:
        # The lecturer tries the defaults before class (another seed: not replayed): models loaded, pace measured
        warm = generate_at_once(url, ["warm"], prompt, lambda n: {"seed": 99})
        figures["warm_up"] = warm[0].outcome
        names = [f"visitor {n}" for n in range(args.visitors)]
        figures["topics"] = waits(generate_at_once(url, names, topic_prompt, lambda n: {}))
        log(f"topics: {figures['topics']}")
        if args.only:
            return
        names = [f"visitor {n}" for n in range(args.visitors)]
        class_visits = generate_at_once(url, names, prompt, lambda n: {})
        figures["class"] = waits(class_visits)
        log(f"class: {figures['class']}")
        figures["compare"] = compare_while_streaming(url, args.compare_tokens)
        log(f"compare: {figures['compare']}")
        ready, seen = threading.Event(), []
        browser = threading.Thread(target=pages_waiting, args=(url, args.pages, ready, seen)) if args.pages else None
        if browser:
            browser.start()
            time.sleep(30 if args.family == "embedded" else 10)  # the pages open before the class presses Generate
        distinct = threading.Thread(target=lambda: figures.__setitem__("distinct", waits(generate_at_once(
            url, [f"distinct {n}" for n in range(args.distinct)], prompt, lambda n: {"seed": n, "temperature": 0.7},
            ready))))
        distinct.start()  # the pages press Generate once the distinct visitors have
        distinct.join()
        if browser:
            browser.join()
            figures["pages"] = seen
        figures["exports"] = exports(url, min(args.visitors, 10))
        figures["files_mb_after"] = round(app_files_mb(), 1)
    finally:
        server.terminate()
        server.wait(30)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        name = f"{args.family}-topics-sharing-{sharing}" if args.only else args.family
        (out / f"{name}.json").write_text(json.dumps(figures, indent=1, default=str) + "\n")
        print(json.dumps(figures, indent=1, default=str))


if __name__ == "__main__":
    main()
