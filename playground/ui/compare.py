"""The Compare tab: the prompt run with the same seed several times (one option swept, or methods
side by side), each column scored against a target-only reference run."""

from functools import partial
from html import escape

from ..deploy.limits import current_limits
from ..errors import PlaygroundError
from . import render
from .boundary import check_method, error_status
from .family_panel import decoder
from .options import (
    MAX_SWEEP_VALUES,
    all_controls,
    chosen_divergence,
    options_from_values,
    sweep_values,
    visible_options,
)
from .quality_panel import AGREEMENT, diff_html, repetition, target_ids, target_log_likelihood, token_agreement
from .repeats import REPEATS, Timed, busy_note, repeated
from .runs import Runs

REFERENCE = ("ar", "ar", {})  # the target-only side every column is scored and timed against


def variants(method, mode, sweep_option, sweep_text, methods, divergence) -> list[tuple[str, str, dict]]:
    """The columns to run: (label, method, options that override the controls')."""
    if mode == "methods":
        for name in methods if isinstance(methods, list) else [methods]:
            check_method(name)
        chosen = list(dict.fromkeys(methods))
        if not chosen or len(chosen) > MAX_SWEEP_VALUES:
            raise PlaygroundError(f"pick 1 to {MAX_SWEEP_VALUES} methods to compare, got {len(chosen)}")
        return [(name, name, {}) for name in chosen]
    if mode != "sweep":
        raise PlaygroundError(f"compare mode must be 'sweep' or 'methods', got {mode!r}")
    check_method(method)
    if not isinstance(sweep_option, str) or sweep_option not in visible_options(method):
        raise PlaygroundError(f"{method} does not read {sweep_option!r}: pick one of its options to sweep")
    control = next(c for c in all_controls() if c.name == sweep_option)
    return [(f"{method} {sweep_option}={value:g}", method, {sweep_option: value})
            for value in sweep_values(control, sweep_text, divergence)]


class Comparison:
    def __init__(self, runs: Runs):
        self.runs, self.family = runs, runs.family

    def compare(self, key: str, prompt: str, method: str, mode: str, sweep_option: str, sweep_text: str,
                methods: list, *values):
        """Yield a progress line as each run ends, then the columns: every side (a target-only
        reference first) warmed up, then run `repeats` times in alternating order (repeats.py)."""
        try:
            columns_to_run = variants(method, mode, sweep_option, sweep_text, methods, chosen_divergence(values))
            for _, variant, _ in columns_to_run:  # every setting checked before the first run
                options_from_values(variant, values)
            limit = current_limits().runs_per_minute
            # An ar column is the reference itself (run once more, its speedup over ar read the noise)
            sides = [REFERENCE, *(column for column in columns_to_run if column != REFERENCE)]
            repeats = max(1, min(REPEATS, limit // len(sides))) if limit else REPEATS
            self.family.sessions.get(key).admit(len(sides) * repeats, limit)
            target = self.family.models_for(key, "ar")["target"]
            runs = [partial(self._run, key, prompt, variant, values, extra) for _, variant, extra in sides]
            timed, first = [Timed() for _ in sides], {}
            for done, (side, repeat, run) in enumerate(repeated(runs, repeats), start=1):
                if repeat >= 0:
                    timed[side].speeds[repeat] = run.stats.tokens_per_second
                    first.setdefault(side, run)
                yield render.status_html(f"{sides[side][0]}: {'warm-up' if repeat < 0 else f'run {repeat + 1}'} "
                                         f"done ({done} of {len(sides) * (repeats + 1)} runs)")
            reference_ids = target_ids(first[0], target)
            side_of = {label: side for side, (label, _, _) in enumerate(sides)}
            columns = [self._column(label, first[side_of[label]], target, reference_ids, prompt, first[0].text,
                                    timed[side_of[label]], timed[0])
                       for label, _, _ in columns_to_run]
            yield render.compare_html(columns, busy_note(timed))
        except Exception as error:  # noqa: BLE001  (the UI boundary: show it, stay usable)
            yield error_status(error)

    def _run(self, key, prompt, variant, values, extra, **overrides):
        return self.runs.finished(key, prompt, variant, values, **{**extra, **overrides})

    def _column(self, label, run, target, reference_ids, prompt, reference_text: str, timed: Timed,
                 reference: Timed) -> dict:
        """A column: its settings, its text, its figures (speed as the median of its runs with
        their range, the speedup over ar paired within each repeat, the log-likelihood beside a
        repetition measure, which it rewards), and its words against the target-only run's."""
        ids, stats = target_ids(run, target), run.stats.to_dict()
        decode = decoder(self.family.loader(run.models[run.stats.target_role]))
        settings = f'<p class="settings-line">{escape(render.settings_text(run))}</p>'
        return {"label": label,
                "html": settings + render.tokens_html(run.tokens, decode) + diff_html(run.text, reference_text),
                "metrics": {"tokens/s": timed.text(), "speedup vs ar": timed.speedup_text(reference),
                            **render.acceptance_metrics(stats),
                            AGREEMENT: token_agreement(ids, reference_ids),
                            "target mean log-lik": target_log_likelihood(target, prompt, ids,
                                                                         run.config.chat_template),
                            "repeated word 3-grams": repetition(run.text),
                            "where the seconds went": render.budget_text(run.stats.budget())}}
