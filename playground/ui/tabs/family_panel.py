"""Model families for the UI: the presets, loading through an injectable loader, the session's
family for the other handlers, and a description of what was loaded (device, dtype, memory,
shared vocabulary, which methods are usable).

The loader is `playground.models.loading.load_model` unless the app is built with another one (tests
inject tiny in-code models). `load_model` caches process-wide, so loading twice costs nothing.
"""

from collections.abc import Callable
from functools import partial

import gradio as gr

from ... import caches
from ...decoding.ngram import NGRAM
from ...errors import PlaygroundError
from ...methods import METHODS
from ...methods.draft_levers import is_feature_draft
from ...models.loading import LoadedModel, vocabulary_relation
from ...models.policy import public_mode
from ...models.presets import DEFAULT_PRESET, Preset, load_presets
from ..options import DEFAULT_METHOD, method_choices
from ..sharing import model_thread
from ..sharing.session import Sessions
from ..sharing.stale_runs import FAMILY_CHANGED
from ..sharing.visitors import session_key
from ..views import render
from ..views.error_status import check_method, error_status
from ..views.widgets import Choice
from .wiring import PICKED_JS, PRIVATE, keyed

Loader = Callable[[str], LoadedModel]
MAX_FAILED_LOADS = 1000  # sessions whose last Load failed, remembered to say why their runs wait
# What a Load of the family already loaded says again of the run the Load before it stopped, or
# whose answer it took: a preset's pick loads at once, and the Load a lecturer pressed a second later
# read only "already loaded: ..." (walk 26: 2 of 3 tries, the run had just ended).
STOPPED_AT_LOAD = "; the run that was going stopped at the Load before{} (it ran on the models that Load replaced)"
ANSWER_WENT_AT_LOAD = "; the last run's answer went at the Load before, with the models it ran on"


def project_presets() -> list[Preset]:
    """The project's presets, the default one first."""
    return sorted(load_presets().values(), key=lambda p: p.name != DEFAULT_PRESET)


