"""The Compare tab: the prompt run with the same seed several times (one option swept, or methods
side by side), each column scored against a target-only reference run."""

import math
import time
from functools import partial
from html import escape

import gradio as gr

from ...decoding.divergence import MAXIMUM
from ...decoding.speed.speed_account import AR_ROW
from ...deploy.limits import current_limits
from ...errors import PlaygroundError
from ...methods import METHODS
from ..options import (
    DEFAULT_METHOD,
    MAX_SWEEP_VALUES,
    all_controls,
    chosen_divergence,
    default_sweep,
    method_choices,
    options_from_values,
    suggested_sweep,
    sweep_options,
    sweep_values,
    visible_options,
)
from ..sharing import eta
from ..sharing.ticks import as_started, going_text, with_ticks
from ..views import render
from ..views.error_status import check_method, error_status
from ..views.paired_speedups import (
    REPEATS,
    WARM_UP_TOKENS,
    Speedup,
    Timed,
    busy_note,
    ran_beside,
    repeated,
    run_order,
    schedule,
    which_run,
)
from .controls import MethodPicker
from .family_panel import decoder
from .quality_panel import AGREEMENT, diff_html, repetition, target_ids, target_log_likelihood, token_agreement
from .runs import Runs
from .wiring import PRIVATE, Shared

REFERENCE = ("ar", "ar", {})  # the target-only side every column is scored and timed against
REFERENCE_LABEL = "ar (reference)"
KEPT_RESULTS = "kept-results"
# (view) -> the view less its refusal once the settings change: '' or the last results kept under it.
KEPT_RESULTS_JS = (f"(shown) => {{ const s = String(shown); if (!s.includes('status-error')) return undefined; "
                   f"const at = s.indexOf('<div class=\"{KEPT_RESULTS}\"'); return at < 0 ? '' : s.slice(at); }}")


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


# A swept setting whose drafts mostly fail pays drafting and a wider pass for one token a round: fsd
# at tau 0.1 (5.7% accepted) ran 1.8x ar's seconds on the embedded family, where the estimate, paced
# on fsd's recent runs at its default tau, had it at 0.7x (a sweep told 44 s took 54 s).
SLOWEST_SIDE = 2.0
# Where other programs want most of the cores, a draft's many small passes lose more to them than the
# target's step: beside two burners, fsd at tau 0.1 ran 3.2x ar's seconds per token (1.25 against 3.99
# tokens/s), and a sweep told up to 2 min 30 s took 2 min 59 s.
SLOWEST_SIDE_CONTENDED = 3.5


def slowest_seconds(plan: list[tuple[str, int]], models_of, contended: bool = False) -> float | None:
    """A plan's seconds where each run that drafts goes at SLOWEST_SIDE times ar's pace (on a
    `contended` machine SLOWEST_SIDE_CONTENDED), unless its own estimate is slower; None where ar's
    pace is unknown."""
    seconds, _ = eta.plan_seconds(plan, models_of)
    ar = eta.seconds_per_token("ar", models_of("ar"))
    if seconds is None or ar is None:
        return None
    slowest = SLOWEST_SIDE_CONTENDED if contended else SLOWEST_SIDE
    return sum(run if method == "ar" else max(run, slowest * ar.seconds * tokens)
               for (method, tokens), run in zip(plan, seconds))


