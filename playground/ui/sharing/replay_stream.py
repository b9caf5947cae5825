"""A run shown again without computing it: a finished run replayed as a stream on its own clock
(`replayed`), or a run still being computed followed round by round as it comes (`followed`).
Either way the page sees a run that grows step by step as the original did, and last a copy of
the original's record carrying a note that says what was shown. Nothing touches a model. What a
page takes to show a step moves the later ones on, as it did the original's."""

import time
from dataclasses import replace
from datetime import datetime

from ...decoding.stats import Stats
from ...errors import PlaygroundError
from ...run_record import Run

FOLLOW_POLL_SECONDS = 1.0  # how long a follower waits for the next round before looking again


def replay_note(at: float) -> str:
    """The label of a replay of the run finished at `at` (time.time())."""
    return (f"a replay of the identical run computed at {datetime.fromtimestamp(at):%H:%M:%S} (same prompt, models, "
            "settings and seed), shown on its own clock: not computed again")


FOLLOW_NOTE = ("the identical run (same prompt, models, settings and seed) of another visitor, shown here round by "
               "round as it was computed: not computed twice")


def _fresh(original: Run) -> Run:
    """An empty run with the original's method, settings and models, to grow step by step."""
    stats = Stats(original.stats.target_role, original.stats.draft_role)
    stats.account.reference = list(original.stats.account.reference)  # its figures in the original's T(1)
    stats.account.recent_steps = list(original.stats.account.recent_steps)
    stats.account.recent_busy = original.stats.account.recent_busy
    stats.account.first_pass = original.stats.account.first_pass
    stats.account.drawn = original.stats.account.drawn
    return Run(original.method, original.config, original.prompt, models=dict(original.models), stats=stats)


def _grow(run: Run, step, held: float) -> None:
    run.tokens.extend(step.tokens)
    run.steps.append(step)
    run.stats.add(step, held)
    run.text += "".join(token.text for token in step.tokens)


def _noted(record: Run, note: str) -> Run:
    return replace(record, tokens=list(record.tokens), steps=list(record.steps), notes=[*record.notes, note])


def replayed(record: Run, note: str):
    """Yield (step, run) as `record` produced them, on its clock; the run is a fresh one that
    grows step by step, and at the last step a copy of the record carrying `note`."""
    run = _fresh(record)
    started, held = time.perf_counter(), 0.0
    last = len(record.steps) - 1
    for index, (seconds, step) in enumerate(zip(record.stats.step_clock, record.steps, strict=True)):
        delay = started + held + seconds - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        if index == last:
            run = _noted(record, note)
        else:
            _grow(run, step, held)
        paused = time.perf_counter()
        yield step, run
        held += time.perf_counter() - paused


def followed(claim, given_up=lambda: False):
    """Yield (step, run) as the run `claim` stands for is computed (identical.Claim), each step
    once the next one has come (the last is told by the run's end): a fresh run that grows step by
    step, and at the last step a copy of the finished record carrying FOLLOW_NOTE. A run that ends
    unfinished (its visitor stopped it, or it failed) ends this one with a one-line error; once
    `given_up()` (this page's Stop), it ends at its next look, whether a step came or not."""
    run, shown, held = None, 0, 0.0
    while not given_up():
        steps, ended = claim.steps_when(shown + 1, FOLLOW_POLL_SECONDS)  # one beyond the newest shown
        new = steps[shown:]
        if ended and claim.run is None:
            raise PlaygroundError("the identical run this page was following ended unfinished (its visitor stopped "
                                  "it): press Generate to compute it here")
        ready = new if ended else new[:-1]  # the newest waits: it may be the last, shown with the record
        for index, step in enumerate(ready):
            run = run or _fresh(claim.live)
            last = ended and index == len(ready) - 1
            if last:
                run = _noted(claim.run, FOLLOW_NOTE)
            else:
                _grow(run, step, held)
            paused = time.perf_counter()
            yield step, run
            held += time.perf_counter() - paused
        shown += len(ready)
        if ended:
            return