class FamilyPanel:
    """The family panel's handlers (preset, load, unload), and each session's family for the rest:
    the first preset's until the session loads one."""

    def __init__(self, loader: Loader, presets: list[Preset], sessions: Sessions):
        self.presets, self.sessions = presets, sessions
        self._load_model = loader
        self._ready: dict[str, object] = {}  # spec -> its model, once loaded
        self._failed_loads: dict[str, str] = {}  # session key -> why its last Load failed (the newest kept)
        self._switched: set[str] = set()  # sessions whose last Load changed the family, until their views clear
        self._unloaded: set[str] = set()  # sessions whose panel says their models are unloaded

    def preset(self, name: str) -> tuple:
        """The preset's target, draft and qualifier specs and its description (the page loads the
        family next, and the load picks the method among those the family can run)."""
        preset = next((p for p in self.presets if p.name == name), self.presets[0])
        return *preset.specs().values(), preset.description

    def edited(self, key: str, spec=None, preset_name=None, role: str = "") -> str:
        """A model box changed (typed, pasted or filled; `spec` its text, for `role`): unless it names
        what the session runs for that role, or what the chosen preset (`preset_name`) filled in
        (its Load follows, and says what it loaded), runs are refused until Load rather than run on
        other models."""
        session = self.sessions.get(key)
        chosen = next((p for p in self.presets if p.name == preset_name), None)
        if role and isinstance(spec, str) and spec.strip() in (self._specs(session).get(role, ""),
                                                               chosen.specs().get(role) if chosen else None):
            return gr.skip()
        session.specs_edited = True
        return render.status_html("model boxes changed: press Load to run with these models")

    def _specs(self, session) -> dict:
        """role -> spec of what the session runs: its loaded family, else the first preset's."""
        return session.specs or {r: s for r, s in self.presets[0].specs().items() if s}

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
            # The boxes name a family that did not load: a run would use another one, so it waits
            # for a Load that works, and says why.
            session.specs_edited = True
            self._failed_loads[key] = str(error) if isinstance(error, PlaygroundError) else \
                f"{type(error).__name__}: {error}"
            while len(self._failed_loads) > MAX_FAILED_LOADS:
                self._failed_loads.pop(next(iter(self._failed_loads)))
            return error_status(error), gr.skip(), gr.skip()
        loaded = {role: spec_of(m) for role, m in models.items()}
        switched = loaded != self._specs(session)
        going = switched and session.stale_runs.going
        answered = switched and not going and session.run is not None  # its views are emptied below
        stopped = _stopped_after(session.run) if going else ""
        if switched:
            self._switched.add(key)
            session.forget_family(FAMILY_CHANGED)
        session.specs, session.specs_edited = loaded, False
        self._unloaded.discard(key)
        self._failed_loads.pop(key, None)
        session.preset = next((p for p in self.presets if p.specs() == {r: s or "" for r, s in specs.items()}), None)
        if session.link is not None and (session.preset is None or session.preset.name != session.link.family):
            session.link = None  # its values were the defaults of its family only until another was loaded
        choices = runnable_methods(models)
        usable = [name for _, name in choices]
        preset_method = session.preset.default_method if session.preset else ""
        # A Load of the family already loaded (a preset list closed without a new pick loads it
        # again) keeps the page's method: it set a lecturer's ar back to sd unasked.
        preferred = [preset_method, method] if switched else [method, preset_method]
        chosen = next((name for name in [*preferred, *usable[:1]] if name in usable), None)
        said = f"{'loaded' if switched else 'already loaded:'} {', '.join(spec_of(m) for m in models.values())}"
        if going:  # its view is emptied with the old family's answer: a reviewer's run vanished unsaid
            said += f"; the run that was going stopped{stopped}, its answer gone with the models it ran on (this " \
                    "Load replaced them)"
        elif answered:  # a reviewer's answer vanished at a preset pick, unsaid
            said += "; the last run's answer went with the models it ran on"
        elif not switched:  # a Load pressed after a preset's had replaced the word (walks 18, 19, 26)
            said += session.load_note
        if switched:
            session.load_note = STOPPED_AT_LOAD.format("," * bool(stopped) + stopped) if going \
                else ANSWER_WENT_AT_LOAD if answered else ""
        if chosen != method and isinstance(method, str) and method:  # the page's method changes: say so
            why = "its preset's" if session.preset and chosen == session.preset.default_method else \
                f"{method} does not run on this family"
            said += f"; method {chosen} now ({why})"
        # The family already loaded keeps the method the page shows now: a Load pressed while a preset
        # loaded sent the method from before it, and put it back over the preset's.
        picked = gr.Dropdown(choices=choices, value=chosen) if switched else gr.skip()
        status = render.status_html(said)
        if switched:  # the run it stopped ends on this status (a view it sent just before came after it)
            session.loaded_status = status
        return status, describe_family(models), picked

    def cleared_views(self, key: str, count: int) -> list:
        """After a Load: `count` views emptied where the Load changed the family (the previous
        family's answer stayed on screen under the new family's name), else left as they are."""
        if key not in self._switched:
            return [gr.skip()] * count
        self._switched.discard(key)
        self.sessions.get(key).run = None  # its charts and export were the old family's
        return [None] * count

    def usable_methods(self, key: str) -> list[tuple[str, str]]:
        """(label, name) of the methods the session's family can run; every method before one is loaded."""
        specs = self.sessions.get(key).specs
        if not specs:
            return method_choices()
        return runnable_methods({role: self._model(spec) for role, spec in specs.items()})

    def method_lists(self, key: str, *chosen_lists):
        """Compare's and Race's method pickers after a load: the family's methods, each picker
        keeping those of its choices the family can still run."""
        usable = [name for _, name in self.usable_methods(key)]
        return tuple(gr.update(choices=usable, value=[m for m in chosen or [] if m in usable])
                     for chosen in chosen_lists)

    def loader(self, spec: str):
        """The model of `spec`: loaded on the model thread, in a turn (loading computes); once
        loaded, handed over at once. A class's 30 first clicks each waited a turn of the ring for
        models loaded long before, 72-81 s before their page showed any status."""
        if spec not in self._ready:
            self._ready[spec] = model_thread.call(f"loading {spec}", self._load_model, spec)
        return self._ready[spec]

    def unloaded(self, key: str, method: str) -> list[str]:
        """The session's models for `method` not loaded yet (none for a refused setting: the run
        says why at once)."""
        try:
            specs = self.specs_for(key, method)
        except PlaygroundError:
            return []
        return [spec for spec in specs.values() if spec not in self._ready and spec != NGRAM]

    def unload(self, key: str):
        """Free the models' memory. The session keeps its family, which its next run loads again: it
        had fallen back to the first preset's, so that preset's Load read "already loaded", left the
        last family's methods on the page, and a run went on with the last family's method."""
        session = self.sessions.get(key)
        session.run, session.stepping, session.load_note = None, None, ""
        if public_mode():  # the model cache is shared by every visitor: one may not empty it for all
            return render.status_html("models stay loaded on this public deployment (shared by all visitors)"), ""
        self._ready.clear()
        caches.clear()
        self._unloaded.add(key)
        named = ", ".join(f"the {role} `{spec}`" for role, spec in self._specs(session).items())
        return (render.status_html("models unloaded: memory freed (they load again on the next run)"),
                f"**Unloaded** (memory freed): {named} load again on the next run that uses them, or with Load.")

    def described_after_run(self, key: str):
        """The panel once a run has loaded the session's family again after an Unload (a reviewer saw it
        stay empty while the run named its models); no update otherwise."""
        specs = self._specs(self.sessions.get(key))
        loaded = {role: self._model(spec) for role, spec in specs.items() if spec in self._ready or spec == NGRAM}
        if key not in self._unloaded or not loaded:
            return gr.skip()
        if len(loaded) == len(specs):
            self._unloaded.discard(key)
            return describe_family(loaded)
        waiting = ", ".join(f"the {role} `{spec}`" for role, spec in specs.items() if role not in loaded)
        return "\n".join([*_model_lines(loaded), "", f"Still unloaded: {waiting}, until a run uses it or Load."])

    def picked(self, key: str, name: str) -> tuple:
        """A preset chosen: its boxes and description, or nothing where it is the family loaded."""
        return (gr.skip(),) * 4 if self.picked_again(key, name) else self.preset(name)

    def load_picked(self, key: str, name: str, target: str, draft: str, qualifier: str, method: str = "",
                    progress=None):
        """The Load after a pick. The list can fire the same pick twice (as it closes, then as focus
        leaves it): the second pick's description, shown while the first pick loaded, stays under
        "nothing to load" unless the loaded models are named again (a browser test read only the
        preset's one-line description after its run)."""
        if not self.picked_again(key, name):
            return self.load(key, target, draft, qualifier, method, progress)
        specs = self._specs(self.sessions.get(key))
        in_memory = key not in self._unloaded and all(spec in self._ready or spec == NGRAM for spec in specs.values())
        described = describe_family({role: self._model(spec) for role, spec in specs.items()}) if in_memory \
            else gr.skip()  # an Unload's panel says they load again on the next run
        return render.status_html(f"{name} is the family loaded: nothing to load"), described, gr.skip()

    def picked_again(self, key: str, name: str) -> bool:
        """The preset list closed on the preset whose family the session runs, its boxes as loaded:
        nothing to load (its Load, answering late on a busy machine, overwrote the next pick's)."""
        preset = self.preset_in_use(key)
        return preset is not None and preset.name == name and not self.sessions.get(key).specs_edited

    def preset_in_use(self, key: str) -> Preset | None:
        """The preset the session's family came from: the first one until a family is loaded,
        none for a loaded family that no preset names."""
        session = self.sessions.get(key)
        return session.preset or (None if session.specs else self.presets[0])

    def loaded_draft(self, key: str, method: str):
        """The session's draft for `method` if it is loaded already (None otherwise: a note never
        loads a model)."""
        return self._loaded(key, method, "draft")

    def loaded_target(self, key: str):
        """The session's target if it is loaded already (None otherwise: an estimate never loads a model)."""
        return self._loaded(key, "ar", "target")

    def _loaded(self, key: str, method: str, role: str):
        try:
            spec = self.specs_for(key, method).get(role)
        except PlaygroundError:
            return None
        return self._model(spec) if spec in self._ready else None

    def models_for(self, key: str, method: str) -> dict:
        """The session's family, for the method's roles."""
        return {role: self._model(spec) for role, spec in self.specs_for(key, method).items()}

    def models_of(self, key: str, loaded: bool = True):
        """method -> the session's models for it (`loaded`: loaded, so that their measured step can
        be read; else their specs only)."""
        pick = self.models_for if loaded else self.specs_for
        return lambda method: pick(key, method)

    def specs_for(self, key: str, method: str) -> dict:
        """The specs of the session's family for the method's roles, without loading them."""
        check_method(method)
        session = self.sessions.get(key)
        if session.specs_edited:
            failed = self._failed_loads.get(key)
            raise PlaygroundError("the model boxes changed since the last Load: " + (
                f"the last Load failed ({failed}); fix the name and press Load, or pick a preset" if failed
                else "press Load to run with those models"))
        specs = self._specs(session)
        needed = METHODS[method].roles
        missing = [role for role in needed if role not in specs]
        if missing:
            raise PlaygroundError(f"{method} needs a {' and a '.join(missing)} model: load a family with one")
        return {role: specs[role] for role in needed}

    def _model(self, spec: str):
        """The loaded model of `spec`; a prompt-lookup draft stays its spec (it has no model)."""
        return spec if spec == NGRAM else self.loader(spec)


