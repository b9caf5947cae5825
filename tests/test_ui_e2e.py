"""The whole app on tiny models: launched on 127.0.0.1, driven by gradio_client and by a headless
Chromium (screenshots under tests/artifacts/, git-ignored)."""

import json
import os
import re
import threading
import time
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit
from urllib.request import urlopen

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from playground.decoding.speed import what_if
from playground.methods import METHODS
from playground.ui.layout import value_refusal_gone_js
from playground.ui.options import all_controls, default_sweep, method_choices, suggested_sweep, sweep_options
from playground.ui.sharing import eta
from playground.ui.sharing.server_settings import PROGRESS_POLL_SECONDS, QUEUE_POLL_SECONDS
from playground.ui.tabs.wiring import pointed_html, tab_ended_js
from playground.ui.tiny_app import launch_tiny_app
from playground.ui.views.charts import CHARTS

from .test_sidebar_checks import JS_RANGE

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def app(family):
    demo, url = launch_tiny_app(family)
    yield demo, url
    demo.close()


@pytest.fixture(scope="module")
def app_url(app):
    return app[1]


def test_the_running_queue_polls_rarely(app):
    """Gradio's queue polls every millisecond by default; the launched app's polls every 20 ms (a
    Gradio that renamed these settings fails here rather than silently polling again)."""
    queue = app[0]._queue
    assert (queue.sleep_when_free, queue.progress_update_sleep_when_free) == (QUEUE_POLL_SECONDS,
                                                                              PROGRESS_POLL_SECONDS)


def control_values(**overrides) -> list:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 30} | overrides
    return [chosen[c.name] for c in all_controls()]


def test_gradio_client_drives_generate(app_url):
    from gradio_client import Client  # noqa: PLC0415

    client = Client(app_url, verbose=False)
    status, text, stats = client.predict("hello there", "sd", False, *control_values(), api_name="/generate")
    assert "done: 30 tokens" in status
    assert text.count('class="tok tok-') == 30
    assert "acceptance rate" in stats
    charts = client.predict(api_name="/charts")
    assert len(charts) == len(CHARTS) == 8 and all(chart["type"] == "plotly" for chart in charts)


def test_gradio_client_threshold_follows_the_divergence_it_sends(app_url):
    """The tau slider starts at JS's scale (to 1, past ln 2); a KL run may still ask for tau 2 in one call."""
    from gradio_client import Client  # noqa: PLC0415

    client = Client(app_url, verbose=False)
    status, *_ = client.predict("hello there", "fsd", False, *control_values(divergence="kl", tau=2.0),
                                api_name="/generate")
    assert "done: 30 tokens" in status
    status, *_ = client.predict("hello there", "fsd", False, *control_values(divergence="js", tau=2.0),
                                api_name="/generate")
    assert "status-error" in status and "tau must be between 0 and 1 under js" in status


def test_gradio_client_reports_errors_as_status(app_url):
    from gradio_client import Client  # noqa: PLC0415

    client = Client(app_url, verbose=False)
    status, *_ = client.predict("   ", "sd", False, *control_values(), api_name="/generate")
    assert "status-error" in status and "empty prompt" in status


def test_page_events_read_the_controls_as_one_list(app_url):
    """Gradio's page revisits every input of an ended event at each status message of any later
    event, and a streamed run sends one per update: the page's events read the run's controls
    from the one list the page keeps; API callers still pass each control."""
    config = json.loads(urlopen(app_url + "config").read())
    ids = {c["props"].get("elem_id"): c["id"] for c in config["components"]}
    controls = {ids[c.elem_id] for c in all_controls()}
    by_name = {d["api_name"]: d for d in config["dependencies"]}
    for name in ("generate", "compare", "step", "race"):
        api, page = by_name[name], by_name[name + "_from_page"]
        assert controls <= set(api["inputs"]) and api["api_visibility"] == "public"
        assert ids["run-settings"] in page["inputs"] and not controls & set(page["inputs"])
    assert by_name["generate_from_page"]["inputs"] == [ids["run-settings"]]
    share = next(d for d in config["dependencies"] if ids["share-link"] in d["outputs"] and d["inputs"])
    assert share["inputs"] == [ids["share-link"], ids["run-settings"]], "a share link reads the same list"


@pytest.fixture(scope="module")
def profile(app_url, tmp_path_factory):
    """One browser profile, one window, for the module's tabs: the profile's disk cache keeps the
    app's scripts compiled from one tab to the next, and Chromium draws only the tab in front (a
    context per tab made the module 40% longer). Each tab is still its own session of the
    app, which keeps nothing in the browser (no cookies, no storage)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}: install it with `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        profile = playwright.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"), executable_path=CHROMIUM, args=CHROMIUM_ARGS,
            viewport={"width": 1500, "height": 1300})
        yield profile
        profile.close()


def new_tab(profile):
    """A tab of the one browser window (`profile` is a persistent context: its pages share the window)."""
    tab = profile.new_page()
    tab.set_default_timeout(60_000)
    return tab


@pytest.fixture
def page(profile, app_url):
    """A fresh tab, in its own session: no test sees what another one chose or ran."""
    page = new_tab(profile)
    page.goto(app_url, wait_until="domcontentloaded")
    page.locator("#generate").wait_for()
    yield page
    page.close()


def generate_and_wait(page) -> str:
    """Click Generate and wait until the page shows one finished run: done, and the output holds
    that many tokens (not the last status of a run that a control change replaced beside a new
    run's first tokens). Returns the output's html as that run left it."""
    page.locator("#generate").click()
    return wait_for_finished_run(page)


def wait_for_finished_run(page) -> str:
    """The output's html read in the same instant as the status saying its run is done (read
    later, a run queued behind it may have begun to replace it)."""
    return page.wait_for_function("""() => {
        const done = document.querySelector('#status').innerText.match(/done: (\\d+) tokens/);
        const output = document.querySelector('#output');
        return done && output.querySelectorAll('span.tok').length === Number(done[1]) && output.innerHTML;
    }""").json_value()


def load_and_wait(page) -> None:
    """Click Load and wait for the family panel to describe what loaded; a Load that does not
    finish fails with what the page's status said instead."""
    page.locator("#load").click()
    try:
        page.locator("#family-info", has_text="MiB").wait_for()
    except Exception as error:
        raise AssertionError(f"Load did not describe a family; the status said "
                             f"{page.locator('#status').inner_text()!r}") from error


def test_browser_load_describes_the_family(page):
    load_and_wait(page)
    assert "share one vocabulary" in page.locator("#family-info").inner_text()


def test_browser_the_family_panel_names_the_models_a_run_loaded_after_an_unload(page):
    """A reviewer pressed Unload then Generate: the run loaded and named its models, the panel stayed empty."""
    load_and_wait(page)
    page.locator("#unload").click()
    page.locator("#family-info", has_text="Unloaded").wait_for()
    generate_and_wait(page)
    page.locator("#family-info", has_text="MiB").wait_for()
    assert "Unloaded" not in page.locator("#family-info").inner_text()
    assert "**" not in page.locator("#family-info").inner_text(), "drawn as markdown"


def test_browser_compare_and_race_offer_only_the_loaded_familys_methods(page):
    def offered(picker):
        page.wait_for_function(f"() => document.querySelector('#{picker}')")  # a tab draws when first shown
        return page.locator(f"#{picker} label").all_inner_texts()

    page.locator("#qualifier-spec textarea").fill("")
    load_and_wait(page)
    page.get_by_role("tab", name="Race").click()
    page.wait_for_function("() => !(document.querySelector('#race-methods')?.innerText ?? 'psd-f').includes('psd-f')")
    assert "sd" in offered("race-methods")
    page.get_by_role("tab", name="Compare").click()
    page.get_by_label("methods side by side").check()
    assert "sd" in offered("compare-methods") and not any("psd" in m for m in offered("compare-methods"))
    page.locator("#qualifier-spec textarea").fill("tiny-qualifier")
    page.locator("#load").click()
    page.wait_for_function("() => document.querySelector('#compare-methods').innerText.includes('psd-f')")


