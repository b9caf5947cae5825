"""A lecture on the embedded family, as a lecturer clicks it in Chromium: six moments (sd against
ar, one rejected token explained, a Fuzzy SD tau sweep, PyramidSD, another vocabulary and back,
"why only this fast?"), each checking that what the page shows agrees with itself: the same run's
figures across panels, the method the page names is the one that ran, no refusal unseen. Once on
a quiet machine and once with two processes burning both cores beside the app."""

import multiprocessing
import re

import pytest

from playground.models import embedded
from playground.models.default_family import DEFAULT_FAMILY
from playground.ui.options import default_sweep, suggested_sweep

from .test_ui_e2e import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, choose_method, choose_preset

pytestmark = [pytest.mark.slow, pytest.mark.alone]  # scripts/test.sh runs it after the rest, on its own
TOKENS = "24"


def _burn(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


@pytest.fixture(params=["quiet", pytest.param("busy", marks=pytest.mark.burns_cores)])
def machine(request):
    """Nothing else running, or two processes burning both cores while the lecture runs."""
    stop, burners = multiprocessing.Event(), []
    if request.param == "busy":
        burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(2)]
        for burner in burners:
            burner.start()
    yield request.param
    stop.set()
    for burner in burners:
        burner.join(timeout=10)


@pytest.fixture(scope="module")
def app_url():
    import os  # noqa: PLC0415

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}: install it with `apt-get install -y chromium`")
    try:
        embedded.ensure_prepared([*DEFAULT_FAMILY.values(), "bpe-draft"])
    except Exception as error:  # noqa: BLE001  (no GGUF wheel: nothing embedded to lecture on)
        pytest.skip(f"the embedded family is not prepared here: {error}")
    from playground.ui.layout import build_demo, launch_options  # noqa: PLC0415
    from playground.ui.sharing.server_settings import quiet_queue  # noqa: PLC0415

    demo = build_demo()
    _, url, _ = quiet_queue(demo.queue()).launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True,
                                                 **launch_options())
    yield url
    demo.close()


@pytest.fixture
def page(app_url, machine):
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1300})
        page.set_default_timeout(180_000)
        errors = []
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        page.goto(app_url, wait_until="domcontentloaded")
        page.locator("#generate").wait_for()
        page.locator("#opt-max-new-tokens input[type=number]").fill(TOKENS)
        yield page
        page.screenshot(path=str(ARTIFACTS / f"lecture-{machine}.png"), full_page=True)
        browser.close()


def generate_and_wait(page) -> None:
    """Click Generate and wait for this run's end: a status other than the last run's, done, and
    as many tokens on the page as it says."""
    before = page.locator("#status").inner_text()
    page.locator("#generate").click()
    page.wait_for_function("""before => {
        const status = document.querySelector('#status').innerText;
        const done = status.match(/done: (\\d+) tokens/);
        return status !== before && done && document.querySelectorAll('#output span.tok').length === Number(done[1]);
    }""", arg=before)


def stat(page, label: str) -> str:
    return page.locator("#stats .stat", has_text=label).first.locator("b").inner_text()


def no_error_toast(page) -> None:
    toasts = [t for t in page.locator(".toast-body").all_inner_texts() if "error" in t.lower()]
    assert not toasts, toasts


def sd_against_ar(page) -> None:
    """Moment 1: the same tokens counted alike by the status line, the text and the stats."""
    for method in ("sd", "ar"):
        choose_method(page, method)
        generate_and_wait(page)
        done = int(re.search(r"done: (\d+) tokens", page.locator("#status").inner_text())[1])
        assert page.locator("#output span.tok").count() == done == int(stat(page, "tokens"))
    assert "tok-draft" not in page.locator("#output").inner_html(), "ar wrote every token itself"


def one_rejected_token(page) -> None:
    """Moment 2: step mode until a candidate is rejected; its row names the test and its numbers."""
    choose_method(page, "sd")
    page.get_by_role("tab", name="Step mode").click()
    for round_ in range(1, 13):
        page.locator("#step").click()
        page.locator("#step-status", has_text=f"round {round_}:").wait_for()  # this click's round
        if page.locator("#step-explanation td", has_text="rejected").count():
            break
    row = page.locator("#step-explanation tr", has_text="rejected").first.inner_text()
    assert "min(1," in row and "u = " in row, row
    page.get_by_role("tab", name="Generate").click()