def decoder(model: LoadedModel):
    """Token id -> text under the model's tokenizer."""
    return lambda token_id: model.tokenizer.decode([token_id])


def load_family(specs: dict[str, str], loader: Loader, progress=None) -> dict:
    """Load every non-empty role; `progress(fraction, desc=...)` is told before each model. A
    draft of `ngram` (prompt lookup) has no model: it stays its spec."""
    wanted = {role: spec.strip() for role, spec in specs.items() if spec and spec.strip()}
    models = {}
    for i, (role, spec) in enumerate(wanted.items()):
        if progress:
            progress(i / len(wanted), desc=f"loading {role}: {spec}")
        models[role] = spec if role == "draft" and spec == NGRAM else loader(spec)
    return models


def spec_of(model) -> str:
    return model if isinstance(model, str) else model.spec


def runnable_methods(models: dict) -> list[tuple[str, str]]:
    """(label, name) of the methods these models can run: every role present, a shared vocabulary
    unless the method accepts any; with a prompt-lookup draft, the methods that take one."""
    return method_choices(relation(models), set(models), lookup=models.get("draft") == NGRAM,
                          features=is_feature_draft(models.get("draft")))


def relation(models: dict[str, LoadedModel]) -> str | None:
    """'same' if every loaded helper shares the target's vocabulary, 'different' if one does not."""
    if "target" not in models:
        return None
    helpers = [m for role, m in models.items() if role != "target" and m != NGRAM]
    same = all(vocabulary_relation(models["target"].tokenizer, m.tokenizer) == "same" for m in helpers)
    return "same" if same else "different"


