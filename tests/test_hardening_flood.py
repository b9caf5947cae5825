"""One visitor cannot flood a public deployment: runs per minute count per visitor address, not per
session hash (which a client picks freely, or ends itself through the page's unload event), a
visitor holds at most a few runs and a few more events of any kind in the shared queue at once, and
a public app has no route past the queue; a request longer than the app reads gets one line.
Requests are Gradio's own gr.Request around a starlette request, as the server builds them; the
server tests launch the app on 127.0.0.1."""

import http.client
import threading
import time
import uuid
from urllib.parse import urlsplit

import gradio as gr
import httpx
import pytest
from starlette.requests import Request as StarletteRequest

from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.layout import build_demo
from playground.ui.options import all_controls
from playground.ui.tabs.wiring import keyed
from playground.ui.tiny_app import launch_tiny_app

PROMPT = "hello there"
VISITOR, OTHER, SPACE_PROXY = "203.0.113.5", "198.51.100.7", "10.16.3.80"


def request(address: str, session_hash: str | None = None, forwarded: str | list[str] = ()) -> gr.Request:
    """A gr.Request for a call from `address`, with a fresh session hash unless one is given, and
    `forwarded` as its x-forwarded-for header (a list: the header sent once per item)."""
    lines = [forwarded] if isinstance(forwarded, str) else forwarded
    headers = [(b"x-forwarded-for", line.encode()) for line in lines]
    scope = {"type": "http", "method": "POST", "path": "/gradio_api/queue/join", "query_string": b"",
             "headers": headers, "client": (address, 50000), "server": ("127.0.0.1", 7860), "scheme": "http"}
    return gr.Request(StarletteRequest(scope), session_hash=session_hash or uuid.uuid4().hex)


def values(**overrides) -> list:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 4} | overrides
    return [chosen[c.name] for c in all_controls()]


@pytest.fixture
def handlers(family):
    by_spec = {m.spec: m for m in family.values()}
    return Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier")])