def tau_sweep(page) -> None:
    """Moment 3: Compare sweeps fsd's tau; each column names its setting, no column is an error."""
    choose_method(page, "fsd")
    page.get_by_role("tab", name="Compare").click()
    values = page.locator("#compare-values textarea")  # the method's own sweep first, then the lecturer's
    page.wait_for_function("v => document.querySelector('#compare-values textarea').value === v",
                           arg=suggested_sweep(default_sweep("fsd")))
    values.fill("0.2, 0.6")
    page.locator("#compare").click()
    last = page.locator("#compare-view h4", has_text="tau=0.6")
    last.or_(page.locator("#compare-view .status-error")).first.wait_for()
    assert page.locator("#compare-view .status-error").count() == 0, page.locator("#compare-view").inner_text()
    assert page.locator("#compare-view h4", has_text="tau=0.2").count() == 1
    page.get_by_role("tab", name="Generate").click()


def pyramid(page) -> None:
    """Moment 4: psd-f's stats name both stages; its chart draws the qualifier's checks."""
    choose_method(page, "psd-f")
    generate_and_wait(page)
    assert page.locator("#stats .stat", has_text="draft tokens the qualifier accepted").count() == 1
    page.locator("#chart-divergence .legendtext", has_text="qualifier rejected").wait_for(state="attached")


def wait_for_load(page, draft: str) -> None:
    """Wait for the family panel to name the loaded `draft`; a Load that never does fails with what
    the page showed. (The panel, not the status line: a late status of the run before the Load
    was seen overwriting its "loaded ..." line: a Load now ends that run without its late status.)"""
    try:
        page.locator("#family-info", has_text=f"draft {draft}:").wait_for()
    except Exception as error:
        shown = {name: page.locator(selector).all_inner_texts() for name, selector in
                 (("status", "#status"), ("family", "#family-info"), ("toasts", ".toast-body"))}
        preset = page.locator("#preset input").input_value()
        raise AssertionError(f"no {draft!r} loaded; the preset box read {preset!r} and the page {shown}") from error


def another_vocabulary_and_back(page) -> None:
    """Moment 5: a family with its own vocabulary, then the default again: each load names its
    models, the method follows the family, runs use it, no error."""
    choose_preset(page, "embedded-bpe")
    wait_for_load(page, "bpe-draft")
    page.wait_for_function("() => document.querySelector('#method input').value.startsWith('slem')")
    generate_and_wait(page)
    choose_preset(page, "embedded")
    wait_for_load(page, "smollm2-draft")
    page.wait_for_function("() => document.querySelector('#method input').value.startsWith('sd')")
    generate_and_wait(page)
    assert "smollm2-draft" in page.locator("#family-info").inner_text()
    no_error_toast(page)


def why_only_this_fast(page) -> None:
    """Moment 6: the stats' speedup over ar is the what-if's own projection of the same run, or
    both say it is not settled."""
    speedup, tokens = stat(page, "speedup over ar"), stat(page, "tokens")
    page.locator("#what-if").get_by_role("button", name="What if: this run").click()  # the accordion, not the chart
    words = page.locator("#what-if-words")  # filled once the run's charts are drawn: wait for this run's
    page.wait_for_function("n => document.querySelector('#what-if-words')?.innerText.includes(`(${n} tokens,`)",
                           arg=tokens)
    text = words.inner_text()
    if speedup == "not settled":
        assert "Not settled" in text, text
    else:
        assert f"{float(speedup.rstrip('x')):.2f}x" in text, (speedup, text)


def test_a_lecture_on_the_embedded_family(page, machine):
    for moment in (sd_against_ar, one_rejected_token, tau_sweep, pyramid, another_vocabulary_and_back,
                   why_only_this_fast):
        moment(page)
    no_error_toast(page)
