"""The UI's event handlers: plain methods, testable without a browser.

Each handler takes the session key first (Gradio's session hash; any string in tests) and returns
or yields the values of its outputs, in the order layout.py wires them. Errors become a status
message (and a toast), never a broken app.
"""

import json
import logging
import tempfile
import threading
import time
from pathlib import Path

import gradio as gr

from .. import correction_memory, embedded
from ..correction_memory import CorrectionMemory, load_memory
from ..engine import format_prompt, generate, stream
from ..errors import PlaygroundError
from ..limits import current_limits
from ..methods import METHODS
from ..models import load_model, unload_all
from ..policy import public_mode
from ..space import on_space
from . import charts, render
from .family import describe_family, load_family, project_presets, relation
from .options import MAX_SWEEP_VALUES, THRESHOLDS, all_controls, chosen_divergence, finite_number, method_choices, \
    options_from_values, sweep_values, threshold_scale, visible_options
from .quality import target_ids, target_log_likelihood, token_agreement
from .session import Sessions, Stepping
from .share import linked_values
from .stepper import Toy, bars, explain_step

log = logging.getLogger(__name__)
TEXT_INTERVAL = 0.1  # at least this many seconds between text refreshes while generating...
CHART_INTERVAL = 0.5  # ...and between chart refreshes (a gr.Plot resends the whole figure)...
LIVE_POINTS = 120  # points per line in a streamed chart
SETTLE = 0.3  # seconds without a further change before a changed control re-runs
REFRESH_SHARE = 0.04  # ...and longer if each kind of refresh would take over 4% of the run's time
PREPARING = ("first run on this Space: preparing the embedded models (the target from the Hub, the draft and "
             "qualifier assembled from it; about a minute, once per container)…")


class Pacer:
    """When to refresh a view: at most every `interval` seconds, and rarely enough that the
    refreshes (building the view, and Gradio sending it while the generator waits at its
    `yield`) cost at most `share` of the time."""

    def __init__(self, interval: float, share: float = REFRESH_SHARE):
        self.interval, self.share, self.next = interval, share, 0.0

    def due(self) -> bool:
        return time.monotonic() >= self.next

    def spent(self, seconds: float) -> None:
        self.next = time.monotonic() + max(self.interval, seconds / self.share)


def _error(error: Exception) -> str:
    message = str(error) if isinstance(error, PlaygroundError) else f"{type(error).__name__}: {error}"
    if not isinstance(error, PlaygroundError):
        log.exception("unexpected error in a UI handler")
    gr.Warning(message)
    return render.status_html(message, "error")


def _decoder(tokenizer):
    return lambda token_id: tokenizer.decode([token_id])


def _write(suffix: str, text: str) -> str:
    folder = Path(tempfile.mkdtemp(prefix="playground-"))
    path = folder / f"run{suffix}"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _check_method(name) -> None:
    if not isinstance(name, str) or name not in METHODS:
        raise PlaygroundError(f"unknown method {name!r}: choose one of {', '.join(METHODS)}")


