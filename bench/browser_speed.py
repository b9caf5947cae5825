"""Tokens/s in a real browser and through gradio_client vs the CLI, for the same runs.

The app (`app.py`, the embedded family) and a headless Chromium share the machine, as on a
desktop. For each method and prompt, runs alternate CLI, browser, gradio_client, so load changes
hit all three alike. Reported per method: the medians of tokens/s and of the draft/target cost
ratio c, as the CLI measures them and as the page displays them, their ratios, and the bytes per
second the page received from the queue's event stream while it streamed (Chromium's own count),
and the CPU the browser's processes used during the run, in cores (from /proc; one browser runs).

    python bench/browser_speed.py --methods sd,fsd --repeats 3 --out bench/results/browser_speed
    python bench/browser_speed.py --smoke        # one short run of each path: proves it works

Measure on a quiet machine: the browser and the model compete for the same cores, which is the
point, and anything else running distorts it.
"""

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
PROMPTS = ["Write a Python function that returns a string reversed.",
           *(ROOT / "bench" / "chat_prompts.txt").read_text(encoding="utf-8").splitlines()[:2]]
DRAW_SECONDS = 3  # after a run in the page: its complete charts are drawn before the next run starts
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_app(port: int) -> subprocess.Popen:
    app = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env={**ENV, "GRADIO_SERVER_PORT": str(port)},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(240):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
            return app
        except OSError:
            time.sleep(0.5)
    app.kill()
    raise SystemExit("the app did not start within two minutes")


def cli_run(method: str, prompt: str, tokens: int) -> dict:
    out = subprocess.run([sys.executable, "-m", "playground", "generate", "--method", method, "--prompt", prompt,
                          "--max-new-tokens", str(tokens), "--json"], cwd=ROOT, env=ENV, check=True,
                         capture_output=True, text=True).stdout
    stats = json.loads(out)["stats"]
    return {"tokens_per_second": stats["tokens_per_second"], "cost_ratio": stats["cost_ratio"]}


def shown(stats_html: str, label: str) -> float | None:
    """A number as the stats panel shows it (`<b>7.8</b><span>tokens/s</span>`)."""
    found = re.search(rf"<b>([^<]*)</b><span>{re.escape(label)}</span>", stats_html)
    try:
        return float(found.group(1).rstrip("x%"))
    except (AttributeError, ValueError):
        return None


def displayed(stats_html: str) -> dict:
    return {"tokens_per_second": shown(stats_html, "tokens/s"),
            "cost_ratio": shown(stats_html, "draft step / target step (c)")}


RUN_IN_THE_PAGE = """() => new Promise(resolve => {
    const status = document.querySelector('#status');
    let started = null;
    const watch = new MutationObserver(() => {
        const text = status.innerText;
        if (started === null && text.includes('generating')) started = performance.now();
        if (started !== null && text.includes('done')) {
            watch.disconnect();
            resolve((performance.now() - started) / 1000);
        }
    });
    watch.observe(status, {subtree: true, childList: true, characterData: true});
    document.querySelector('#generate').click();
})"""


def chromium_cpu_seconds() -> float:
    """CPU seconds used so far by every Chromium process on the machine (from /proc)."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if "chrom" in text[text.find("(") + 1:text.rfind(")")]:
            ticks += sum(int(field) for field in text[text.rfind(")") + 2:].split()[11:13])
    return ticks / os.sysconf("SC_CLK_TCK")


class Page:
    """The app in Chromium, with a count of the bytes the page receives."""

    def __init__(self, playwright, url: str):
        self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        self.page = self.browser.new_page(viewport={"width": 1500, "height": 1300})
        self.page.set_default_timeout(600_000)
        self.received, self.streams = 0, set()
        devtools = self.page.context.new_cdp_session(self.page)
        devtools.on("Network.requestWillBeSent", self._note_stream)
        devtools.on("Network.dataReceived", self._count)
        devtools.send("Network.enable")
        self.page.goto(url, wait_until="domcontentloaded")
        self.page.locator("#generate").wait_for()

    def _note_stream(self, event: dict) -> None:
        if "/queue/data" in event["request"]["url"]:  # the queue's event stream: the runs' updates
            self.streams.add(event["requestId"])

    def _count(self, event: dict) -> None:
        """Bytes of the queue's stream only: not the page's own scripts (plotly.js loads lazily,
        4.6 MB, when the first chart is drawn)."""
        if event["requestId"] in self.streams:
            self.received += event["dataLength"]

    def settle(self) -> None:
        """Wait for the run the changed controls started (filling a box always is a change) to
        end, so that it neither counts nor competes; the first one also loads the models."""
        self.page.locator("#status", has_text="generating").wait_for()
        self.page.wait_for_function("!document.querySelector('#status').innerText.includes('generating')")

    def configure(self, method: str, prompt: str, tokens: int) -> None:
        from playground.ui.options import method_choices  # noqa: PLC0415

        page = self.page
        page.locator("#prompt textarea").fill(prompt)
        label = next(label for label, name in method_choices() if name == method)
        page.locator("#method input").fill(label)  # then click it: ArrowDown would pass the chosen one
        page.get_by_role("option", name=label, exact=True).click()
        page.wait_for_function("l => document.querySelector('#method input').value === l", arg=label)
        box = page.locator("#opt-max-new-tokens input[type=number]")
        box.fill(str(tokens))
        box.press("Tab")
        self.settle()
        time.sleep(DRAW_SECONDS)

    def run(self) -> dict:
        """Click Generate and wait, inside the page, for the status to say done: Playwright's own
        waiting polls the page every frame, work a user's page does not do."""
        before, cpu_before = self.received, chromium_cpu_seconds()
        seconds = self.page.evaluate(RUN_IN_THE_PAGE)
        received, cpu = self.received - before, chromium_cpu_seconds() - cpu_before  # before the charts' event
        result = {**displayed(self.page.locator("#stats").inner_html()),
                  "bytes_per_second": received / seconds, "page_cores": cpu / seconds}
        time.sleep(DRAW_SECONDS)  # the run's charts draw after its end: not during the next path's run
        return result

    def close(self) -> None:
        self.browser.close()


