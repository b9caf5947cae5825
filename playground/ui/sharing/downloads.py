"""Files a session offers for download (run JSON, charts, its correction memory): in one folder
per session (under disk.DOWNLOADS_ROOT, which the disk cap measures) that keeps only the newest
few, removed with the session. Gradio copies a returned file into its own cache before the browser
fetches it, so an older copy here is never needed."""

import shutil
import tempfile
import threading
from collections import deque
from pathlib import Path

from . import disk

KEPT_PER_SESSION = 4


class Downloads:
    def __init__(self, kept: int = KEPT_PER_SESSION):
        self.kept = kept
        self._folder: Path | None = None  # made on the first download
        self._written: deque[Path] = deque()  # one subfolder per download, oldest first
        self._lock = threading.Lock()

    def write(self, suffix: str, text: str) -> str:
        """A fresh file `run{suffix}` holding `text`; returns its path. The oldest past `kept` go."""
        with self._lock:
            if self._folder is None:
                disk.DOWNLOADS_ROOT.mkdir(parents=True, exist_ok=True)
                self._folder = Path(tempfile.mkdtemp(prefix="session-", dir=disk.DOWNLOADS_ROOT))
            own = Path(tempfile.mkdtemp(dir=self._folder))  # each keeps its plain name for the browser
            path = own / f"run{suffix}"
            path.write_text(text, encoding="utf-8")
            disk.added(2 * path.stat().st_size)  # this copy and Gradio's
            self._written.append(own)
            while len(self._written) > self.kept:
                shutil.rmtree(self._written.popleft(), ignore_errors=True)
            return str(path)

    def remove(self) -> None:
        """Delete the session's folder and every download in it."""
        with self._lock:
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
            self._written.clear()