def describe_family(models: dict[str, LoadedModel]) -> str:
    """Markdown: each model's device, dtype and weights, the total, and the vocabulary verdict."""
    total = sum(m.memory_bytes for m in {id(m): m for m in models.values() if m != NGRAM}.values())
    summary = f"{total / 2**20:,.0f} MiB of weights in all; {_availability(models)}."
    return "\n".join([*_model_lines(models), "", summary])


def _model_lines(models: dict[str, LoadedModel]) -> list[str]:
    """Markdown list items: each model's device, dtype and weights."""
    return [f"- **{role}** `{NGRAM}`: prompt lookup, no model (it proposes what followed the context's last "
            "tokens where they occurred before)" if m == NGRAM else
            f"- **{role}** `{m.spec}`: {m.device}, {m.dtype}, {m.memory_bytes / 2**20:,.0f} MiB"
            for role, m in models.items()]


def _availability(models: dict[str, LoadedModel]) -> str:
    """Which methods the family can run, in words."""
    vocabularies = relation(models)
    if vocabularies == "different":
        return ("the vocabularies differ: the methods for heterogeneous vocabularies are available, and ar (the "
                "target alone) to compare them with")
    if vocabularies is None:
        return ""
    runnable = {name for _, name in runnable_methods(models)}
    missing = [name for name in METHODS if name not in runnable]
    if not missing:
        return "the models share one vocabulary: every method is available"
    needed = sorted({role for name in missing for role in METHODS[name].roles if role not in models})
    return (f"the models share one vocabulary; {', '.join(missing)} need a {' and a '.join(needed)} model, "
            "so every other method is available")