class Comparison:
    def __init__(self, runs: Runs):
        self.runs, self.family = runs, runs.family

    def _sides(self, method, mode, sweep_option, sweep_text, methods, values) -> tuple[list, list, int]:
        """(the columns asked for, every side to run: the target-only reference first, repeats)."""
        columns_to_run = variants(method, mode, sweep_option, sweep_text, methods, chosen_divergence(values))
        for _, variant, _ in columns_to_run:  # every setting checked before the first run
            options_from_values(variant, values)
        limit = current_limits().runs_per_minute
        # An ar column is the reference itself (run once more, its speedup over ar read the noise)
        sides = [REFERENCE, *(column for column in columns_to_run if column != REFERENCE)]
        repeats = max(1, min(REPEATS, limit // len(sides))) if limit else REPEATS
        return columns_to_run, sides, repeats

    def _plan(self, sides: list, repeats: int, values) -> list[tuple[str, int]]:
        """(method, tokens at most) of every run in the order they run: the warm-ups, then the repeats."""
        tokens = [{**options_from_values(variant, values), **extra}["max_new_tokens"] for _, variant, extra in sides]
        return [*((variant, WARM_UP_TOKENS) for _, variant, _ in sides),
                *((sides[side][1], tokens[side]) for _, side in schedule(len(sides), repeats))]

    def _expected(self, key: str, plan: list, mode: str, loaded: bool = True) -> tuple[float | None, str, str]:
        """(seconds, as said, one line) a plan of runs should take, from this machine's recent runs
        (eta.py); a sweep says how long it may take where its settings' drafts mostly fail."""
        models_of = self.family.models_of(key, loaded)
        seconds, line = eta.plan_line(plan, models_of, " (the first runs will tell)")
        sweep = mode == "sweep" and bool(seconds)
        contended = sweep and eta.seen_contended()
        slowest = slowest_seconds(plan, models_of, contended) if sweep else None
        if not slowest or eta.shown_seconds(slowest) <= eta.shown_seconds(seconds):
            return seconds, eta.duration_text(seconds) if seconds else "", line
        said = f"{eta.duration_text(seconds)} to {eta.duration_text(slowest).removeprefix('about ')}"
        beside = ", and beside other programs wanting most of the cores a draft's many small passes lose more " \
            "than the target's step" if contended else ""
        # The bound's own figures, not an example of one method: a reviewer's sd sweep read fsd's tau 0.1 here.
        return seconds, said, (f"{line}; up to {eta.duration_text(slowest)} where a swept setting's drafts mostly "
                               f"fail (it then pays drafting and a wider pass for about one token a round{beside})")

    def estimate(self, key: str, prompt: str, method: str, mode: str, sweep_option: str, sweep_text: str,
                 methods: list, *values) -> str:
        """The line under the Compare button: how long the comparison set up now would take (no
        update while the page's own job runs: it tells its time left)."""
        if self.runs.tab_job_going(key):
            return gr.skip()
        try:
            _, sides, repeats = self._sides(method, mode, sweep_option, sweep_text, methods, values)
            plan = self._plan(sides, repeats, values)
            self.runs.time_machine_if_idle(key)
            return render.status_html(eta.AS_SET_NOW + self._expected(key, plan, mode, loaded=False)[-1])
        except PlaygroundError as error:
            kept = " Results below are the last Compare's, which ran with other settings" \
                if self._kept_results(key) else ""
            return render.status_html(f"Compare cannot start as set: {error}.{kept}", "error")

    def compare(self, key: str, prompt: str, method: str, mode: str, sweep_option: str, sweep_text: str,
                methods: list, *values):
        """Yield the expected duration, a progress line with the time left as each run ends, then
        the columns: every side (a target-only reference first, shown as a column) warmed up, then
        run `repeats` times in alternating order (paired_speedups.py). They wait in line as one job, and
        take the model a round at a time in turn with other visitors' runs (runs.py)."""
        job = None
        try:
            columns_to_run, sides, repeats = self._sides(method, mode, sweep_option, sweep_text, methods, values)
            self.family.sessions.get(key).admit(len(sides) * repeats, current_limits().runs_per_minute)
            target = self.family.models_for(key, "ar")["target"]
            plan = self._plan(sides, repeats, values)
            job = self.runs.job(key, plan)
            for waiting in self.runs.in_line(job):
                yield render.status_html(waiting)
            self.runs.time_machine(key, job)
            expected, expected_said, expected_line = self._expected(key, plan, mode)
            yield render.status_html(f"Starting: {expected_line}")
            began = time.perf_counter()
            runs = [partial(self._run, key, prompt, variant, values, extra, job) for _, variant, extra in sides]
            # The job's yardstick is the one told as it started (read after its first warm-up, it told a busy
            # sweep 1 min 30 s, then 2 min 10 s left, unexplained); none known yet: its first runs give one.
            estimates = eta.plan_seconds(plan, self.family.models_of(key))[0]
            timed, durations, shares, left = [Timed() for _ in sides], [], [], expected
            order = run_order(len(sides), repeats)
            plan_sides = [side for side, _ in order]
            ended = shown_at = time.perf_counter()
            on_screen = left  # the last time left the line showed, a run's end or a tick since
            for item, elapsed in with_ticks(repeated(runs, repeats), len(order)):
                side, repeat = order[len(durations)]
                what = f"{sides[side][0]}: {which_run(repeat)}"
                if item is None:  # a run going: the time left told as the last ended, less the seconds since
                    yield render.status_html(as_started(going_text(len(durations) + 1, len(plan), what, elapsed,
                                                                   left), expected_said))
                    if left and left > elapsed:
                        on_screen, shown_at = left - elapsed, time.perf_counter()
                    continue
                run = item[2]
                durations.append(time.perf_counter() - ended)
                ended, done = time.perf_counter(), len(durations)
                shares.append(run.stats.tokens / max(1, plan[done - 1][1]))
                eta.record(run, took=durations[-1])
                if repeat >= 0:
                    timed[side].add(repeat, run)
                if estimates is None:
                    estimates = eta.plan_seconds(plan, self.family.models_of(key))[0]
                # A rise is told against the figure on screen: 18 s, counted down, then "about 24 s left" unexplained
                left = eta.job_time_left(estimates, durations, len(sides), plan_sides, shares)
                spread = eta.job_time_left_range(estimates, durations, len(sides), plan_sides, shares)
                time_left = time_left_text(left, on_screen, sides[side][0], paced=repeat >= 0, spread=spread,
                                           took=ended - shown_at, beside=ran_beside(timed))
                on_screen, shown_at = left, ended
                line = f"run {done} of {len(plan)} done ({what}){time_left}"
                yield render.status_html(as_started(line, expected_said))
            shown_runs = [side.median_run() for side in timed]
            reference_ids = target_ids(shown_runs[0], target)
            side_of = {label: side for side, (label, _, _) in enumerate(sides)}
            shown = columns_to_run if REFERENCE in columns_to_run else [(REFERENCE_LABEL, "ar", {}), *columns_to_run]
            columns = [self._column(label, shown_runs[side_of.get(label, 0)], target, reference_ids, prompt,
                                    shown_runs[0].text, timed[side_of.get(label, 0)], timed[0],
                                    side_of.get(label, 0) == 0)
                       for label, _, _ in shown]
            took = f"{len(plan)} runs took {eta.took_text(time.perf_counter() - began)}"
            took += f" (expected as it started: {expected_said} at their max new tokens)." \
                if expected else "."
            shown = render.compare_html(columns, f"{took} {busy_note(timed)}".strip())
            session = self.family.sessions.get(key)
            session.compare_shown = (dict(session.specs), shown)
            yield shown
        except Exception as error:  # noqa: BLE001  (the UI boundary: show it, stay usable)
            yield error_status(error) + self._kept_results(key)
        finally:
            if job is not None:
                self.runs.done(job)

    def _kept_results(self, key: str) -> str:
        """The last Compare's results of the family loaded now, below a refusal: a refused sweep had
        replaced them (the refusal goes as the settings change, the results stay: KEPT_RESULTS_JS)."""
        session = self.family.sessions.get(key)
        if session.compare_shown is None or session.compare_shown[0] != session.specs:
            return ""
        return (f'<div class="{KEPT_RESULTS}"><p class="kept-note">Kept from the last Compare that ran (each '
                f"column names its setting):</p>{session.compare_shown[1]}</div>")

    def _run(self, key, prompt, variant, values, extra, job, **overrides):
        return self.runs.finished(key, prompt, variant, values, job=job, **{**extra, **overrides})

    def _column(self, label, run, target, reference_ids, prompt, reference_text: str, timed: Timed,
                 reference: Timed, is_reference: bool = False) -> dict:
        """A column (of its median run): its settings, its text, its figures (speed as the median of its runs with
        their range, the speedup over ar paired within each repeat and flagged where it passes what
        the column's measured costs allow, the log-likelihood beside a repetition measure, which it
        rewards), and its words against the target-only run's."""
        ids, stats = target_ids(run, target), run.stats.to_dict()
        decode = decoder(self.family.loader(run.models[run.stats.target_role]))
        settings = f'<p class="settings-line">{escape(render.settings_text(run) + past_maximum(run))}</p>'
        return {"label": label,
                "html": settings + render.tokens_html(run.tokens, decode) + render.vocabulary_html(run)
                + diff_html(run.text, reference_text),
                "metrics": {"tokens/s (its seconds less its timing of ar's step and waits)": timed.text(),
                            "speedup vs ar (median of paired repeats)":
                                Speedup("1.00x (the reference)") if is_reference
                            else timed.speedup(reference),
                            **render.acceptance_metrics(stats),
                            AGREEMENT: token_agreement(ids, reference_ids),
                            "target mean log-lik": target_log_likelihood(target, prompt, ids,
                                                                         run.config.chat_template),
                            "repeated word 3-grams": repetition(run.text),
                            "where the seconds went (its median run)": self._budget(run, is_reference)}}

    @staticmethod
    def _budget(run, is_reference: bool) -> str | None:
        """The median run's budget; its ar figure is modelled, not the measured ar runs the speedup
        pairs with, so the two may differ (a reviewer read 0.54x above a budget implying 0.48x)."""
        budget = render.budget_text(run)
        if budget and AR_ROW in budget and not is_reference:
            budget += "; the speedup above pairs the measured ar runs, not this modelled ar"
        return budget


def past_maximum(run) -> str:
    """A column's note where a threshold passes its divergence's maximum: every checked candidate
    passes there (a reviewer's tau 0.9 column read 100% acceptance, unexplained)."""
    bound, config = MAXIMUM.get(getattr(run.config, "divergence", None), math.inf), run.config
    past = [name for name in ("tau", "tau_q", "tau_t") if name in METHODS[run.method].reads
            and getattr(config, name, None) is not None and getattr(config, name) >= bound]
    return "".join(f"; {name} {getattr(config, name):g} is past {config.divergence.upper()}'s maximum "
                   f"{bound:.3g}: every candidate it checks passes" for name in past)


# Runs apart by more than this (the slowest left over the fastest) tell the time left as a range.
SPREAD_RANGE = 1.3
# A time left this many times under the last told less the run just done says why it fell.
FELL_FAST = 1.3


def time_left_text(left: float | None, told: float | None, label: str, paced: bool,
                   spread: tuple[float, float] | None = None, took: float = 0.0, beside: str = "") -> str:
    """', about 40 s left' after the run of `label`; during the warm-ups, which pace nothing, it says
    its pace is the recent runs' (a busy sweep told 1 min 40 s left there had 4 min 30 s to go).
    Where the job's runs spread (`spread`: the least and most left, eta.job_time_left_range), the
    range, as a busy machine's runs make it (one figure jumped 2 min 50 s -> 6 min 50 s -> 4 min),
    with `beside`, what ran beside the app (paired_speedups.ran_beside)."""
    if not left:
        return ""
    pace = "" if paced else " at the recent runs' pace (this job's first full runs will pace it)"
    low, high = spread or (left, left)
    if high > SPREAD_RANGE * low and eta.shown_seconds(high) > eta.shown_seconds(low):
        most = eta.duration_text(high).removeprefix("about ")
        return (f", {eta.duration_text(low)} to {most} left (runs of one setting took their seconds this far apart"
                + (f"; {beside})" if beside else ")"))
    return f", {eta.duration_text(left)} left{pace}{rise_text(left, told, label, took)}"


def rise_text(left: float, told: float | None, label: str, took: float = 0.0) -> str:
    """Why the time left grew past the last told ("" where the line shows no rise: "up from about
    1 min 40 s" beside "about 1 min 40 s left" read as a contradiction): the run just done took
    longer than its estimate (a reviewer watched 40 s -> 46 s -> 55 s left, unexplained; another 43 s -> 44 s).
    Or why it fell much more than the `took` seconds of the run just done (2 min 10 s -> 1 min in 12 s)."""
    if told is None or eta.shown_seconds(left) == eta.shown_seconds(told):
        return ""
    if left > told:
        return f" (up from {eta.duration_text(told)}: {label}'s run took longer than estimated)"
    if told - took > FELL_FAST * left:
        return f" (down from {eta.duration_text(told)}: the runs so far went faster than estimated)"
    return ""


def sweep_after_switch(method: str, option: str, values: str, kept: dict) -> tuple[str, str, str]:
    """The option and values Compare shows once `method` is chosen, and the option box's note: the
    sweep last set for `method` on this page, else the method's own. `kept` remembers each sweep
    the page leaves (a reviewer's typed fsd values became 0.1, 0.3, 0.6 after fsd -> sd -> fsd,
    unsaid)."""
    left = kept.get("method", DEFAULT_METHOD)
    kept["method"], kept[left] = method, (option, values)
    option = default_sweep(method)
    option, values = kept.get(method, (option, suggested_sweep(option)))
    kept["option"] = option
    info = f"the options of {method}, the method chosen on the left"
    if left != method and kept[left] != (option, values):
        info += f"; {left}'s sweep ({kept[left][0]}: {kept[left][1]}) comes back when {left} is chosen again"
    return option, values, info


def sweep_for_option(option: str, values: str, kept: dict):
    """The values box once `option` is picked: its suggested sweep where the option changed, else the
    values as typed. The box fires its `input` as focus leaves it, the option unchanged (a reviewer
    tabbed past it and the typed "2, banana" became "2, 4, 8")."""
    if option == kept.get("option", default_sweep(DEFAULT_METHOD)):
        return values, kept
    kept["option"] = option
    return suggested_sweep(option), kept


def build_tab(ui: Shared, tab) -> gr.CheckboxGroup:
    """The Compare tab; returns its method picker (which follows the loaded family)."""
    gr.Markdown("Run the Generate tab's prompt with the same seed: sweep one option of the chosen method "
                "(e.g. tau), or put methods side by side. Every side, a target-only run first, is warmed up "
                "and then run 3 times in alternating order: speeds are medians with their range, speedups "
                "are paired with the target-only run of the same repeat. Each column is scored against the "
                "target-only run: token agreement (tokens in common once the two texts are aligned), the "
                "target's mean log-likelihood of the text (which a "
                "text repeating itself scores well on), the share of repeated word 3-grams, and a word diff.")
    with gr.Row():
        mode = gr.Radio([("sweep an option", "sweep"), ("methods side by side", "methods")], value="sweep",
                        label="compare", elem_id="compare-mode")
        option = gr.Dropdown(sweep_options(DEFAULT_METHOD), value=default_sweep(DEFAULT_METHOD),
                             label="option to sweep", info="the options of the method chosen on the left",
                             allow_custom_value=True, elem_id="compare-option")  # API callers: any method's
        values = gr.Textbox(suggested_sweep(default_sweep(DEFAULT_METHOD)), label="values", elem_id="compare-values")
        methods = MethodPicker([name for _, name in method_choices()], value=["ar", DEFAULT_METHOD],
                                   label="methods", elem_id="compare-methods", visible=False)
        # Beside the boxes: the option box's list, open while it has focus, lay over it when below.
        start = gr.Button("Compare", variant="primary", elem_id="compare", scale=0, min_width=120)
    expected = gr.HTML(elem_id="compare-expected")  # how long it will take, before it starts
    view = gr.HTML(elem_id="compare-view")
    ui.family_views.append(view)

    def sweep_for(method, chosen, typed, kept):
        chosen, typed, info = sweep_after_switch(method, chosen, typed, kept)
        return gr.Dropdown(choices=sweep_options(method), value=chosen, info=info), typed, kept

    def show_mode(chosen):
        return (gr.update(visible=chosen == "sweep"), gr.update(visible=chosen == "sweep"),
                gr.update(visible=chosen == "methods"))

    kept = gr.State({})  # each method's sweep as the page left it, so a method switch loses no typed values
    ui.method.change(sweep_for, [ui.method, option, values, kept], [option, values, kept], **PRIVATE)
    option.input(sweep_for_option, [option, values, kept], [values, kept], **PRIVATE)
    mode.change(show_mode, mode, [option, values, methods], **PRIVATE)
    inputs = [ui.prompt, ui.method, mode, option, values, methods, *ui.widgets]
    run = ui.page_and_api(start.click, ui.handlers.compare, inputs, [view], "compare")
    ui.point_to_tab(start.click, "Compare", "its progress and results are", run, view)
    # A refusal shown is cleared as the settings change (a reviewer fixed the values; it stayed), on
    # the tab and in the sidebar, leaving the results kept under it; anything else is left as it is.
    changes = [mode.change, option.change, values.change, methods.change]
    gr.on(changes, None, view, view, **PRIVATE, js=KEPT_RESULTS_JS)
    ui.clear_refusal_on(changes, "Compare")
    again = ui.estimate_again_while_shown(tab)
    ui.page_only([tab.select, mode.change, option.change, values.change, methods.change, again.tick],
                 ui.handlers.compare_estimate, inputs, [expected], after=run, view=view)
    return methods
