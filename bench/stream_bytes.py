"""Bytes the page receives while a run streams, at a fixed model pace, in a real browser.

The tiny in-code models are slowed to one step every --step-seconds (about the embedded family's
pace on a busy 2-core machine), so the count depends on what the view sends, not on how fast the
machine is. Counted on the server: every message the queue sends to the page during the run.

    python bench/stream_bytes.py --max-new-tokens 128 --step-seconds 0.25
"""

import argparse
import collections
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import torch
from gradio import queueing

from playground.models.tiny import tiny_family
from playground.ui.tabs.runs import Runs
from playground.ui.tiny_app import launch_tiny_app

CHROMIUM = "/usr/bin/chromium"
sent = collections.Counter()


def count_messages() -> None:
    send = queueing.Queue.send_message

    def counted(queue, event, message):
        sent[message.msg.value] += len(message.model_dump_json())
        return send(queue, event, message)
    queueing.Queue.send_message = counted


def pace_steps(seconds: float) -> None:
    stream = Runs.stream

    def paced_stream(self, *args):
        models, steps = stream(self, *args)

        def paced():
            try:
                for item in steps:
                    time.sleep(seconds)
                    yield item
            finally:
                steps.close()
        return models, paced()
    Runs.stream = paced_stream


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--step-seconds", type=float, default=0.25)
    args = parser.parse_args()
    torch.set_num_threads(1)
    count_messages()
    pace_steps(args.step_seconds)
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    demo, url = launch_tiny_app(tiny_family())
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1500, "height": 1300})
        page.set_default_timeout(600_000)
        page.goto(url, wait_until="domcontentloaded")
        box = page.locator("#opt-max-new-tokens input[type=number]")
        box.fill(str(args.max_new_tokens))
        page.locator("#status", has_text="done").wait_for()  # the run the change started: a warm-up
        sent.clear()
        page.locator("#generate").click()
        page.locator("#status", has_text="generating").wait_for()
        started = time.perf_counter()
        page.locator("#status", has_text="done").wait_for()
        seconds = time.perf_counter() - started
        page.wait_for_timeout(500)
        browser.close()
    demo.close()
    total = sum(sent.values())
    print(json.dumps({"max_new_tokens": args.max_new_tokens, "step_seconds": args.step_seconds,
                      "seconds": round(seconds, 1), "bytes": total, "bytes_per_second": round(total / seconds),
                      "by_message": dict(sent)}))


if __name__ == "__main__":
    main()
