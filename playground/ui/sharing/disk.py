"""What the app's files take on disk, bounded in total: Gradio's own copies (every upload, and
every file a handler offers for download, kept until its delete_cache sweep) and the sessions'
export folders (downloads.py). Past the limits' disk_mb, exports and uploads are refused in one
line until the sweeps make room. A Space's disk is small and ephemeral: 30 chart exports of 4.8 MB
added 138 MiB in 9 s, and unused uploads were stored at 48 MiB/s.
"""

import os
import tempfile
import threading
import time
from pathlib import Path

from gradio.utils import get_upload_folder

from ...deploy.limits import current_limits
from ...errors import PlaygroundError

DOWNLOADS_ROOT = Path(tempfile.gettempdir()) / "playground-downloads"  # each session's folder goes in here
MEASURED_FOR = 2.0  # seconds a measurement is reused (a burst of uploads walks the folders once)
# Gradio's sweep of its copies (Blocks' delete_cache): every minute, files older than 5 minutes in
# public mode (a download link on a page stops working after that), else 15 minutes.
PUBLIC_DELETE_CACHE = (60, 300)
DESKTOP_DELETE_CACHE = (300, 900)

_lock = threading.Lock()
_measured: tuple[float, int] = (-MEASURED_FOR, 0)


def folders() -> list[Path]:
    return [Path(get_upload_folder()), DOWNLOADS_ROOT]


def used_bytes() -> int:
    """Bytes in the app's file folders, measured at most every MEASURED_FOR seconds."""
    global _measured
    with _lock:
        at, size = _measured
        if time.monotonic() - at < MEASURED_FOR:
            return size
        size = sum(_size(folder) for folder in folders())
        _measured = (time.monotonic(), size)
        return size


def added(size: int) -> None:
    """Count `size` bytes just written, until the next measurement."""
    global _measured
    with _lock:
        _measured = (_measured[0], _measured[1] + size)


def _size(folder: Path) -> int:
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue  # removed meanwhile
    return total


def refusal(what: str) -> str | None:
    """Why `what` (an export, an upload) cannot be stored now, in one line; None while there is room."""
    limit = current_limits().disk_mb
    used = used_bytes()
    if not limit or used < limit * 2**20:
        return None
    return (f"this deployment's disk for visitors' files is full ({used / 2**20:.0f} MB of {limit} MB): {what} is "
            f"refused until older files are swept, within {PUBLIC_DELETE_CACHE[1] // 60} minutes")


def check_room(what: str) -> None:
    if (refused := refusal(what)) is not None:
        raise PlaygroundError(refused)
