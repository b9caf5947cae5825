"""Online Correction Memory (OCM) of Calibrated SD (seed 003, Section 4.2): how often each
(rejected draft token, correction token) pair occurred, for one target/draft pair.

Phase 1 fills it by running standard SD over a corpus (`python -m playground calibrate`); phase 2
keeps counting online during csd runs (Algorithm 1, line 18). A memory names the model pair it
was built for and refuses to load for another. A run reads and updates the memory its caller
gives it (`stream(correction_memory=...)`); to learn across runs, the caller keeps it and gives
it again (the app keeps one per pair: playground/ui/tabs/memory.py).
"""

import json
import os
import reprlib
import tempfile
import threading
from collections import Counter
from pathlib import Path

from ..errors import PlaygroundError

FORMAT = "csd-correction-memory"
VERSION = 1
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_COUNT = 2**63 - 1  # counts past this mean a forged file, and JSON readers disagree on them
MAX_SPEC_CHARS = 400  # a model spec: a name, a hub id or a path


class CorrectionMemory:
    """`max_pairs`, where set, bounds the pairs a run can add: a full memory keeps counting the
    pairs it holds and records no new one (a public deployment bounds what a session holds)."""

    def __init__(self, target: str, draft: str, counts: dict[tuple[int, int], int] | None = None,
                 max_pairs: int | None = None):
        self.target, self.draft = target, draft
        self.counts: Counter = Counter(counts or {})
        self.max_pairs = max_pairs
        self._lock = threading.Lock()

    @property
    def pair(self) -> tuple[str, str]:
        return self.target, self.draft

    @property
    def total(self) -> int:
        """Rejections recorded."""
        return sum(self.counts.values())

    def count(self, draft_token: int, target_token: int) -> int:
        return self.counts.get((draft_token, target_token), 0)

    def update(self, draft_token: int, target_token: int) -> None:
        """Algorithm 1, line 18: UPDATEMEMORY(T, x~_i, t*)."""
        pair = (draft_token, target_token)
        with self._lock:
            if pair in self.counts or self.max_pairs is None or len(self.counts) < self.max_pairs:
                self.counts[pair] += 1

    def observe(self, tokens) -> int:
        """Count the rejections in a run's token records: each correction with the draft's own
        candidate it replaced (a chain's one; of a token tree's node, the first, the one csd's
        rescue tries: the others are siblings the tree added). Returns how many were recorded."""
        rejections = [(t.replaced_candidates[0], t.id) for t in tokens if t.is_correction and t.replaced]
        for draft_token, target_token in rejections:
            self.update(draft_token, target_token)
        return len(rejections)

    def top_pairs(self, n: int = 10, tokenizer=None) -> list[tuple]:
        """The n most frequent (draft token, target token, count), as token strings if a
        tokenizer is given, else as ids."""
        with self._lock:
            top = self.counts.most_common(n)
        if tokenizer is None:
            return [(draft, target, count) for (draft, target), count in top]
        return [(tokenizer.decode([draft]), tokenizer.decode([target]), count) for (draft, target), count in top]

    def to_dict(self) -> dict:
        with self._lock:
            pairs = [[draft, target, count] for (draft, target), count in self.counts.most_common()]
        return {"format": FORMAT, "version": VERSION, "target": self.target, "draft": self.draft,
                "rejections": sum(count for *_, count in pairs), "pairs": pairs}

    def save(self, path: str | os.PathLike) -> Path:
        """Write atomically (a temporary file renamed over the target). An interrupted save leaves
        no temporary file behind; the file keeps its mode, or gets the one open() would give it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.is_file() else _new_file_mode()
        handle = tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8")
        temporary = Path(handle.name)
        try:
            with handle:
                json.dump(self.to_dict(), handle)
            temporary.chmod(mode)  # temporary files are created 0o600
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        return path


def _new_file_mode() -> int:
    umask = os.umask(0)  # reading the umask means setting it: put it straight back
    os.umask(umask)
    return 0o666 & ~umask


def load_memory(path: str | os.PathLike, target: str | None = None, draft: str | None = None,
                max_bytes: int = MAX_FILE_BYTES, name: str | None = None,
                vocabulary: int | None = None) -> CorrectionMemory:
    """Read a memory file; with `target`/`draft` given, refuse one built for another pair, and
    with `vocabulary` (the pair's number of tokens), one that names a token outside it.
    `name` is what messages call the file (an upload's temporary path means nothing to its sender)."""
    name = name or str(path)
    memory = memory_from_dict(_read_json(Path(path), max_bytes, name), name, vocabulary)
    wanted = (target if target is not None else memory.target, draft if draft is not None else memory.draft)
    if memory.pair != wanted:
        raise PlaygroundError(
            f"correction memory {name} was calibrated for target {memory.target!r} and draft {memory.draft!r}, "
            f"not target {wanted[0]!r} and draft {wanted[1]!r}: run `python -m playground calibrate "
            f"--target {wanted[0]} --draft {wanted[1]} --out FILE` for this pair")
    return memory


def _read_json(path: Path, max_bytes: int, name: str):
    if path.is_dir():
        raise PlaygroundError(f"correction memory {name} is a directory: give the JSON file written by "
                              "`python -m playground calibrate`")
    if not path.is_file():
        raise PlaygroundError(f"correction memory {name} not found: create one with `python -m playground calibrate`")
    size = path.stat().st_size
    if size > max_bytes:
        raise PlaygroundError(f"correction memory {name} is {size} bytes, over the limit of {max_bytes}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except PermissionError:
        raise PlaygroundError(f"correction memory {name} cannot be read (permission denied)") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PlaygroundError(f"correction memory {name} is not valid JSON ({error}): recreate it with "
                              "`python -m playground calibrate`") from None
    except RecursionError:
        raise PlaygroundError(f"correction memory {name} is nested too deeply to be a correction memory: "
                              "recreate it with `python -m playground calibrate`") from None
    except ValueError:  # past Python's limit on the digits of an integer read from text
        raise PlaygroundError(f"correction memory {name} holds a number too long to read: recreate it with "
                              "`python -m playground calibrate`") from None


def memory_from_dict(data, source: str = "data", vocabulary: int | None = None) -> CorrectionMemory:
    """A memory from its JSON object, every field checked first; `vocabulary`, where given, bounds
    the token ids (an id past it would fail only later, when the memory is shown)."""
    def bad(what: str) -> PlaygroundError:
        return PlaygroundError(f"correction memory {source} is malformed: {what}")

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise bad(f"expected a JSON object with \"format\": \"{FORMAT}\"")
    if data.get("version") != VERSION:
        raise bad(f"unsupported version {_shown(data.get('version'))} (this playground reads version {VERSION})")
    if not all(_spec(data.get(role)) for role in ("target", "draft")):
        raise bad("\"target\" and \"draft\" must be the model specs it was built for")
    pairs = data.get("pairs")
    if not isinstance(pairs, list):
        raise bad("\"pairs\" must be a list of [draft token, target token, count]")
    counts = {}
    for entry in pairs:
        if not _pair(entry):
            raise bad(f"pair {_shown(entry)} is not [draft token id, target token id, positive count up to 2**63 - 1]")
        if vocabulary is not None and max(entry[0], entry[1]) >= vocabulary:
            raise bad(f"pair {_shown(entry)} names a token outside the models' {vocabulary} tokens")
        counts[(entry[0], entry[1])] = min(counts.get((entry[0], entry[1]), 0) + entry[2], MAX_COUNT)
    return CorrectionMemory(data["target"], data["draft"], counts)


def _pair(entry) -> bool:
    return (isinstance(entry, list) and len(entry) == 3 and all(_natural(v) for v in entry)
            and 0 < entry[2] <= MAX_COUNT)


def _spec(value) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_SPEC_CHARS


def _shown(value) -> str:
    """A value as a message quotes it: cut short, however long or deeply nested."""
    return _SHORT.repr(value)


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxstring, _SHORT.maxlong, _SHORT.maxother = 3, 4, 40, 40, 40


def _natural(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
