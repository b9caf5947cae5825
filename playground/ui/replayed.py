"""A finished run played again as a stream on its own clock: each step of its record comes when
the run's decoder produced it (`Stats.step_clock`, which leaves out the time its page held it), as
a run that grows as the original did; the last item is the record itself, with a note saying it
is a replay. Nothing touches a model. What a page takes to show a step moves the later ones on,
as it did the original's."""

import time
from dataclasses import replace
from datetime import datetime

from ..decoding.stats import Stats
from ..run_record import Run


def replay_note(at: float) -> str:
    """The label of a replay of the run finished at `at` (time.time())."""
    return (f"a replay of the identical run computed at {datetime.fromtimestamp(at):%H:%M:%S} (same prompt, models, "
            "settings and seed), shown on its own clock: not computed again")


def replayed(record: Run, note: str):
    """Yield (step, run) as `record` produced them, on its clock; the run is a fresh one that
    grows step by step, and at the last step a copy of the record carrying `note`."""
    original = record.stats
    run = Run(record.method, record.config, record.prompt, models=dict(record.models),
              stats=Stats(original.target_role, original.draft_role, original.single_step_seconds))
    started, held = time.perf_counter(), 0.0
    last = len(record.steps) - 1
    for index, (seconds, step) in enumerate(zip(original.step_clock, record.steps, strict=True)):
        delay = started + held + seconds - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        if index == last:
            run = replace(record, tokens=list(record.tokens), steps=list(record.steps), notes=[*record.notes, note])
        else:
            run.tokens.extend(step.tokens)
            run.steps.append(step)
            run.stats.add(step, held)
            run.text += "".join(token.text for token in step.tokens)
        paused = time.perf_counter()
        yield step, run
        held += time.perf_counter() - paused