@pytest.mark.parametrize("tree_width", ["1", "2"], ids=["chain", "tree"])
def test_browser_generate_shows_colored_tokens_and_charts(page, tree_width):
    """At temperature 1 the tiny draft's tokens are now and then accepted, so most runs show some;
    a run that accepts none (a short one: the tiny target samples its end token too) goes again
    with the next seed, as a user would. A tree width other than the control's is typed after the
    first run: the re-run that its change starts reads the page's settings once they settle (a
    click right after typing may not)."""
    page.locator("#opt-temperature input[type=number]").fill("1")
    finished = generate_and_wait(page)
    width = page.locator("#opt-tree-width input[type=number]")
    if width.input_value() != tree_width:
        rerun_after(page, lambda: width.fill(tree_width))
        finished = wait_for_finished_run(page)
    for seed in ("1", "2", "3"):
        if "tok-draft" in finished:
            break
        rerun_after(page, lambda seed=seed: page.locator("#opt-seed input").fill(seed))
        finished = wait_for_finished_run(page)  # the re-run's own "done", not the status its first tokens met
    assert '<span class="tok ' in finished
    assert "tok-draft" in finished, (
        f"no draft token in four runs; the last said {page.locator('#status').inner_text()!r} with the "
        f"settings {page.locator('#run-settings').text_content()!r}")
    page.locator("#chart-acceptance .js-plotly-plot").wait_for()
    page.locator("#chart-divergence .js-plotly-plot").wait_for()
    page.locator("#show-rejected input").check()
    page.locator("#output s.tok-rejected").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / f"ui-generate-tree-{tree_width}.png"), full_page=True)
    assert_copies_as_written(page, "#output")


def assert_copies_as_written(page, view: str) -> None:
    """Selected and copied, a view's answer is the text the model wrote: the struck candidates stay out."""
    copied = page.evaluate("""view => { const range = document.createRange();
        range.selectNodeContents(document.querySelector(view + ' .token-text') || document.querySelector(view));
        const selection = window.getSelection(); selection.removeAllRanges(); selection.addRange(range);
        return selection.toString(); }""", view)
    kept = page.evaluate("view => Array.from(document.querySelectorAll(view + ' span.tok')).map(t => t.textContent)"
                         ".join('')", view)
    assert copied.replace("\n", "") == kept.replace("\n", ""), (copied[:200], kept[:200])


def test_browser_stats_draw_the_running_lines(page):
    generate_and_wait(page)
    assert page.locator("#output span.tok").count() > 1
    assert page.locator("#stats .sparkline polyline").count() == 2, "the running acceptance and tokens/s lines"
    speed = page.locator("#stats .stat", has_text="tokens/s").first.locator("b").inner_text()
    assert page.locator("#stats figcaption", has_text="tokens/s over the run").locator("b").inner_text() == speed


def test_browser_each_chart_downloads_as_png(page):
    generate_and_wait(page)
    page.locator("#chart-speed .js-plotly-plot").hover()
    with page.expect_download() as download:
        page.locator('#chart-speed .modebar-btn[data-title="Download plot as a PNG"]').click()
    assert download.value.suggested_filename.endswith(".png")
    assert download.value.path().read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_browser_a_control_change_starts_no_run_on_a_fresh_page(page):
    """Re-running on changes is off by default: a page runs only what the lecturer clicked."""
    page.locator("#opt-seed input").fill("5")
    page.locator("#opt-seed input").press("Tab")
    page.wait_for_timeout(3000)  # ten times the settling pause a re-run waits for
    assert page.locator("#output span.tok").count() == 0 and "generating" not in page.locator("#status").inner_text()


def test_browser_releasing_a_slider_reruns(page):
    generate_and_wait(page)
    page.locator("#live input").check()
    before = page.locator("#output").inner_html()
    slider = page.locator("#opt-temperature input[type=range]")
    slider.scroll_into_view_if_needed()
    track = slider.bounding_box()
    page.mouse.click(track["x"] + track["width"] * 0.25, track["y"] + track["height"] / 2)
    page.wait_for_function("b => document.querySelector('#output').innerHTML !== b", arg=before)
    page.locator("#status", has_text="done").wait_for()


def rerun_after(page, change) -> None:
    """Do `change` to a control and wait for the re-run it starts (text differs, then done), with
    "re-run when a control changes" ticked (it is off on a fresh page)."""
    page.locator("#live input").check()
    before = page.locator("#output .token-text").inner_html()
    change()
    page.wait_for_function("b => document.querySelector('#output .token-text').innerHTML !== b", arg=before)
    page.locator("#status", has_text="done").wait_for()


def test_browser_every_control_reruns(page):
    generate_and_wait(page)
    # Typing into a slider's number box, without leaving it: each keystroke is a change, the
    # run starts once they settle.
    temperature = page.locator("#opt-temperature input[type=number]")
    temperature.select_text()
    rerun_after(page, lambda: temperature.press_sequentially("0.7"))
    rerun_after(page, lambda: page.locator("#opt-seed input").fill("5"))
    choose_sampling = page.locator("#opt-draft-sampling input")
    rerun_after(page, lambda: (choose_sampling.fill("greedy"), page.keyboard.press("ArrowDown"),
                               page.keyboard.press("Enter")))
    text = page.locator("#output .token-text").inner_html()
    rerun_after(page, lambda: page.locator("#opt-seed input").fill("11"))
    rerun_after(page, lambda: page.locator("#opt-seed input").fill("5"))
    same = page.locator("#output .token-text").inner_html() == text
    assert same, "the same prompt, seed and options give the same text"


def before_each_target_pass(family, monkeypatch, do) -> None:
    """Call `do()` before each forward pass of the tiny family's target (until monkeypatch.undo())."""
    target = family["target"].model
    forward = target.forward

    def forward_after(*args, **kwargs):
        do()
        return forward(*args, **kwargs)

    monkeypatch.setattr(target, "forward", forward_after)


def test_browser_stop_cancels_cleanly(page, family, monkeypatch):
    """The run cannot end before Stop arrives: the target's next forward pass waits until the
    server has queued the Stop click, whatever the run's length and the machine's speed."""
    stop_queued, held = threading.Event(), threading.Event()

    def hold():
        held.set()
        stop_queued.wait(timeout=120)

    before_each_target_pass(family, monkeypatch, hold)
    try:
        page.locator("#generate").click()
        assert held.wait(timeout=60), "the run never reached the target"
        with page.expect_response(lambda response: "queue/join" in response.url):
            page.locator("#stop").click()
    finally:
        stop_queued.set()
    page.locator("#status", has_text="stopped after").wait_for()
    monkeypatch.undo()
    generate_and_wait(page)  # a stopped run leaves the page usable


SPY_ON_THE_TOKEN_VIEW = """() => {
    const view = document.querySelector('#output .appending-view');
    const insert = view.insertAdjacentHTML.bind(view);
    const inner = Object.getOwnPropertyDescriptor(Element.prototype, 'innerHTML');
    window.parsed = [];
    view.insertAdjacentHTML = (where, html) => { window.parsed.push(['tail', html]); insert(where, html); };
    Object.defineProperty(view, 'innerHTML', {
        set(html) { window.parsed.push(['all', html]); inner.set.call(this, html); },
        get() { return inner.get.call(this); },
    });
}"""