@pytest.fixture
def three_per_minute(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    monkeypatch.setenv("PLAYGROUND_RUNS_PER_MINUTE", "3")


def generate_status(handlers, req: gr.Request) -> str:
    return list(keyed(handlers.generate)(req, PROMPT, "ar", False, *values()))[-1][0]


def test_fresh_session_hashes_from_one_address_share_its_limit(handlers, three_per_minute):
    assert all("done" in generate_status(handlers, request(VISITOR)) for _ in range(3))
    with pytest.warns(UserWarning):
        refused = generate_status(handlers, request(VISITOR))
    assert "3 runs per minute per visitor" in refused and "try again in" in refused
    assert "done" in generate_status(handlers, request(OTHER)), "another visitor is not held up"


def test_unload_does_not_reset_a_visitors_count(handlers, three_per_minute):
    mine = uuid.uuid4().hex
    assert all("done" in generate_status(handlers, request(VISITOR, mine)) for _ in range(3))
    keyed(handlers.sessions.drop)(request(VISITOR, mine))  # what the page's unload event calls
    assert len(handlers.sessions) == 0, "the session itself went"
    with pytest.warns(UserWarning):
        assert "runs per minute" in generate_status(handlers, request(VISITOR, mine))


def test_a_compare_counts_against_the_visitor_not_the_session(handlers, three_per_minute):
    assert "done" in generate_status(handlers, request(VISITOR))
    with pytest.warns(UserWarning):  # the reference and two columns: 3 more, past 3 per minute
        view = list(keyed(handlers.compare)(request(VISITOR), PROMPT, "fsd", "sweep", "tau", "0.1, 0.2", [],
                                             *values()))[-1]
    assert "runs per minute per visitor" in view


def test_on_a_space_the_visitor_is_the_address_its_proxy_added(monkeypatch):
    from playground.ui.sharing.visitors import visitor_address  # noqa: PLC0415

    assert visitor_address(request(VISITOR, forwarded=OTHER)) == VISITOR, "not on a Space: the header is ignored"
    monkeypatch.setenv("SYSTEM", "spaces")
    assert visitor_address(request(SPACE_PROXY, forwarded=VISITOR)) == VISITOR
    assert visitor_address(request(SPACE_PROXY, forwarded=f"{OTHER}, {VISITOR}")) == VISITOR, "OTHER: the visitor's own"
    assert visitor_address(request(SPACE_PROXY, forwarded=[OTHER, VISITOR])) == VISITOR, "the header sent twice"
    assert visitor_address(request(SPACE_PROXY)) == SPACE_PROXY, "no header: the connection's address"
    monkeypatch.setenv("PLAYGROUND_TRUSTED_PROXIES", "2")  # an edge proxy, then one that added the edge's address
    assert visitor_address(request(SPACE_PROXY, forwarded=f"{OTHER}, {VISITOR}, 10.0.0.9")) == VISITOR


def test_on_a_space_forged_forwarded_addresses_share_the_senders_limit(handlers, three_per_minute, monkeypatch):
    monkeypatch.setenv("SYSTEM", "spaces")

    def forged(n: int) -> gr.Request:  # a fresh session and a fresh address of its own choosing, each time
        return request(SPACE_PROXY, forwarded=f"192.0.2.{n}, {VISITOR}")

    assert all("done" in generate_status(handlers, forged(n)) for n in range(3))
    with pytest.warns(UserWarning):
        assert "3 runs per minute per visitor" in generate_status(handlers, forged(3))
    assert "done" in generate_status(handlers, request(SPACE_PROXY, forwarded=f"{VISITOR}, {OTHER}"))


@pytest.mark.slow
def test_a_visitor_over_the_queue_cap_gets_one_line(family, monkeypatch):
    """Three clients of one address (each its own session): the first run holds the models, the
    second waits, the third is refused at once in one line; both held runs still finish."""
    from gradio_client import Client  # noqa: PLC0415

    from playground.ui.sharing.queue_cap import refusal  # noqa: PLC0415

    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    monkeypatch.setenv("PLAYGROUND_RUNS_PER_MINUTE", "0")
    monkeypatch.setenv("PLAYGROUND_RUNS_AT_ONCE", "2")
    loading, gate = threading.Event(), threading.Event()
    by_spec = {m.spec: m for m in family.values()}

    def held_loader(spec):
        """The first run holds the models until the test lets it go, so what the queue holds
        does not depend on the machine's speed."""
        loading.set()
        gate.wait(60)
        return by_spec[spec]

    demo = build_demo(loader=held_loader, presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier")])
    _, url, _ = demo.queue(max_size=32).launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        clients = [Client(url, verbose=False) for _ in range(3)]
        first = clients[0].submit(PROMPT, "ar", False, *values(), api_name="/generate")
        assert loading.wait(30), "the first run reached the models"
        second = clients[1].submit(PROMPT, "ar", False, *values(), api_name="/generate")
        _wait_until(lambda: len(demo._queue.event_ids_to_events) == 2)
        with pytest.raises(httpx.HTTPStatusError) as refused:  # refused when it asks to join
            clients[2].predict(PROMPT, "ar", False, *values(), api_name="/generate")
        assert refused.value.response.json()["detail"] == refusal(2) and "\n" not in refusal(2)
        gate.set()
        assert all("done" in job.result(timeout=120)[0] for job in (first, second))
        _wait_until(lambda: not demo._queue.event_ids_to_events)  # the queue lets an ended event go just after
        assert "done" in clients[2].predict(PROMPT, "ar", False, *values(), api_name="/generate")[0], \
            "once its runs have ended, the visitor runs again"
    finally:
        gate.set()
        demo.close()


@pytest.mark.slow
def test_one_address_cannot_fill_the_queue_with_cheap_events(family, monkeypatch):
    """Chart events (no run, no model) of one address: past its cap one more is refused in one
    line when it asks to join, while another address still joins and is served."""
    from gradio_client import Client  # noqa: PLC0415

    from playground.ui.sharing.queue_cap import refusal  # noqa: PLC0415
    from playground.ui.tabs.run_charts import RunCharts  # noqa: PLC0415

    for name, value in {"PLAYGROUND_PUBLIC": "1", "PLAYGROUND_EVENTS_AT_ONCE": "3",
                        "PLAYGROUND_TRUSTED_PROXIES": "1"}.items():  # the address is x-forwarded-for's
        monkeypatch.setenv(name, value)
    gate, final = threading.Event(), RunCharts.final
    monkeypatch.setattr(RunCharts, "final", lambda self, key: (gate.wait(60), final(self, key))[1])
    demo, url = launch_tiny_app(family, max_size=32)
    try:
        visitor = Client(url, headers={"x-forwarded-for": VISITOR}, verbose=False)
        held = [visitor.submit(api_name="/charts") for _ in range(3)]  # one runs (held at the gate), two wait
        _wait_until(lambda: len(demo._queue.event_ids_to_events) == 3)
        with pytest.raises(httpx.HTTPStatusError) as refused:
            visitor.predict(api_name="/charts")
        assert refused.value.response.json()["detail"] == refusal(3, "events")
        other = Client(url, headers={"x-forwarded-for": OTHER}, verbose=False).submit(api_name="/charts")
        _wait_until(lambda: len(demo._queue.event_ids_to_events) == 4)
        gate.set()
        for job in (*held, other):
            job.result(timeout=60)
    finally:
        gate.set()
        demo.close()


@pytest.mark.slow
@pytest.mark.parametrize("public", ["PLAYGROUND_PUBLIC", "SPACE_ID"])
def test_public_mode_leaves_no_route_past_the_queue(family, monkeypatch, public):
    """Gradio's REST route runs an event at once, past the queue and its caps: closed whatever
    makes the app public (SPACE_ID without SYSTEM=spaces, which Gradio alone reads as not a Space)
    and whatever asked for it open."""
    monkeypatch.delenv("PLAYGROUND_PUBLIC", raising=False)
    monkeypatch.delenv("SYSTEM", raising=False)
    monkeypatch.setenv(public, "1" if public == "PLAYGROUND_PUBLIC" else "someone/playground")
    demo, url = launch_tiny_app(family, api_open=True)
    try:
        refused = httpx.post(url + "gradio_api/run/charts", json={"data": []}, timeout=30)
        assert refused.status_code == 404 and "join the queue" in refused.json()["detail"]
        monkeypatch.setenv("PLAYGROUND_PUBLIC", "0")  # the same route on a private app: it runs
        assert httpx.post(url + "gradio_api/run/charts", json={"data": []}, timeout=30).status_code == 200
    finally:
        demo.close()


@pytest.mark.slow
def test_a_request_over_the_sizes_the_app_reads_is_answered_in_one_line(family, monkeypatch):
    """A pasted share link past 65,536 characters got a bare 500 from Gradio; a body of any size
    was read whole. Both are answered in one line before Gradio sees them."""
    from playground.ui.sharing.route_limits import max_body_bytes  # noqa: PLC0415

    monkeypatch.setenv("PLAYGROUND_MAX_UPLOAD_BYTES", "1000")
    demo, url = launch_tiny_app(family)
    server = urlsplit(url)

    def get(target: str) -> tuple[int, str]:  # httpx refuses to send so long an address: http.client does
        connection = http.client.HTTPConnection(server.hostname, server.port, timeout=30)
        connection.request("GET", target)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()

    try:
        assert get("/?prompt=" + "a" * 60_000)[0] == 200, "a link as long as the Share button makes"
        status, line = get("/?prompt=" + "a" * 70_000)
        assert status == 414 and "characters, over the 65,536 this server reads: open a shorter link" in line
        assert "\n" not in line.strip()
        too_large = b"x" * (max_body_bytes() + 1)
        for body in (too_large, iter([too_large])):  # its length declared, then sent in chunks
            answer = httpx.post(url + "gradio_api/queue/join", content=body, timeout=30)
            assert answer.status_code == 413 and answer.text.startswith("this request's body is over the")
            assert "\n" not in answer.text.strip()
    finally:
        demo.close()


def _wait_until(condition, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.slow
def test_one_address_cannot_hold_the_servers_threads_with_events_that_have_no_limit(family, monkeypatch):
    """Events the layout runs without a concurrency limit (here the page's heartbeat, held in its
    handler) hold a server thread each: past QUICK_EVENTS_FACTOR times the events cap, one more
    from the same address is refused in one line when it asks to join; another address joins."""
    from playground.ui.sharing.queue_cap import QUICK_EVENTS_FACTOR, refusal  # noqa: PLC0415
    from playground.ui.sharing.session import Sessions  # noqa: PLC0415

    for name, value in {"PLAYGROUND_PUBLIC": "1", "PLAYGROUND_EVENTS_AT_ONCE": "2",
                        "PLAYGROUND_TRUSTED_PROXIES": "1"}.items():
        monkeypatch.setenv(name, value)
    gate, touch = threading.Event(), Sessions.touch
    monkeypatch.setattr(Sessions, "touch", lambda self, key: (gate.wait(60), touch(self, key))[1])
    demo, url = launch_tiny_app(family, max_size=32)
    heartbeat = next(index for index, fn in demo.fns.items()  # the timer event that writes nothing
                     if any(event == "tick" for _, event in fn.targets) and not fn.outputs)
    quick = 2 * QUICK_EVENTS_FACTOR

    def join(address: str) -> httpx.Response:
        body = {"data": [], "fn_index": heartbeat, "session_hash": uuid.uuid4().hex, "event_data": None,
                "trigger_id": None}
        return httpx.post(url + "gradio_api/queue/join", json=body, headers={"x-forwarded-for": address}, timeout=30)

    try:
        assert all(join(VISITOR).status_code == 200 for _ in range(quick))
        _wait_until(lambda: len(demo._queue.event_ids_to_events) == quick)
        refused = join(VISITOR)
        assert refused.status_code == 400 and refused.json()["detail"] == refusal(quick, "status and control events")
        assert join(OTHER).status_code == 200, "another address is served"
    finally:
        gate.set()
        demo.close()


def test_an_upload_event_given_a_path_it_was_not_sent_says_so_in_one_line(family, tmp_path):
    """Gradio refuses a server path in an upload event (it was never uploaded) with an error of no
    text; here the refusal names what to do. Given as a file's data or as plain text."""
    readable = tmp_path / "memory.json"
    readable.write_text("{}")
    demo, url = launch_tiny_app(family)
    try:
        for given in ({"path": str(readable), "meta": {"_type": "gradio.FileData"}}, str(readable)):
            event = httpx.post(url + "gradio_api/call/upload_memory", json={"data": [given]}, timeout=30).json()
            answer = httpx.get(url + f"gradio_api/call/upload_memory/{event['event_id']}", timeout=30).text
            assert "event: error" in answer and "send the file to the upload route first" in answer, answer
    finally:
        demo.close()