class Handlers:
    def __init__(self, loader=None, presets=None):
        self.loader = loader or load_model
        self.presets = list(presets or project_presets())
        self.sessions = Sessions()
        self._changes = threading.Lock()

    # -- model family ---------------------------------------------------------------------------
    def preset(self, name: str) -> tuple:
        """The preset's target, draft and qualifier specs, its description and its method."""
        preset = next((p for p in self.presets if p.name == name), self.presets[0])
        method = preset.method if preset.method in METHODS else gr.skip()
        return preset.target, preset.draft, preset.qualifier, preset.description, method

    def load(self, key: str, target: str, draft: str, qualifier: str, method: str = "", progress=None):
        """Load a family; returns (status, family description, method dropdown). The dropdown
        offers the methods the family can run and selects the preset's, else keeps `method`."""
        session = self.sessions.get(key)
        specs = {"target": target, "draft": draft, "qualifier": qualifier}
        try:
            if not isinstance(target, str) or not target.strip():
                raise PlaygroundError("no target model: name one (or pick a preset) before loading")
            for role, spec in specs.items():
                if spec is not None and not isinstance(spec, str):
                    raise PlaygroundError(f"the {role} model must be a name or empty, got {spec!r}")
            models = load_family(specs, self.loader, progress)
        except Exception as error:  # noqa: BLE001  (the UI boundary: show it, stay usable)
            return _error(error), gr.skip(), gr.skip()
        session.specs = {role: m.spec for role, m in models.items()}
        session.preset = next((p for p in self.presets if p.specs() == {r: s or "" for r, s in specs.items()}), None)
        choices = method_choices(relation(models), set(models))
        usable = [name for _, name in choices]
        preferred = [session.preset.method if session.preset else "", method, *usable[:1]]
        chosen = next((name for name in preferred if name in usable), None)
        return (render.status_html(f"loaded {', '.join(m.spec for m in models.values())}"),
                describe_family(models), gr.Dropdown(choices=choices, value=chosen))

    def unload(self, key: str):
        session = self.sessions.get(key)
        session.specs, session.run, session.stepping = {}, None, None
        if public_mode():  # the model cache is shared by every visitor: one may not empty it for all
            return render.status_html("models stay loaded on this public deployment (shared by all visitors)"), ""
        unload_all()
        return render.status_html("models unloaded: memory freed (they load again on the next run)"), ""

    def models_for(self, key: str, method: str) -> dict:
        """The session's family (the first preset until one is loaded), for the method's roles."""
        _check_method(method)
        specs = self.sessions.get(key).specs or {r: s for r, s in self.presets[0].specs().items() if s}
        needed = METHODS[method].roles
        missing = [role for role in needed if role not in specs]
        if missing:
            raise PlaygroundError(f"{method} needs a {' and a '.join(missing)} model: load a family with one")
        return {role: self.loader(specs[role]) for role in needed}

    # -- method and options -----------------------------------------------------------------------
    def method_changed(self, key: str, method: str) -> list:
        """Show only the method's options; apply the preset's defaults for it (the first preset's
        until a family is loaded); describe it."""
        visible, session = visible_options(method), self.sessions.get(key)
        preset = session.preset or (None if session.specs else self.presets[0])
        defaults = preset.defaults.get(method, {}) if preset and isinstance(method, str) else {}
        defaults = {**defaults, **linked_values(session, preset)}
        updates = [gr.update(visible=c.name in visible, **({"value": defaults[c.name]} if c.name in defaults else {}),
                             **self._scale_of(c.name, defaults.get("divergence")))
                   for c in all_controls()]
        chosen = METHODS.get(method) if isinstance(method, str) else None
        about = f"**{chosen.name}**: {chosen.summary} ({'lossless' if chosen.lossless else 'lossy'})" if chosen else ""
        if chosen and preset and chosen.name in preset.sources:
            about += f"\n\nPreset `{preset.name}`: {preset.sources[method]}."
        return [*updates, about]

    @staticmethod
    def _scale_of(name: str, divergence: str | None) -> dict:
        """A threshold slider's range and info under `divergence` (nothing for other controls)."""
        if name not in THRESHOLDS or divergence is None:
            return {}
        maximum, info = threshold_scale(name, divergence)
        return {"maximum": maximum, "info": info}

    def divergence_changed(self, key: str, divergence: str, *thresholds) -> list:
        """Put the threshold sliders (tau, tau_q, tau_t, in that order) on the chosen divergence's
        scale: its maximum, and an info line with its bound and log base. A value past the new
        maximum moves to it."""
        updates = []
        for name, value in zip(THRESHOLDS, thresholds, strict=True):
            scale = self._scale_of(name, divergence)
            clamped = {"value": scale["maximum"]} if value is not None and value > scale["maximum"] else {}
            updates.append(gr.update(**scale, **clamped))
        return updates

    # -- generation -------------------------------------------------------------------------------
    def _stream(self, key: str, prompt: str, method: str, values):
        options = options_from_values(method, values)
        models = self.models_for(key, method)
        memory = self._memory(key, models) if "memory" in METHODS[method].options else None
        self.sessions.get(key).admit(1, current_limits().runs_per_minute)
        return models, stream(prompt, method=method, **models, correction_memory=memory, **options)

    def _memory(self, key: str, models: dict):
        """csd's correction memory for the session's pair, learning across runs: the visitor's own
        on a public deployment, else one per pair for the whole process."""
        target, draft = models["target"].spec, models["draft"].spec
        if public_mode():
            return self.sessions.get(key).memories.setdefault((target, draft), CorrectionMemory(target, draft))
        return correction_memory.shared(target, draft, create=True)

    def generate(self, key: str, prompt: str, method: str, show_rejected: bool, *values):
        """Yield (status, tokens html, stats html, *chart figures) as the run streams. `stop()`
        in the same session (also called before each new run) ends it cleanly at its next step."""
        session = self.sessions.get(key)
        mine = session.claim()
        if session.generation != mine:
            yield (render.status_html("stopped before it started"), *[gr.skip()] * (2 + len(charts.CHARTS)))
            return
        session.run, session.timeline, session.show_rejected = None, charts.Timeline(), show_rejected is True
        session.charts_sent = 0.0  # a new run's first charts go out without waiting for the last run's
        steps = None
        if on_space() and not embedded.all_available():
            yield (render.status_html(PREPARING), *[gr.skip()] * (2 + len(charts.CHARTS)))
        try:
            if not isinstance(show_rejected, bool):
                raise PlaygroundError(f"show rejected drafts must be true or false, got {show_rejected!r}")
            models, steps = self._stream(key, prompt, method, values)
            session.decode = _decoder(models[METHODS[method].roles[0]].tokenizer)
            text_pace, chart_pace = Pacer(TEXT_INTERVAL), Pacer(CHART_INTERVAL)
            for _, run in steps:
                session.run = run
                session.timeline.add(run)
                if session.generation != mine:
                    break
                with_stats = chart_pace.due()
                if with_stats or text_pace.due():
                    with_charts = with_stats and session.charts_wanted()
                    started = time.monotonic()
                    yield self._view(session, f"generating… {run.stats.tokens} tokens", with_stats, with_charts)
                    cost = time.monotonic() - started
                    (chart_pace if with_stats else text_pace).spent(cost)
                    if with_stats:
                        text_pace.spent(0.0)
        except Exception as error:  # noqa: BLE001  (the UI boundary: show it, stay usable)
            yield (_error(error), *[gr.skip()] * (2 + len(charts.CHARTS)))
            return
        finally:
            if steps is not None:
                steps.close()
        run = session.run
        if run.finished:
            session.race.add(run, session.decode)
        ending = f"done: {run.stats.tokens} tokens ({run.stop_reason})" if run.finished else \
            f"stopped after {run.stats.tokens} tokens"
        yield self._view(session, ending, True, True, final=True)

    def _view(self, session, status: str, with_stats: bool, with_charts: bool, final: bool = False) -> tuple:
        """(status, token spans, stats or skip, *figures or skips). While streaming, the figures
        carry at most LIVE_POINTS points per line; the final view carries every point."""
        run = session.run
        text = render.token_spans(run.tokens, session.decode, session.show_rejected)
        stats = gr.skip()
        if with_stats:
            stats = render.stats_html({**run.stats.to_dict(), "stop_reason": run.stop_reason or "running"})
            stats += render.serving_html(run) if run.finished else ""
        figures = [gr.skip()] * len(charts.CHARTS)
        if with_charts:
            figures = charts.all_figures(run, session.timeline)
            figures = figures if final else [charts.thinned(f, LIVE_POINTS) for f in figures]
            session.charts_sent = time.monotonic()
        return (render.status_html(status), text, stats, *figures)

    def show_charts(self, key: str, shown: bool) -> None:
        """The charts panel was opened or closed: closed charts wait for the run's end."""
        self.sessions.get(key).charts_shown = shown

    def charts_drawn(self, key: str) -> None:
        """The page has drawn the last charts it received: it can afford the next ones."""
        self.sessions.get(key).charts_drawn = time.monotonic()

    def rerender(self, key: str, show_rejected: bool) -> str:
        """Apply the "show rejected drafts" toggle (a running generation follows it too)."""
        session = self.sessions.get(key)
        session.show_rejected = show_rejected
        if session.run is None:
            return gr.skip()
        return render.token_spans(session.run.tokens, session.decode, show_rejected)

    def stop(self, key: str) -> None:
        """End the session's running (or queued) generation at its next step."""
        self.sessions.get(key).generation += 1

    def restart(self, key: str, tick: int) -> int:
        """Stop the running generation and return tick + 1: the layout starts a run when the
        tick changes, so every trigger stops the old run before the new one is queued. A run
        started this way reads the controls as they are now: pending control changes are done."""
        self._change(key)
        self.stop(key)
        self.sessions.get(key).queued = self.sessions.get(key).generation
        return tick + 1

    def changed(self, key: str, tick: int):
        """A control that changes the run changed: on the Generate tab, restart with the same prompt
        and seed once the changes pause for SETTLE seconds (typing "0.35" or dragging a slider is many changes); the
        last change (or Generate) wins and the earlier ones do nothing."""
        mine = self._change(key)
        time.sleep(SETTLE)
        session = self.sessions.get(key)
        return self.restart(key, tick) if session.changes == mine and session.generate_shown else gr.skip()

    def show_generate(self, key: str, shown: bool) -> None:
        """A tab was chosen: controls re-run Generate only while its tab shows (elsewhere the
        re-run would compete with Compare or Step mode for the same cores)."""
        self.sessions.get(key).generate_shown = shown

    def _change(self, key: str) -> int:
        session = self.sessions.get(key)
        with self._changes:
            session.changes += 1
            return session.changes

    # -- export -----------------------------------------------------------------------------------
    def export_json(self, key: str):
        run = self.sessions.get(key).run
        if run is None:
            return None, render.status_html("nothing to export yet: generate first", "error")
        return _write(".json", run.to_json(evidence=True, indent=1)), \
            gr.skip()

    def export_charts(self, key: str):
        session = self.sessions.get(key)
        if session.run is None:
            return None, render.status_html("nothing to export yet: generate first", "error")
        return _write(".html", charts.figures_html(charts.all_figures(session.run, session.timeline))), gr.skip()

    # -- compare ----------------------------------------------------------------------------------
    def compare(self, key: str, prompt: str, method: str, mode: str, sweep_option: str, sweep_values: str,
                methods: list, *values):
        """Yield the compare view's HTML as each column finishes: a target-only reference first."""
        try:
            variants = self._variants(method, mode, sweep_option, sweep_values, methods, chosen_divergence(values))
            for name, variant, extra in variants:  # every setting checked before the first run
                options_from_values(variant, values)
            self.sessions.get(key).admit(1 + len(variants), current_limits().runs_per_minute)
            reference = self._finished(key, prompt, "ar", values)
            target = self.models_for(key, "ar")["target"]
            reference_ids = target_ids(reference, target)
            columns = []
            for label, variant, extra in variants:
                run = self._finished(key, prompt, variant, values, **extra)
                columns.append(self._column(label, run, target, reference_ids, prompt))
                yield render.compare_html(columns)
        except Exception as error:  # noqa: BLE001  (the UI boundary: show it, stay usable)
            yield _error(error)

    @staticmethod
    def _variants(method, mode, sweep_option, sweep_text, methods, divergence):
        if mode == "methods":
            for name in methods if isinstance(methods, list) else [methods]:
                _check_method(name)
            chosen = list(dict.fromkeys(methods))
            if not chosen or len(chosen) > MAX_SWEEP_VALUES:
                raise PlaygroundError(f"pick 1 to {MAX_SWEEP_VALUES} methods to compare, got {len(chosen)}")
            return [(name, name, {}) for name in chosen]
        if mode != "sweep":
            raise PlaygroundError(f"compare mode must be 'sweep' or 'methods', got {mode!r}")
        _check_method(method)
        if not isinstance(sweep_option, str) or sweep_option not in visible_options(method):
            raise PlaygroundError(f"{method} does not read {sweep_option!r}: pick one of its options to sweep")
        control = next(c for c in all_controls() if c.name == sweep_option)
        return [(f"{method} {sweep_option}={value:g}", method, {sweep_option: value})
                for value in sweep_values(control, sweep_text, divergence)]

    def _finished(self, key, prompt, method, values, **override):
        options = {**options_from_values(method, values), **override}
        models = self.models_for(key, method)
        memory = self._memory(key, models) if "memory" in METHODS[method].options else None
        return generate(prompt, method=method, **models, correction_memory=memory, **options)

    def _column(self, label, run, target, reference_ids, prompt) -> dict:
        ids, stats = target_ids(run, target), run.stats.to_dict()
        decode = _decoder(self.loader(run.models[run.stats.target_role]).tokenizer)
        return {"label": label, "html": render.tokens_html(run.tokens, decode),
                "metrics": {"tokens/s": stats["tokens_per_second"], "acceptance": stats["acceptance_rate"],
                            "agreement with target": token_agreement(ids, reference_ids),
                            "target mean log-lik": target_log_likelihood(target, prompt, ids,
                                                                         run.config.chat_template)}}

    # -- step mode --------------------------------------------------------------------------------
    def step(self, key: str, prompt: str, method: str, position: int, *values):
        """Advance one verification round, starting a run if none is going.
        Returns (status, text html, explanation html, distributions figure)."""
        session = self.sessions.get(key)
        try:
            if session.stepping is None:
                session.stepping = self._start_stepping(key, prompt, method, values)
            stepping = session.stepping
            step, stepping.run = next(stepping.steps)
            stepping.explanation = explain_step(step, stepping.run.config)
        except StopIteration:
            session.stepping = None
            return render.status_html("the run is finished: press Step to start again"), gr.skip(), gr.skip(), gr.skip()
        except Exception as error:  # noqa: BLE001  (the UI boundary: show it, stay usable)
            session.stepping = None
            return _error(error), gr.skip(), gr.skip(), gr.skip()
        if stepping.run.finished:
            session.stepping = None
        return (render.status_html(f"round {stepping.run.stats.steps}: {stepping.run.stats.tokens} tokens so far"),
                render.tokens_html(stepping.run.tokens, stepping.decode, show_rejected=True),
                render.explanation_html(stepping.explanation, stepping.decode),
                self.step_position(key, position, stepping))

    def _start_stepping(self, key, prompt, method, values) -> Stepping:
        models, steps = self._stream(key, prompt, method, values)
        return Stepping(steps, _decoder(models[METHODS[method].roles[0]].tokenizer))

    def step_position(self, key: str, position: int, stepping=None):
        """Bars of the distributions the rule used at one check of the last explained round
        (PyramidSD: the qualifier's checks first, then the target's)."""
        stepping = stepping or self.sessions.get(key).stepping
        explanation = stepping.explanation if stepping else None
        if not explanation or not explanation.checks:
            return charts.bars("No drafted candidates in this round", {})
        position = min(max(int(position), 0) if finite_number(position) else 0, len(explanation.checks) - 1)
        check = explanation.checks[position]
        title = f"{check.stage.capitalize()} checks {stepping.decode(check.candidate)!r}: top tokens"
        return charts.bars(title, bars(check, stepping.decode))

    def step_reset(self, key: str):
        session = self.sessions.get(key)
        if session.stepping:
            session.stepping.steps.close()
        session.stepping = None
        return render.status_html("step mode reset: press Step to start a new run")

    # -- the seed-001 toy -------------------------------------------------------------------------
    def toy_reset(self, key: str, seed: int):
        session = self.sessions.get(key)
        session.toy = Toy(int(seed) if finite_number(seed) else 0)
        return render.toy_html(session.toy), charts.toy_bars(session.toy)

    def toy_step(self, key: str, rounds: int = 1):
        toy = self.sessions.get(key).toy
        for _ in range(int(rounds)):
            toy.step()
        return render.toy_html(toy), charts.toy_bars(toy)

    # -- CSD correction memory --------------------------------------------------------------------
    def correction_memory(self, key: str):
        """The CSD correction memory of the session's pair: its top pairs, and the JSON file."""
        try:
            models = self.models_for(key, "sd")
        except PlaygroundError as error:
            return None, _error(error)
        memory = self._memory(key, models)
        if not memory.total:
            return None, render.status_html("no correction memory yet for this pair: generate with a csd method")
        pairs = memory.top_pairs(20, models["target"].tokenizer)
        return _write(".memory.json", json.dumps(memory.to_dict())), render.memory_html(pairs, memory.total)

    def upload_memory(self, key: str, path: str | None):
        """Start csd from an uploaded correction memory (from `calibrate` or a download here) for
        the session's pair: on a public deployment the visitor's own, else the process's."""
        if not path:
            return gr.skip()
        try:
            if not isinstance(path, str):
                raise PlaygroundError(f"upload a correction memory file, got {path!r}")
            models = self.models_for(key, "sd")
            target, draft = models["target"].spec, models["draft"].spec
            uploaded = load_memory(path, target, draft, current_limits().max_upload_bytes, "(the uploaded file)")
        except PlaygroundError as error:
            return _error(error)
        if public_mode():
            self.sessions.get(key).memories[uploaded.pair] = uploaded
        else:
            correction_memory.share(uploaded)
        return render.memory_html(uploaded.top_pairs(20, models["target"].tokenizer), uploaded.total)
