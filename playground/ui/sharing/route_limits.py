"""What reaches the app other than through Gradio's queue, where the per-visitor caps are kept.

Gradio leaves its REST routes (`POST /gradio_api/run/<api_name>`, which run an event at once, past
the queue) open unless it sees a Hugging Face Space (SYSTEM=spaces with SPACE_ID): every other
public deployment (PLAYGROUND_PUBLIC=1, SPACE_ID alone) was open. Here they are closed whenever
the app is public, whatever asked for them open (`queue(api_open=True)` included).

A request longer than the app reads is answered in one line before Gradio sees it: Gradio parsed
an address over 65,536 characters (a pasted share link) with httpx, which refused it, and answered
a bare 500; and it reads a JSON body whole, however large.

Gradio's upload route stores every file it is sent, used by an event or not (48 MiB/s from one
client): past the visitor's uploads per minute, or while the app's files fill their disk (disk.py),
an upload is answered in one line too.
"""

import gradio as gr
from gradio.exceptions import InvalidPathError
from pydantic import ValidationError
from starlette.datastructures import URL, Headers
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from ...deploy.limits import current_limits
from ...errors import PlaygroundError
from ...models.policy import public_mode
from ..views.error_status import toast_text
from . import disk
from .visitors import RateTable, visitor_address

MAX_URL_CHARS = 65_536  # httpx's limit, which Gradio's parse of the address runs into
BODY_ROOM = 2**20  # past the largest upload: a form's framing, or one event's JSON (its prompt included)


class GuardedBlocks(gr.Blocks):
    """gr.Blocks whose routes past the queue are closed while the app is public, and whose server
    refuses a request over the sizes it reads (RequestSizeGuard)."""

    @property
    def api_open(self) -> bool:  # Gradio reads it at each request
        return self._api_open and not public_mode()

    @api_open.setter
    def api_open(self, value: bool) -> None:
        self._api_open = value

    async def preprocess_data(self, *args, **kwargs):
        """Gradio's, with a file that was never uploaded refused in words: it answers a server
        path given to an upload event with an error of no text ({"error": null})."""
        try:
            return await super().preprocess_data(*args, **kwargs)
        except (InvalidPathError, ValidationError) as error:
            raise gr.Error(toast_text("send the file to the upload route first (gradio_client: handle_file): this "
                                      f"server reads no path it was not sent ({type(error).__name__})"),
                           print_exception=False) from None

    def launch(self, *args, app_kwargs: dict | None = None, **kwargs):
        app_kwargs = dict(app_kwargs or {})
        app_kwargs["middleware"] = [*app_kwargs.get("middleware", ()), Middleware(RequestSizeGuard),
                                    Middleware(UploadGuard)]
        return super().launch(*args, app_kwargs=app_kwargs, **kwargs)


def max_body_bytes() -> int:
    return current_limits().max_upload_bytes + BODY_ROOM


class RequestSizeGuard:
    """ASGI middleware: an address over MAX_URL_CHARS (414) or a body over max_body_bytes (413)
    is answered with one line of text, and Gradio never sees it."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        refused = None
        if scope["type"] == "http":
            refused = _long_address(scope)
            if refused is None:
                refused, receive = await _large_body(scope, receive)
        if refused is not None:
            return await PlainTextResponse(refused[1], status_code=refused[0])(scope, receive, send)
        return await self.app(scope, receive, send)


def _long_address(scope) -> tuple[int, str] | None:
    length = len(str(URL(scope=scope)))
    if length <= MAX_URL_CHARS:
        return None
    return 414, (f"this address is {length:,} characters, over the {MAX_URL_CHARS:,} this server reads: open a "
                 "shorter link (a shared setting without its prompt, then paste the prompt in)")


async def _large_body(scope, receive):
    """((413, line) for a body over max_body_bytes, else None; the receive that hands the app its
    body). A chunked body tells its size only as it arrives: it is read up to the limit first."""
    limit, headers = max_body_bytes(), Headers(scope=scope)
    too_large = 413, (f"this request's body is over the {limit:,} bytes this server reads: upload a smaller file or "
                      "send a shorter prompt")
    length = headers.get("content-length", "")
    if length.isdigit() or "transfer-encoding" not in headers:
        return (too_large if length.isdigit() and int(length) > limit else None), receive
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        size, more = size + len(chunks[-1]), message.get("more_body", False)
        if size > limit:
            return too_large, receive
    body = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
    return None, lambda: _replay(body, receive)


async def _replay(body: list, receive):
    return body.pop() if body else await receive()


UPLOAD_ROUTE = "/gradio_api/upload"
UPLOADS_PER_VISITOR = "uploads per minute per visitor"
# The app's one upload takes one file; Gradio's route stores up to 1,000 from one request.
FILES_PER_UPLOAD = 1


class UploadGuard:
    """ASGI middleware: an upload past the visitor's uploads per minute (429), while the disk is
    full (507), or carrying more than FILES_PER_UPLOAD files (413) is answered with one line of
    text, and Gradio never stores it."""

    def __init__(self, app):
        self.app, self.times = app, RateTable()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope.get("method") == "POST" and scope["path"].endswith(UPLOAD_ROUTE):
            refused, status = disk.refusal("an upload"), 507
            if refused is None:
                try:
                    self.times.admit(visitor_address(Request(scope)), 1, current_limits().uploads_per_minute,
                                     UPLOADS_PER_VISITOR)
                except PlaygroundError as error:
                    refused, status = str(error), 429
            if refused is None:
                body, receive = await _buffered(receive)
                files = body.count(b"filename=")  # one in each file part's header
                if files > FILES_PER_UPLOAD:
                    refused, status = (f"this upload carries {files:,} files; upload {FILES_PER_UPLOAD} file at a "
                                       "time"), 413
            if refused is not None:
                return await PlainTextResponse(refused, status_code=status)(scope, receive, send)
        return await self.app(scope, receive, send)


async def _buffered(receive):
    """(the request's body, a receive that hands it to the app as sent); RequestSizeGuard, before
    this, bounds its size."""
    chunks, more = [], True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    body = b"".join(chunks)
    return body, lambda: _replay([{"type": "http.request", "body": body, "more_body": False}], receive)