def test_browser_streamed_text_is_parsed_once(page, family, monkeypatch):
    """While a run streams, the page parses each token's HTML once: the first update fills the
    view, later ones add only their new tail (Gradio's HTML view parses and walks the whole text
    at every update). Each target pass is held 50 ms so that the run streams in several updates."""
    before_each_target_pass(family, monkeypatch, lambda: time.sleep(0.05))
    page.evaluate(SPY_ON_THE_TOKEN_VIEW)
    generate_and_wait(page)
    parsed = page.evaluate("() => window.parsed")
    assert [kind for kind, _ in parsed].count("tail") >= 1, "the run was shown in one piece: it did not stream"
    parsed_spans = sum(html.count('class="tok ') for _, html in parsed)
    assert parsed_spans == page.locator("#output span.tok").count()


def run_with_max_new_tokens(page, tokens: int) -> None:
    """Set max new tokens (the change re-runs the prompt) and wait for a finished run that long."""
    page.locator("#live input").check()
    box = page.locator("#opt-max-new-tokens input[type=number]")
    box.fill(str(tokens))
    box.press("Tab")
    page.wait_for_function("""tokens => {
        const done = document.querySelector('#status').innerText.match(/done: (\\d+) tokens/);
        return done && Number(done[1]) === tokens && document.querySelectorAll('#output span.tok').length === tokens;
    }""", arg=tokens)


def test_browser_token_view_keeps_its_height_and_follows_the_end(page):
    """The token view has a fixed height: after a long run the stats below sit where they sat
    after a short one (a growing view moved them, and the charts, at every new line). Shrunk as
    a reader may (its corner drags), it scrolls and shows the newest tokens."""
    stats_top = "() => document.querySelector('#stats').getBoundingClientRect().top + window.scrollY"
    run_with_max_new_tokens(page, 4)
    short = page.evaluate(stats_top)
    run_with_max_new_tokens(page, 440)  # the tiny target's context (512) holds the prompt and 440 more
    assert page.evaluate(stats_top) == short
    page.evaluate("() => { document.querySelector('#output .appending-view').style.height = '3em'; }")
    run_with_max_new_tokens(page, 439)
    view = page.evaluate("""() => {
        const view = document.querySelector('#output .appending-view');
        return {scroll: view.scrollHeight, client: view.clientHeight, top: view.scrollTop};
    }""")
    assert view["scroll"] > 2 * view["client"], "the run overflows the shrunk view"
    assert view["top"] + view["client"] >= view["scroll"] - 2, "the view shows the newest tokens"


def test_browser_method_change_shows_only_its_options(page):
    assert not page.locator("#opt-tau").is_visible()
    page.locator("#method input").fill("fsd")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.locator("#opt-tau").wait_for(state="visible")


def test_browser_threshold_slider_follows_the_divergence(page):
    choose_method(page, "fsd")
    page.locator("#opt-tau").wait_for(state="visible")
    maximum = "document.querySelector('#opt-tau input[type=range]').max"
    assert float(page.evaluate(maximum)) == 1.0  # JS: past its maximum ln 2, where every candidate is accepted
    for name, expected in (("fsd-js", 2.0), ("js", 1.0)):
        page.locator("#opt-divergence input").fill(name)
        page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
        page.wait_for_function(f"Math.abs(Number({maximum}) - {expected}) < 1e-4")
    assert "ln 2 = 0.693" in page.locator("#opt-tau").inner_text()


def choose_method(page, method: str) -> None:
    """Pick `method` by clicking its option: with its own label typed, the method already chosen
    lists every option, and ArrowDown, Enter would pick the next one."""
    label = next(label for label, name in method_choices() if name == method)
    page.locator("#method input").fill(label)
    page.get_by_role("option", name=label, exact=True).click()
    page.wait_for_function("l => document.querySelector('#method input').value === l", arg=label)


def estimate_events(app_url: str) -> set[int]:
    """The ids of Compare's and Race's estimates as the controls change: the page's server events
    writing their "expected" lines on a change of the controls' settled text."""
    config = json.loads(urlopen(app_url + "config").read())
    ids = {c["props"].get("elem_id"): c["id"] for c in config["components"]}
    lines = {ids["compare-expected"], ids["race-expected"]}
    return {d["id"] for d in config["dependencies"] if d["backend_fn"] and lines & set(d["outputs"])
            and [ids["run-settings-settled"], "change"] in d["targets"]}


def test_browser_a_method_switch_asks_each_estimate_again_a_few_times_not_in_a_loop(page, app_url):
    """A method switch sets some 20 controls; each estimate follows them once they have settled, not
    at each change: Gradio re-set the page's settings list as each event reported, so the estimates,
    reading that list, fired each other 56-185 times a switch (10-18 a second for 150 s on a busy page)."""
    estimates, asked = estimate_events(app_url), []
    page.on("request", lambda r: "queue/join" in r.url and asked.append(json.loads(r.post_data)["fn_index"]))
    settled = page.locator("#run-settings-settled textarea")
    for method in ("fsd", "sd", "psd-a", "sd"):
        asked.clear()
        choose_method(page, method)
        page.wait_for_function("([box, m]) => JSON.parse(document.querySelector(box).value)[1] === m",
                               arg=["#run-settings-settled textarea", method])
        page.wait_for_timeout(2000)
        counts = [asked.count(e) for e in estimates]
        assert settled.input_value() == page.evaluate("window.playgroundSettled"), "the text went back to an older one"
        # Asked again for the switch's own changes (Compare's option and values) and each settled text:
        # the method, then its defaults, or more where the server answers a switch in steps over 0.3 s
        # apart (a loaded test machine). Following the list, each estimate was asked 15-16 times here.
        assert len(counts) == 2 and all(1 <= n <= 8 for n in counts), (method, counts, settled.input_value())


def test_browser_compares_line_is_told_again_while_its_tab_is_shown_and_not_after(page, app_url):
    """Beside two burners started with Compare open, its line kept a quiet machine's "about 25 s"
    for 32 s: told only as the settings changed. Its timer asks for it while the tab is shown."""
    config = json.loads(urlopen(app_url + "config").read())
    line = next(c["id"] for c in config["components"] if c["props"].get("elem_id") == "compare-expected")
    timers = {target for d in config["dependencies"] if line in d["outputs"]
              for target, event in d["targets"] if event == "tick"}
    assert timers, "an estimate event with a timer's tick among its triggers"
    asked = []  # the estimate asked by a tick: the event also follows the tab's choice and the settings
    page.on("request", lambda r: "queue/join" in r.url and json.loads(r.post_data).get("trigger_id") in timers
            and asked.append(time.monotonic()))
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_timeout(1000 * (eta.BARE_STEP_AGAIN + 3))
    assert len(asked) >= 1, "told again with no change while the tab is shown"
    page.get_by_role("tab", name="Generate").click()
    page.wait_for_timeout(1000)
    left = len(asked)
    page.wait_for_timeout(1000 * (eta.BARE_STEP_AGAIN + 2))
    assert len(asked) == left, "not while another tab is shown"


def compare_and_wait(page, last_column: str) -> None:
    """Click Compare and wait for the column labelled `last_column` or for an error."""
    page.locator("#compare").click()
    column = page.locator("#compare-view h4").get_by_text(last_column, exact=True)
    column.or_(page.locator("#compare-view .status-error")).first.wait_for()
    assert page.locator("#compare-view .status-error").count() == 0, page.locator("#compare-view").inner_text()


@pytest.fixture
def compare_page(page):
    page.locator("#opt-max-new-tokens input[type=number]").fill("16")  # short runs; the Compare defaults stay
    page.get_by_role("tab", name="Compare").click()
    return page