def client_run(client, method: str, prompt: str, tokens: int) -> dict:
    from playground.ui.options import all_controls  # noqa: PLC0415

    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": tokens}
    _, _, stats, *_ = client.predict(prompt, method, False, *[chosen[c.name] for c in all_controls()],
                                     api_name="/generate")
    return displayed(stats)


def median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def ratio(top, bottom):
    return top / bottom if top is not None and bottom else None


def paired_ratio(tops: list[dict], bottoms: list[dict], key: str) -> float | None:
    """The median over runs of each run's `key` over its paired run's (same prompt, same turn): the
    prompts' speeds differ by up to 2x, so a ratio of medians mostly says which prompt fell where."""
    ratios = [ratio(top.get(key), bottom.get(key)) for top, bottom in zip(tops, bottoms, strict=True)]
    ratios = [r for r in ratios if r is not None]
    return statistics.median(ratios) if ratios else None


def summarize(method: str, runs: dict) -> dict:
    cli, browser, client = runs["cli"], runs["browser"], runs["client"]
    row = {"method": method, "runs": len(cli)}
    for path, measured in (("cli", cli), ("browser", browser), ("client", client)):
        row[f"{path}_tokens_per_second"] = median(measured, "tokens_per_second")
        row[f"{path}_cost_ratio"] = median(measured, "cost_ratio")
    row["browser_over_cli"] = paired_ratio(browser, cli, "tokens_per_second")
    row["client_over_cli"] = paired_ratio(client, cli, "tokens_per_second")
    row["browser_c_over_cli_c"] = paired_ratio(browser, cli, "cost_ratio")
    row["browser_bytes_per_second"] = median(browser, "bytes_per_second")
    row["page_cores"] = median(browser, "page_cores")
    return row


def markdown(rows: list[dict], settings: dict) -> str:
    def cell(value, fmt):
        return "–" if value is None else fmt.format(value)

    lines = ["# Browser and gradio_client vs CLI (embedded family, greedy)", "",
             f"Settings: {json.dumps(settings)}", "",
             "Tokens/s and c: medians over the runs. Ratios: the median over the runs of each run's value "
             "over its paired CLI run's (same prompt, same turn).", "",
             "| method | CLI tok/s | browser tok/s | browser/CLI | client/CLI | c CLI | c shown | c ratio | "
             "bytes/s to the page | page's CPU (cores) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['method']} | {cell(r['cli_tokens_per_second'], '{:.2f}')} | "
                     f"{cell(r['browser_tokens_per_second'], '{:.2f}')} | {cell(r['browser_over_cli'], '{:.2f}x')} | "
                     f"{cell(r['client_over_cli'], '{:.2f}x')} | {cell(r['cli_cost_ratio'], '{:.3f}')} | "
                     f"{cell(r['browser_cost_ratio'], '{:.3f}')} | {cell(r['browser_c_over_cli_c'], '{:.2f}')} | "
                     f"{cell(r['browser_bytes_per_second'], '{:,.0f}')} | {cell(r.get('page_cores'), '{:.2f}')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", default="sd,fsd,ar")
    parser.add_argument("--prompts", type=int, default=len(PROMPTS), help="how many of the built-in prompts")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "browser_speed")
    parser.add_argument("--smoke", action="store_true", help="one short run of each path (sd, 12 tokens)")
    args = parser.parse_args()
    if args.smoke:
        args.methods, args.prompts, args.max_new_tokens, args.repeats = "sd", 1, 12, 1
        args.out = Path("/tmp") / "browser_speed_smoke"
    from gradio_client import Client  # noqa: PLC0415
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    port = free_port()
    app = start_app(port)
    url, rows, every_run = f"http://127.0.0.1:{port}/", [], {}
    try:
        with sync_playwright() as playwright:
            page, client = Page(playwright, url), Client(url, verbose=False)
            for method in args.methods.split(","):
                runs = every_run[method] = {"cli": [], "browser": [], "client": []}
                for _ in range(args.repeats):
                    for prompt in PROMPTS[:args.prompts]:
                        runs["cli"].append(cli_run(method, prompt, args.max_new_tokens))
                        page.configure(method, prompt, args.max_new_tokens)
                        runs["browser"].append(page.run())
                        runs["client"].append(client_run(client, method, prompt, args.max_new_tokens))
                        print(json.dumps({path: measured[-1] for path, measured in runs.items()}), flush=True)
                rows.append(summarize(method, runs))
                print(json.dumps(rows[-1]), flush=True)
            page.close()
    finally:
        app.terminate()
        app.wait()
    settings = {"prompts": args.prompts, "max_new_tokens": args.max_new_tokens, "repeats": args.repeats,
                "cpu": cpu_name()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps({"settings": settings, "rows": rows, "runs": every_run},
                                                      indent=1))
    (args.out / "README.md").write_text(markdown(rows, settings))
    print(f"wrote {args.out}")


def cpu_name() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return "unknown"
    name = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), "unknown")
    return f"{name}, {os.cpu_count()} cores"


if __name__ == "__main__":
    main()
