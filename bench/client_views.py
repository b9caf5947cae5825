"""A visitor's view of the app through gradio_client, for the bench scripts that play visitors
(class_visitors, hostile_probe): a client behind its own forwarded address, the controls' values
as the API takes them, and a run's updates as they arrived (the waits it was told, when its tokens
came)."""

import re
import time
from dataclasses import dataclass, field

from playground.ui.options import all_controls

ETA = re.compile(r"about ([\d.]+)(?:-([\d.]+))? s")  # "about 8 s", or a range "about 6-12 s"
WAITING_WORDS = ("in line", "identical run", "in turn")


@dataclass
class Visit:
    """One visitor's run, as its client saw it (seconds since the scenario started)."""

    name: str
    told: tuple | None = None  # (when, seconds) of the first wait it was told
    told_all: list = field(default_factory=list)  # (when, seconds) of every wait it was told
    first_output: float | None = None
    first_status: float | None = None  # when its page first showed a status
    done: float | None = None  # when its run ended
    updates: list = field(default_factory=list)  # when each update with tokens arrived
    outcome: str = ""
    last_status: str = ""

    def eta_error(self) -> float | None:
        """(told - waited) / waited of the first wait it was told."""
        return relative_error(self.told, self.first_output) if self.told else None

    def eta_errors(self) -> list[float]:
        """The same of every wait it was told a second or more before its first tokens."""
        return [error for told in self.told_all
                if (error := relative_error(told, self.first_output, at_least=1.0)) is not None]


def relative_error(told: tuple, first_output: float | None, at_least: float = 0.0) -> float | None:
    """(the wait told - the wait had) / the wait had, for a wait `told` as (when, seconds)."""
    if first_output is None:
        return None
    waited = first_output - told[0]
    return (told[1] - waited) / waited if waited > max(at_least, 0.0) else None


def controls(**overrides) -> list:
    chosen = {c.name: c.default for c in all_controls()} | overrides
    return [f"{chosen[c.name]:g}" if c.takes_inf else chosen[c.name] for c in all_controls()]


def client_for(url: str, address: str):
    from gradio_client import Client  # noqa: PLC0415

    return Client(url, verbose=False, headers={"x-forwarded-for": address}, download_files=False)


def text_of(html) -> str:
    return re.sub(r"<[^>]+>", "", html) if isinstance(html, str) else ""


def follow(visit: Visit, job, start: float) -> None:
    """Read `job`'s updates into `visit` until it ends: the status lines, and when the tokens grew."""
    tokens = 0
    try:
        for output in job:
            now = time.monotonic() - start
            status = text_of(output[0])
            visit.last_status = status or visit.last_status
            if status and visit.first_status is None:
                visit.first_status = now
            waiting = any(word in status for word in WAITING_WORDS)
            if waiting and (found := ETA.search(status)):
                told = (float(found[1]) + float(found[2] or found[1])) / 2  # a range's middle
                visit.told = visit.told or (now, told)
                visit.told_all.append((now, told))
            shown = output[1].count('class="tok') if isinstance(output[1], str) else 0
            if shown > tokens:
                tokens = shown
                visit.first_output = visit.first_output or now
                visit.updates.append(now)
        visit.done = time.monotonic() - start
        outputs = job.outputs()  # the iteration may end before it hands out the last update
        visit.last_status = (text_of(outputs[-1][0]) if outputs else "") or visit.last_status
        visit.outcome = "replayed" if "a replay of" in visit.last_status else \
            "followed" if "shown here round by round" in visit.last_status else \
            "done" if "done" in visit.last_status else f"status: {visit.last_status[:100]}"
    except Exception as error:  # noqa: BLE001  (a refusal arrives as an exception of the client)
        visit.outcome = f"error: {str(error)[:120]}"