# Any text Gradio's own progress shows ("processing | 0.5/33.3s"), in window.gradioProgress.
WATCH_GRADIO_PROGRESS = """() => {
    window.gradioProgress = [];
    new MutationObserver(() => document.querySelectorAll('.progress-text, .eta-bar, .meta-text-center')
        .forEach(node => window.gradioProgress.push(node.textContent))
    ).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def test_browser_compare_with_the_defaults(compare_page):
    page = compare_page
    option = default_sweep("sd")
    page.evaluate(WATCH_GRADIO_PROGRESS)
    compare_and_wait(page, f"sd {option}={suggested_sweep(option).split(', ')[-1]}")
    # Its own line tells its time left: Gradio's average of past events had read beside it.
    assert page.evaluate("window.gradioProgress") == []
    assert page.locator("#compare-view .compare-column").count() == 4  # the ar reference, then 3 values
    assert page.locator("#compare-view h4").first.inner_text() == "ar (reference)"
    # The sidebar's status points to the tab (the last Generate's "done: ..." stood there, stale),
    # then says when the Compare has ended.
    status = page.locator("#status").inner_text()
    assert status.startswith(("Compare: its progress and results are on its tab", "Compare has ended")), status
    page.locator("#status", has_text="Compare has ended: its results are on its tab").wait_for()
    # A status written since the pointer (a new run's) is left alone, not written back as read.
    ended_js = tab_ended_js("Compare", pointed_html("Compare", "its progress and results are"))
    assert page.evaluate(f"({ended_js})('<div>generating…</div>', '')") is None
    page.screenshot(path=str(ARTIFACTS / "ui-compare.png"), full_page=True)
    # A refused sweep keeps these results under its refusal (it had replaced them), and they stay
    # once the values are fixed and the refusal goes.
    page.locator("#compare-values textarea").fill("2, banana")
    page.locator("#compare").click()
    page.locator("#compare-view .status-error", has_text="banana").wait_for()
    assert page.locator("#compare-view .kept-results .compare-column").count() == 4
    # The sidebar says why it did not run, not the kept results (a reviewer saw them pasted there).
    reason = page.locator("#compare-view .status-error").inner_text()
    page.locator("#status .status-error", has_text="Compare did not run").wait_for()
    assert page.locator("#status").inner_text().strip() == "Compare did not run: " + reason.strip()
    page.locator("#compare-option input").click()  # focus passing through the option box changes nothing
    page.keyboard.press("Tab")
    page.locator("#compare-values textarea").press("Tab")
    page.wait_for_timeout(1000)
    assert page.locator("#compare-values textarea").input_value() == "2, banana", "tabbing replaced the values"
    assert page.locator("#compare-view .status-error", has_text="banana").count() == 1, "tabbing cleared the refusal"
    page.locator("#compare-values textarea").fill("2, 3")
    page.wait_for_function("() => !document.querySelector('#compare-view .status-error')")
    assert page.locator("#compare-view .compare-column").count() == 4
    page.get_by_label("methods side by side").check()
    compare_and_wait(page, "sd")
    assert page.locator("#compare-view h4").all_inner_texts() == ["ar", "sd"]


def test_browser_a_method_switch_opens_no_list_that_focus_passed_through(compare_page):
    """Walk 9: keyboard focus passing through Compare's option box left its list open (Gradio keeps
    it), and a method switch filled it over the Compare button until Escape was pressed in the box."""
    page = compare_page
    page.get_by_label("sweep an option").check()
    page.locator("#compare-values textarea").click()
    page.keyboard.press("Shift+Tab")  # into the option box: its list opens (Gradio's), beside the button
    assert page.locator("#compare-option ul.option-list").is_visible()
    assert page.evaluate("""() => {
        const box = document.querySelector('#compare').getBoundingClientRect();
        return [[0.1, 0.5], [0.5, 0.5], [0.9, 0.5]].every(([x, y]) => document.querySelector('#compare').contains(
            document.elementFromPoint(box.left + x * box.width, box.top + y * box.height)));
    }"""), "the open list lies over the Compare button"
    page.keyboard.press("Shift+Tab")  # and out of it
    choose_method(page, "fsd")
    page.wait_for_function("o => document.querySelector('#compare-option input').value === o",
                           arg=default_sweep("fsd"))
    page.wait_for_timeout(500)
    assert not page.locator("#compare-option ul.option-list").is_visible(), "its list opened by itself"
    page.locator("#compare").click(trial=True)  # nothing lies over the button
    other = next(option for option in sweep_options("fsd") if option != default_sweep("fsd"))
    page.locator("#compare-option input").click()  # the list still opens, and picks, where asked
    page.get_by_role("option", name=other, exact=True).click()
    page.wait_for_function("o => document.querySelector('#compare-option input').value === o", arg=other)


@pytest.mark.parametrize("method", list(METHODS))
def test_browser_compare_each_methods_default_sweep(compare_page, method):
    page = compare_page
    page.get_by_label("sweep an option").check()
    choose_method(page, method)
    option = default_sweep(method)
    page.wait_for_function("o => document.querySelector('#compare-option input').value === o", arg=option)
    compare_and_wait(page, f"{method} {option}={suggested_sweep(option).split(', ')[-1]}")


def test_browser_step_mode(page):
    page.get_by_role("tab", name="Step mode").click()
    page.locator("#step").click()
    page.locator("#step-explanation", has_text="Acceptance test per candidate").wait_for()
    page.locator("#step-bars .js-plotly-plot").wait_for()
    page.screenshot(path=str(ARTIFACTS / "ui-step.png"), full_page=True)
    for round_ in range(2, 8):  # the tiny draft's candidates are rejected within a few rounds
        if page.locator("#step-output s.tok-rejected").count():
            break
        page.locator("#step").click()
        page.locator("#step-status", has_text=f"round {round_}:").wait_for()
    assert page.locator("#step-output s.tok-rejected").count(), "a rejected candidate in seven rounds"
    assert_copies_as_written(page, "#step-output")  # it copied as "fordef reversed_valuestatestring"


def test_browser_toy(page):
    page.get_by_role("tab", name="Toy: seed-001 example").click()
    page.locator("#toy-many").click()
    page.locator("#toy-table", has_text="100 in all").wait_for()
    page.locator("#toy-bars .js-plotly-plot").wait_for()
    page.screenshot(path=str(ARTIFACTS / "ui-toy.png"), full_page=True)


def test_browser_export_offers_a_download(page):
    generate_and_wait(page)
    page.locator("#export-json").click()
    link = page.locator("#download [data-testid=download-link]")
    link.wait_for()
    assert link.get_attribute("href").endswith("run.json")


@pytest.fixture
def fresh_page(page):
    """A new tab in the same browser, in its own session; the test opens the address it wants."""
    tab = new_tab(page.context)
    yield tab
    tab.close()


def test_browser_share_link_opens_the_setting_and_links_it_back(fresh_page, app_url):
    tab, prompt = fresh_page, "why is the sky blue?"
    tab.goto(f"{app_url}?{urlencode({'method': 'fsd', 'tau': 0.2, 'seed': 7, 'prompt': prompt})}",
             wait_until="domcontentloaded")
    tab.locator("#status", has_text="opened a shared setting").wait_for()
    assert tab.locator("#method input").input_value() == next(label for label, name in method_choices()
                                                               if name == "fsd")
    assert tab.locator("#opt-tau input[type=number]").input_value() == "0.2"
    assert tab.locator("#opt-seed input").input_value() == "7"
    assert tab.locator("#prompt textarea").input_value() == prompt
    tab.locator("#share").click()
    link = tab.locator("#share-link textarea")
    tab.wait_for_function("() => document.querySelector('#share-link textarea')?.value.includes('tau=')")
    assert link.input_value().startswith(f"{app_url}?")
    query = dict(parse_qsl(urlsplit(link.input_value()).query))
    assert (query["method"], query["tau"], query["seed"], query["prompt"]) == ("fsd", "0.2", "7", prompt)
    tab.screenshot(path=str(ARTIFACTS / "ui-share.png"))
    # A bad value: one line that names it, its default kept, the page usable.
    tab.goto(f"{app_url}?method=fsd&tau=lots&seed=3", wait_until="domcontentloaded")
    tab.locator("#status .status-error", has_text="tau must be a number, got 'lots'").wait_for()
    default_tau = next(c.default for c in all_controls() if c.name == "tau")
    assert float(tab.locator("#opt-tau input[type=number]").input_value()) == default_tau
    assert tab.locator("#opt-seed input").input_value() == "3"


# Records, in the page, when the race view's replay starts (it hides every timed element) and
# when each lane's finish line is revealed: [recorded second, seconds after the start].
WATCH_REVEALS = """() => {
    window.reveals = []; window.replayStart = null;
    new MutationObserver((changes) => changes.forEach(({target}) => {
        const hidden = target.classList.contains('race-hidden');
        if (hidden && window.replayStart === null) window.replayStart = performance.now();
        if (!hidden && target.classList.contains('race-finish') && window.replayStart !== null)
            window.reveals.push([Number(target.dataset.t), (performance.now() - window.replayStart) / 1000]);
    })).observe(document.querySelector('#race-view'), {subtree: true, attributes: true, attributeFilter: ['class']});
}"""


def test_browser_race_replays_both_runs_to_the_end_on_their_clocks(fresh_page, app_url):
    tab = fresh_page
    tab.goto(f"{app_url}?max_new_tokens=120", wait_until="domcontentloaded")  # long enough to watch
    tab.locator("#status", has_text="opened a shared setting").wait_for()
    tab.get_by_role("tab", name="Race").click()
    tab.locator("#race-methods").get_by_label("fsd", exact=True).uncheck()
    tab.evaluate(WATCH_REVEALS)
    tab.locator("#race-run").click()
    tab.wait_for_function("() => window.reveals.length === 2")  # both finishes, revealed by the replay
    tab.locator("#race-view .race-summary").wait_for(state="visible")
    lanes = tab.locator("#race-view .race-lane")
    assert lanes.all_inner_texts()[0].startswith("#1 ar") and lanes.nth(1).inner_text().startswith("#2 sd")
    for lane in lanes.all():
        tokens = int(re.search(r"(\d+) tokens in", lane.locator(".race-finish").inner_text()).group(1))
        assert tokens == 120 and lane.locator("span.tok").count() == tokens
        assert lane.locator("span.tok").last.is_visible() and lane.locator(".race-finish").is_visible()
    assert tab.locator("#race-view .race-hidden").count() == 0
    reveals = tab.evaluate("window.reveals")
    assert len(reveals) == 2 and reveals == sorted(reveals), reveals  # in the order of the recorded finishes
    assert all(shown >= recorded - 0.05 for recorded, shown in reveals), reveals  # none before its time
    tab.screenshot(path=str(ARTIFACTS / "ui-race.png"), full_page=True)
    assert tab.locator("#race-runs").get_by_label("#2 sd", exact=False).is_checked()


def test_browser_generate_right_after_choosing_a_method_runs_that_method(page):
    """A reviewer chose sd and pressed Generate at once: the page ran the fsd it had run before
    (the page's list of settings had not yet heard of the method's change). Each time: the method
    chosen is the method that runs, as its corrections show (fsd draws them from p, sd from the
    residual)."""
    for method, drawn_from, other in [("fsd", "p\n", "residual"), ("sd", "residual", "p\n")] * 2:
        choose_method(page, method)
        before = page.locator("#status").inner_text()
        page.locator("#generate").click()  # at once, as a quick hand does
        page.wait_for_function("b => document.querySelector('#status').innerText !== b", arg=before)
        wait_for_finished_run(page)
        shown = page.locator("#output").inner_html()
        assert f"drawn from: {drawn_from}" in shown and f"drawn from: {other}" not in shown, method


def choose_preset(page, name: str) -> None:
    page.locator("#preset input").fill(name)
    page.get_by_role("option", name=name, exact=True).click()


# Every text added to the status box, as added, in window.statuses: an observer reading the box
# may run after a later text replaced it.
RECORD_STATUSES = """() => {
    window.statuses = [];
    new MutationObserver(records => records.forEach(record => {
        const inStatus = (record.target.parentElement || record.target).closest?.('#status');
        const texts = record.type === 'characterData' ? [record.target.data]
            : [...record.addedNodes].map(node => node.textContent);
        texts.map(text => (text || '').trim()).filter(text => inStatus && text)
            .forEach(text => window.statuses.push(text));
    })).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def test_browser_a_preset_list_closed_without_a_pick_loads_nothing(page):
    """Closing the list on the preset in use loaded its family again; on a busy machine that Load
    answered late, over the next pick's, and the page named the old models under the new boxes.
    The panel keeps naming the loaded models: it was given the preset's blurb again."""
    load_and_wait(page)
    generate_and_wait(page)
    page.evaluate(RECORD_STATUSES)
    page.locator("#preset input").click()
    page.get_by_role("option", name="tiny-foreign", exact=True).wait_for()
    page.keyboard.press("Escape")
    page.get_by_role("option", name="tiny-foreign", exact=True).wait_for(state="detached")
    page.locator("#family-info").click()  # the list closed, its box left: as a person moves on
    page.locator("#status", has_text="nothing to load").wait_for()
    assert "tiny-draft" in page.locator("#family-info").inner_text()
    choose_preset(page, "tiny-foreign")
    page.locator("#status", has_text="loaded tiny-target, tiny-foreign-draft").wait_for()
    page.locator("#family-info", has_text="tiny-foreign-draft").wait_for()
    statuses = page.evaluate("window.statuses")
    assert not [text for text in statuses if "already loaded" in text], statuses
    # the page says a pick is loading at once (on a busy machine the last run's "done" stood for seconds)
    assert "preset tiny-foreign: loading its family…" in statuses, statuses
    assert "already loaded" not in page.locator("#status").inner_text()


def test_browser_one_generate_after_a_preset_switch_runs_once(page):
    """After a preset switch and a look at the method list, one Generate ran twice: a second run,
    unasked, began as the first ended (a walk's cell counted 2 runs; a probe saw it after 2 of 4
    switches, and the server was asked for a run 7 times for 4 clicks)."""
    for preset, loaded in (("tiny-foreign", "loaded tiny-target, tiny-foreign-draft"),
                           ("tiny", "loaded tiny-target, tiny-draft, tiny-qualifier")):
        choose_preset(page, preset)
        page.locator("#status", has_text=loaded).wait_for()
        page.locator("#method input").click()
        page.get_by_role("listbox").wait_for()
        page.keyboard.press("Escape")
        page.get_by_role("listbox").wait_for(state="detached")
        page.evaluate(RECORD_STATUSES)
        generate_and_wait(page)
        page.wait_for_timeout(3000)  # the unasked run began as the first ended
        statuses = page.evaluate("window.statuses")
        ended = next(i for i, text in enumerate(statuses) if text.startswith("done:"))
        assert not [text for text in statuses[ended:] if text.startswith("generating")], (preset, statuses)
        assert page.locator("#status").inner_text().startswith("done:"), "the run's end stays on the page"


def test_browser_switching_families_loads_each_and_never_sticks(page):
    """A lecturer's moment 5 then 1: a heterogeneous family, then back to the default one. Each
    choice loads its family; the method follows it; no error toast; runs use what the page shows."""
    choose_preset(page, "tiny-foreign")
    page.locator("#status", has_text="loaded tiny-target, tiny-foreign-draft").wait_for()
    page.wait_for_function("() => document.querySelector('#method input').value.startsWith('slem')")
    choose_preset(page, "tiny")
    # The list may fire its pick twice (as it closes, and as focus leaves it): the second finds it loaded.
    page.locator("#status", has_text=re.compile("loaded tiny-target, tiny-draft, tiny-qualifier|tiny is the family "
                                                "loaded: nothing to load")).wait_for()
    page.wait_for_function("() => document.querySelector('#method input').value.startsWith('sd:')")
    page.locator("#family-info", has_text="tiny-draft").wait_for()
    assert page.locator(".toast-body").count() == 0, "no error toast"
    generate_and_wait(page)
    assert page.locator(".toast-body").count() == 0, "no error toast after the run either"
    family = page.locator("#family-info").inner_text()
    assert "tiny-draft" in family and "tiny-foreign-draft" not in family, "the panel names the models the run used"
    page.locator("#draft-spec textarea").press_sequentially("-x")  # typed (as a person types), not loaded
    page.locator("#status", has_text="press Load").wait_for()
    page.locator("#generate").click()
    page.locator("#status .status-error", has_text="model boxes changed since the last Load").wait_for()
    page.screenshot(path=str(ARTIFACTS / "family-switch.png"))


def test_browser_teaching_settings_give_step_mode_something_to_explain(page):
    """One click: temperature 1 and full blocks; the next round's table shows the uniform draw u
    against min(1, p/q) for each candidate."""
    page.get_by_role("tab", name="Step mode").click()
    page.locator("#step-teaching").click()
    page.wait_for_function("() => Number(document.querySelector('#opt-temperature input[type=number]').value) === 1")
    page.locator("#step-status", has_text="step mode reset").wait_for()
    # The sidebar is shared: the page says the other tabs' runs use the teaching settings too.
    page.locator("#step-status", has_text="which Generate, Compare and Race use too").wait_for()
    page.locator("#method-about", has_text="Then step mode's Teaching settings set temperature 1").wait_for()
    page.locator("#step").click()
    page.locator("#step-explanation", has_text="u = ").wait_for()
    assert "keep with min(1, p(x) / q(x))" in page.locator("#step-explanation").inner_text()
    page.screenshot(path=str(ARTIFACTS / "ui-step-teaching.png"), full_page=True)


def test_browser_step_mode_keeps_its_round_count_on_its_own_tab(page):
    """The sidebar's status is every tab's: step mode's "round 1: ..." stayed there on the others."""
    page.get_by_role("tab", name="Step mode").click()
    page.locator("#step").click()
    page.locator("#step-explanation", has_text="Acceptance test per candidate").wait_for()
    assert "round" not in page.locator("#status").inner_text()
    assert page.locator("#status").inner_text().startswith("Step mode: each step and its explanation are on its tab")
    assert page.locator("#step-status").inner_text().startswith("sd, round 1:")


def test_browser_each_step_click_steps_a_round(page):
    """A reviewer clicked Step again while its round ran: one round came, the click dropped unsaid."""
    page.get_by_role("tab", name="Step mode").click()
    page.locator("#step").click()
    page.locator("#step").click()
    page.locator("#step-status", has_text="round 2:").wait_for()
    # and the first click's round, whose view may have gone by unseen, stays below the second's
    assert "round 1 is folded below this one's checks" in page.locator("#step-status").inner_text()
    page.locator("#step-explanation details summary", has_text="Round 1, the round before").click()
    page.locator("#step-explanation details[open] td", has_text="min(1,").first.wait_for()


ANNOUNCED = """() => { window.announced = [];
    new MutationObserver(changes => changes.forEach(({target}) => window.announced.push(target.textContent)))
        .observe(document.body, {subtree: true, childList: true, characterData: true}); }"""


def test_browser_the_last_runs_charts_are_dimmed_and_said_to_be_while_a_run_goes(page):
    """A reviewer read an ar run's live stats above the last sd run's acceptance charts, unsaid."""
    generate_and_wait(page)
    page.locator("#charts .js-plotly-plot").first.wait_for()
    page.evaluate(ANNOUNCED)
    before = page.locator("#status").inner_text()
    page.locator("#generate").click()  # then the new run's end, not the last one's "done" still shown
    page.wait_for_function("b => document.querySelector('#status').innerText !== b", arg=before)
    wait_for_finished_run(page)
    assert any("The charts below are the last run's" in text for text in page.evaluate("window.announced"))
    page.wait_for_function("() => !document.querySelector('#charts.charts-stale')")
    assert page.locator("#charts-note").inner_text().strip() == ""


def test_browser_finished_events_are_announced_in_words(page):
    """Gradio announces a finished event in a live region under its outputs (page text includes
    it): "common.complete", its English strings lacking the key, under step mode's chart."""
    page.get_by_role("tab", name="Step mode").click()
    page.evaluate(ANNOUNCED)
    page.locator("#step").click()
    page.locator("#step-bars .js-plotly-plot").wait_for()
    page.wait_for_function("() => window.announced.some(text => /^(Complete|common[.]complete)$/.test(text))")
    assert not [text for text in page.evaluate("window.announced") if "common." in text]


def held_generate(family, monkeypatch, page) -> threading.Event:
    """Click Generate on `page` and return once its run holds the model in a target pass, until
    the returned event is set."""
    release, held = threading.Event(), threading.Event()

    def hold():
        held.set()
        release.wait(timeout=120)

    before_each_target_pass(family, monkeypatch, hold)
    page.locator("#generate").click()
    assert held.wait(timeout=60), "the run never reached the target"
    return release


def test_browser_a_queued_generate_says_it_waits_for_the_model(page, fresh_page, app_url, family, monkeypatch):
    """While another visitor's run holds the model, a Generate says at once that it waits (the
    page showed the previous run's output and status, unchanged, until the other run ended): that
    the model is in use, then, as it takes turns beside that run, that they share it."""
    fresh_page.goto(app_url, wait_until="domcontentloaded")
    fresh_page.locator("#generate").wait_for()
    release = held_generate(family, monkeypatch, page)
    try:
        fresh_page.locator("#generate").click()
        fresh_page.locator("#status", has_text=re.compile("waiting for the model|1 other run shares the model")
                           ).wait_for(timeout=10_000)
    finally:
        release.set()
    monkeypatch.undo()
    wait_for_finished_run(fresh_page)


def signalled(monkeypatch, cls, name: str) -> threading.Event:
    """An event set after each call of cls.name (until monkeypatch.undo())."""
    called, method = threading.Event(), getattr(cls, name)
    monkeypatch.setattr(cls, name, lambda self, *args: (method(self, *args), called.set())[0])
    return called


def test_browser_a_race_says_it_stopped_the_generate_run(page, family, monkeypatch):
    """A Generate pressed while one runs (the page sends it once that one ends), then a Race: the
    Race stops it before it starts, and the status said "stopped before it started", no more."""
    from playground.ui.sharing.stale_runs import StaleRunGuard  # noqa: PLC0415

    page.locator("#opt-max-new-tokens input[type=number]").fill("8")
    page.evaluate(RECORD_STATUSES)
    release = held_generate(family, monkeypatch, page)
    triggered, stopped = signalled(monkeypatch, StaleRunGuard, "trigger"), signalled(monkeypatch, StaleRunGuard, "stop")
    try:
        page.locator("#generate").click()
        assert triggered.wait(timeout=60), "the second Generate never reached the server"
        page.get_by_role("tab", name="Race").click()
        page.locator("#race-methods").get_by_label("fsd", exact=True).uncheck()
        page.locator("#race-run").click()
        assert stopped.wait(timeout=60), "the race never started"
    finally:
        release.set()
    page.locator("#race-view .race-lane").first.wait_for()
    try:
        page.locator("#status", has_text="stopped before it started").wait_for(timeout=30_000)
    except PlaywrightTimeout:
        raise AssertionError(page.evaluate("window.statuses")) from None
    assert "a Race started" in page.locator("#status").inner_text()


def test_browser_step_mode_draws_a_token_tree(page):
    """Teaching settings, then a tree width of 3 typed into its box: the next round is drawn as a
    tree whose nodes are marked accepted, rejected or unchecked."""
    page.get_by_role("tab", name="Step mode").click()
    page.locator("#step-teaching").click()
    page.locator("#step-status", has_text="step mode reset").wait_for()
    width = page.locator("#opt-tree-width input[type=number]")
    width.select_text()
    width.press_sequentially("3")
    page.keyboard.press("Tab")
    page.locator("#step").click()
    page.locator("#step-explanation", has_text="A token tree of").wait_for()
    assert page.locator("#step-explanation .tree-node").count() >= 3
    assert page.locator("#step-explanation .tree-rejected, #step-explanation .tree-accepted").count() >= 1
    page.screenshot(path=str(ARTIFACTS / "ui-step-tree.png"), full_page=True)


def test_browser_a_check_typed_past_the_rounds_last_is_said(page):
    """A reviewer typed 9 into step mode's check box and Tab: it became 1, silently."""
    page.get_by_role("tab", name="Step mode").click()
    page.locator("#step-teaching").click()
    page.locator("#step-status", has_text="step mode reset").wait_for()
    page.locator("#step").click()
    page.locator("#step-status", has_text="round 1").wait_for()
    # The round's check range comes just after its status (typed before, 99 met the old slider).
    page.locator("#step-position", has_text="in this round").wait_for()
    box = page.locator("#step-position input[type=number]")
    box.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("99")
    page.keyboard.press("Tab")
    page.locator(".toast-body", has_text="check 99 is not one of this round").first.wait_for()


def test_browser_a_runs_refusal_of_a_value_goes_once_the_value_is_good(page):
    """A reviewer's "seed must be ..., got -5" stood in the status after the seed was 0; then the
    line that replaced it, "seed is in range now", stood in place of the last run's "done: ..."."""
    seed = page.locator("#opt-seed input")
    seed.fill("-5")
    page.locator("#option-note", has_text="seed must be").wait_for()
    page.locator("#generate").click()
    page.locator("#status .status-error", has_text="seed must be").wait_for()
    page.wait_for_timeout(500)
    assert "refuse it until it is changed" in page.locator("#option-note").inner_text(), "the refused run took it away"
    seed.fill("0")
    page.locator("#status", has_text="seed is in range now: press Generate to run with it").wait_for()
    generate_and_wait(page)
    done = page.locator("#status").inner_text()
    seed.fill("-5")
    page.locator("#generate").click()
    page.locator("#status .status-error", has_text="seed must be").wait_for()
    seed.fill("0")
    page.wait_for_function("d => document.querySelector('#status').innerText.trim() === d", arg=done.strip())
    # Any other status is not written back: read before a run's newer line came, it could cover it.
    other = json.dumps(page.locator("#status").inner_html())
    assert page.evaluate(f"({value_refusal_gone_js('seed')})('', {other})") is None


def test_browser_a_bad_sidebar_value_is_answered_on_the_spot_with_its_range(page):
    """The issue: tau typed as 5 ran with tau = 1 and candidates 0 became 1, silently. The value
    alone is answered (no Generate pressed, no run started); how fast is the bench's to say."""
    choose_method(page, "fsd")
    tau = page.locator("#opt-tau input[type=number]")
    tau.fill("5")
    page.locator("#option-note", has_text=f"{JS_RANGE}, got 5").wait_for()
    page.locator(".toast-body", has_text="tau must be between 0 and 1").first.wait_for()
    assert page.locator("#output span.tok").count() == 0 and "generating" not in page.locator("#status").inner_text()
    # Left with Tab, the slider moves it to 1: the note that said so stays (the 1 cleared it).
    tau.fill("7")
    page.locator("#option-note", has_text="got 7").wait_for()
    tau.press("Tab")
    page.wait_for_function("() => document.querySelector('#opt-tau input[type=number]').value === '1'")
    page.wait_for_timeout(1000)  # the moved value's own check answers
    assert f"{JS_RANGE}, got 7.0: the slider set it to 1, the nearest end" in page.locator("#option-note").inner_text()
    assert page.locator(".toast-body", has_text="got 5").count() == 1, "walk 30: one refusal, two toasts"
    tau.fill("0.3")
    page.wait_for_function("() => document.querySelector('#option-note').innerText.trim() === ''")
    # Clicked, typed and left in the same instant: the slider moves it to 1 before its input is sent,
    # and the click's own release (its value before) is still on its way.
    tau.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("9")
    page.keyboard.press("Tab")
    page.locator("#option-note", has_text="got 9").wait_for()
    tau.fill("0.3")
    page.wait_for_function("() => document.querySelector('#option-note').innerText.trim() === ''")
    page.locator("#opt-candidates input[type=number]").fill("0")
    page.locator("#option-note", has_text="candidates must be between 1 and 16, got 0").wait_for()
    page.screenshot(path=str(ARTIFACTS / "sidebar-range-note.png"))
    # Left, moved to 1, and run: the note goes as the run starts (it stood through a whole run).
    page.locator("#opt-candidates input[type=number]").press("Tab")
    page.wait_for_function("() => document.querySelector('#opt-candidates input[type=number]').value === '1'")
    page.wait_for_timeout(1000)  # the moved value's own check answers
    assert "got 0" in page.locator("#option-note").inner_text()
    page.locator("#generate").click()
    page.wait_for_function("() => document.querySelector('#option-note').innerText.trim() === ''")


def test_browser_a_slider_box_left_without_a_number_says_what_the_slider_took(page):
    """A reviewer typed "abc" in max new tokens and saw 1, with no word: the browser's number box
    reads letters as empty, and the slider takes its lowest value as the box is left."""
    tokens = page.locator("#opt-max-new-tokens input[type=number]")
    tokens.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("abc")
    page.keyboard.press("Tab")
    page.locator("#option-note", has_text="max_new_tokens: the box was left empty or without a number, so the "
                                          "slider took 1, the lowest it takes: type a number from 1 to").wait_for()
    assert tokens.input_value() == "1"
    page.wait_for_timeout(1000)  # the 1's own check answers, and keeps the note
    assert "left empty" in page.locator("#option-note").inner_text()
    tokens.fill("12")
    page.wait_for_function("() => document.querySelector('#option-note').innerText.trim() === ''")


def test_browser_a_refusal_gone_gives_back_the_line_it_covered(page):
    """Walk 23: a Generate's "done: ..." gave way to a refused Compare's reason, then, once the
    values were fixed, to "Compare's settings changed since it did not run", and never came back."""
    generate_and_wait(page)
    done = page.locator("#status").inner_text()
    page.get_by_role("tab", name="Compare").click()
    page.locator("#compare-values textarea").fill("2, banana")
    page.locator("#compare").click()
    page.locator("#status .status-error", has_text="Compare did not run: ").wait_for()
    page.locator("#compare-values textarea").fill("2, 4")
    page.wait_for_function(f"() => document.querySelector('#status').innerText.trim() === {json.dumps(done.strip())}")


def test_browser_compare_says_how_long_it_will_take_before_it_starts(page):
    page.get_by_role("tab", name="Compare").click()
    page.locator("#compare-expected", has_text="As set now: 16 runs").wait_for()
    page.locator("#compare-values textarea").fill("0.1, 5")
    refusal = page.locator("#compare-expected .status-error", has_text="Compare cannot start as set")
    refusal.wait_for()
    assert "Results below" not in refusal.inner_text(), "no Compare has run on this page"
    # Pressed anyway: the sidebar says it did not run (it said "Compare has ended"), and the refusal
    # on the tab goes once the values change (it stayed after a reviewer fixed them).
    page.locator("#compare").click()
    page.locator("#compare-view .status-error").wait_for()
    reason = page.locator("#compare-view .status-error").inner_text()
    page.locator("#status .status-error", has_text="Compare did not run: " + reason).wait_for()
    # The tab says it once: the estimate's refusal goes while the view shows the pressed one.
    page.wait_for_function("() => !document.querySelector('#compare-expected .status-error')")
    page.locator("#compare-values textarea").fill("0.1, 0.5")
    page.wait_for_function("() => !document.querySelector('#compare-view .status-error')")
    # and so does the sidebar's (it stood red after the values were fixed)
    page.locator("#status", has_text="Compare's settings changed since it did not run").wait_for()
    assert page.locator("#status .status-error").count() == 0
    # A method switch keeps the values typed for each method, and says so (fsd's typed tau values
    # became its suggested ones after fsd -> sd -> fsd).
    choose_method(page, "fsd")
    page.locator("#compare-option", has_text="sd's sweep (candidates: 0.1, 0.5) comes back").wait_for()
    choose_method(page, "sd")
    page.wait_for_function("() => document.querySelector('#compare-values textarea').value === '0.1, 0.5'")


def project_on_a_recorded_machine(page):
    """Open the what-if and choose a recorded machine's costs: its projection of the run does not
    depend on this machine's load (on its own costs a run a busy test machine left unsettled is not
    projected); -> the what-if's words."""
    page.locator("#what-if").get_by_role("button", name="What if: this run").click()  # the accordion, not the chart
    words = page.locator("#what-if-words")
    page.wait_for_function("() => /Projection, not a measurement|Not settled/.test("
                           "document.querySelector('#what-if-words')?.innerText || '')")
    machine = what_if.recorded_profiles()[0]
    page.locator("#what-if-profile input").click()
    page.get_by_role("option", name=machine.name).click()
    words.get_by_text(machine.name).wait_for()
    words.get_by_text("Projection, not a measurement").wait_for()
    return words


def test_browser_a_preset_switch_clears_the_previous_familys_answer(page):
    """The what-if too: back on a family with nothing run, it still projected the byte draft's run."""
    generate_and_wait(page)
    assert page.locator("#output span.tok").count() > 0
    project_on_a_recorded_machine(page)
    page.get_by_role("tab", name="Step mode").click()
    page.locator("#step").click()
    page.locator("#step-status", has_text="round 1").wait_for()
    choose_preset(page, "tiny-foreign")
    page.locator("#status", has_text="loaded tiny-target, tiny-foreign-draft").wait_for()
    # step mode's round count too (a reviewer's read "sd, round 5" after three family switches)
    page.wait_for_function("() => document.querySelector('#step-status').innerText.trim() === ''")
    page.get_by_role("tab", name="Generate").click()
    page.wait_for_function("() => document.querySelectorAll('#output span.tok').length === 0")
    assert page.locator("#stats .stat").count() == 0
    page.locator("#what-if-words", has_text="Run something first").wait_for()


def test_browser_the_what_if_refuses_a_c_past_its_slider_and_reads_a_curve_when_its_box_is_left(page):
    """c = 5 typed (the slider spans 0-2) projected silently, and stayed in the words after the
    slider moved it to 2; a bad curve went unsaid on Tab and Enter."""
    generate_and_wait(page)
    words = project_on_a_recorded_machine(page)
    cost = page.locator("#what-if-c input[type=number]")
    cost.fill("5")
    words.get_by_text("c must be between 0 and 2 (a draft forward in target steps), got 5").wait_for()
    cost.press("Tab")
    words.get_by_text("at c = 2.000").wait_for()
    assert words.inner_text().startswith("c = 2 is the slider's end: a larger c typed into its box is moved there")
    page.locator("#what-if-profile input").click()
    page.get_by_role("option", name="your own").click()
    curve = page.locator("#what-if-curve textarea")
    curve.fill("2: banana, 4: -3")
    curve.press("Tab")
    words.get_by_text("2: banana").wait_for()


def test_browser_what_if_projects_the_last_run_on_a_chosen_profile(page):
    """After a run, the what-if names itself a projection, draws speedup against c, and moves the c
    slider to a recorded profile's own c when that profile is chosen."""
    generate_and_wait(page)
    words = project_on_a_recorded_machine(page)
    page.locator("#chart-what-if .js-plotly-plot").wait_for()
    gpu = what_if.recorded_profiles()[1]
    page.locator("#what-if-profile input").click()
    page.get_by_role("option", name=gpu.name).click()
    words.get_by_text(gpu.name).wait_for()
    assert page.locator("#what-if-c input[type=number]").input_value() == str(gpu.cost_ratio)
    # the slider reads the box's c, not the step nearest it (a run's 0.354 read 0.355 on the slider)
    h100 = what_if.recorded_profiles()[2]
    page.locator("#what-if-profile input").click()
    page.get_by_role("option", name=h100.name).click()
    words.get_by_text(h100.name).wait_for()
    assert page.locator("#what-if-c input[type=number]").input_value() == str(h100.cost_ratio)
    assert float(page.locator("#what-if-c input[type=range]").input_value()) == h100.cost_ratio


def test_browser_the_correction_memory_upload_shows_for_csd_alone(page):
    """A review found the CSD upload box on the page whatever the method: it shows with csd only."""
    upload = page.locator("#csd-memory-upload")
    assert not upload.is_visible()
    choose_method(page, "csd")
    upload.wait_for()
    choose_method(page, "sd")
    upload.wait_for(state="hidden")


def test_typing_a_prompt_takes_away_the_refusal_of_an_empty_one(page):
    """The red "empty prompt" line stayed after the prompt was typed again, over a Compare that ran;
    and after an example put the prompt back (walk 26). The last run's line comes back."""
    page.locator("#prompt textarea").fill("   ")
    page.locator("#generate").click()
    page.locator("#status .status-error", has_text="empty prompt").wait_for()
    page.locator("#prompt textarea").press_sequentially("Hi")
    page.locator("#status .status-error").wait_for(state="detached")
    generate_and_wait(page)
    done = page.locator("#status").inner_text()
    page.locator("#prompt textarea").fill("")
    page.locator("#generate").click()
    page.locator("#status .status-error", has_text="empty prompt").wait_for()
    page.locator("#examples button").first.click()
    page.wait_for_function("d => document.querySelector('#status').innerText.trim() === d", arg=done.strip())


def test_the_status_says_starting_as_generate_is_pressed(page):
    """On a busy machine the last run's "done: ..." stood 6.6 s after the click, until the server's
    first word: the page says the run is starting before it hears from the server."""
    generate_and_wait(page)
    page.evaluate(RECORD_STATUSES)
    page.locator("#generate").click()
    page.wait_for_function("() => window.statuses.some(text => text.startsWith('done'))")
    statuses = page.evaluate("window.statuses")
    assert statuses[0].startswith("starting"), statuses[:3]