def build_panel(handlers, status):
    """The model family controls and the method dropdown; returns (method, the load events: Load
    and choosing a preset, which loads its family, the family's controls: the preset, target,
    draft and qualifier, its description)."""
    names, first = [p.name for p in handlers.presets], handlers.presets[0]
    with gr.Accordion("Model family", open=True):
        preset = gr.Dropdown(names, value=names[0], label="preset", elem_id="preset")
        specs = [gr.Textbox(getattr(first, role), label=role, elem_id=f"{role}-spec",
                            info="embedded name, local directory, .gguf file or hub id")
                 for role in ("target", "draft", "qualifier")]
        with gr.Row():
            load = gr.Button("Load", elem_id="load")
            unload = gr.Button("Unload", elem_id="unload")
        family = gr.Markdown(first.description, elem_id="family-info")
    method = Choice(method_choices(), value=DEFAULT_METHOD, label="method", elem_id="method")

    def on_load(target, draft, qualifier, current, request: gr.Request, progress=gr.Progress()):
        return handlers.load(session_key(request), target, draft, qualifier, current, progress)

    def on_pick(name, request: gr.Request):
        return handlers.family.picked(session_key(request), name)

    def on_preset(name, target, draft, qualifier, current, request: gr.Request, progress=gr.Progress()):
        return handlers.family.load_picked(session_key(request), name, target, draft, qualifier, current, progress)

    # Said by the page at once: on a busy machine the last run's "done" stood for seconds after a pick.
    preset.input(None, preset, status, js=PICKED_JS, **PRIVATE)
    # A pick while the last one loads waits for it (by default it was dropped, its boxes filled in
    # and its family never loaded).
    chosen = preset.input(on_pick, preset, [*specs, family], trigger_mode="always_last", **PRIVATE)
    loads = [load.click(on_load, [*specs, method], [status, family, method], api_name="load"),
             chosen.then(on_preset, [preset, *specs, method], [status, family, method], **PRIVATE)]
    for role, spec in zip(("target", "draft", "qualifier"), specs, strict=True):  # typed, or filled by a script
        gr.on([spec.input, spec.change], keyed(partial(handlers.family.edited, role=role)), [spec, preset], status,
              trigger_mode="always_last", **PRIVATE)
    unload.click(keyed(handlers.unload), None, [status, family], api_name="unload")
    return method, loads, [preset, *specs, family]


def _stopped_after(run) -> str:
    """How far the run a Load stopped had gone (a reviewer read only that it stopped): " after 30
    tokens in 1.54 s", or "" before its first tokens."""
    if run is None or not run.stats.tokens:
        return ""
    return f" after {run.stats.tokens} token{'s' * (run.stats.tokens != 1)} in {run.stats.account.clock:.2f} s"
