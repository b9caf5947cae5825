"""Runs a method to completion: loads the family, formats the prompt, enforces the stop rules,
fills in token text, keeps the statistics, and yields each step as it is produced."""

import json
import math
import time
import unicodedata
from dataclasses import asdict, dataclass, field, fields, replace

import torch

from . import forward_costs, prompt_guard
from .cache import KVRunner
from .config import READ_BY_EVERY_METHOD, RunConfig, unread_options, validate
from .default_family import DEFAULT_FAMILY
from .drafter import draft_setup
from .errors import PlaygroundError
from .limits import current_limits
from .methods import METHODS, Decoding
from .models import LoadedModel, load_model, refuse_empty, vocabulary_relation
from .ngram import NGRAM, PromptLookup
from .policy import refuse_server_path
from .sampling import Sampler
from .stats import Stats
from .step import PairFigures, Step, TokenRecord
from .text import Detokenizer


@dataclass
class Run:
    """A generation in progress or finished: what the CLI prints and the UI renders."""

    method: str
    config: RunConfig
    prompt: str
    models: dict = field(default_factory=dict)
    tokens: list[TokenRecord] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    stats: Stats = field(default_factory=Stats)
    text: str = ""
    finished: bool = False
    stop_reason: str = ""
    notes: list[str] = field(default_factory=list)  # what the user should know, e.g. ignored options

    @property
    def pair(self) -> PairFigures | None:
        """What a heterogeneous-vocabulary method found about the target and draft (else None)."""
        return self.steps[0].pair if self.steps else None

    def recorded_config(self) -> dict:
        """The settings the run ran with: the ones every method reads and its own, as they ran
        (a lever that could not run is off; options the method does not read are left out)."""
        method = METHODS.get(self.method)
        reads = (*READ_BY_EVERY_METHOD, *method.reads) if method else ()
        if self.models.get("draft") == NGRAM:  # a prompt lookup proposes; it draws nothing
            reads = tuple(name for name in reads if name != "draft_sampling")
        return {name: value for name, value in self.config.to_dict().items() if not method or name in reads}

    def to_dict(self, evidence: bool = False) -> dict:
        """CONTRACT: the CLI's JSON object; `evidence` adds each step's checks (step.Evidence), as
        the UI's export does."""
        out = {"method": self.method, "config": {**self.recorded_config(), "models": self.models},
               "text": self.text, "tokens": [t.to_dict() for t in self.tokens],
               "stats": {**self.stats.to_dict(), "stop_reason": self.stop_reason, "notes": self.notes}}
        if evidence:
            out["evidence"] = [[asdict(check) for check in step.evidence] for step in self.steps]
        return out

    def to_json(self, evidence: bool = False, **dumps_options) -> str:
        """The JSON object as text; JSON has no inf or nan, so those numbers are written as null."""
        return json.dumps(_finite_numbers(self.to_dict(evidence)), allow_nan=False, ensure_ascii=False,
                          default=str, **dumps_options)


def _finite_numbers(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite_numbers(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_numbers(item) for item in value]
    return value


def make_config(config: RunConfig | None = None, **options) -> RunConfig:
    """A validated config from a base config and keyword overrides (unknown names refused)."""
    known = {f.name for f in fields(RunConfig)}
    if "lambda" in options:
        options["lambda_"] = options.pop("lambda")
    unknown = sorted(set(options) - known)
    if unknown:
        raise PlaygroundError(f"unknown option(s) {', '.join(unknown)}: see RunConfig for the valid names")
    return validate(replace(config or RunConfig(), **options))


def stream(prompt: str, config: RunConfig | None = None, *, target=None, draft=None,
           qualifier=None, device: str | None = None, dtype: str | None = None,
           device_map: str | None = None, trust_remote_code: bool = False, correction_memory=None, **options):
    """Yield (step, run) after every verification round; `run` accumulates text and stats.

    Models are LoadedModels or specs (embedded name, local dir, .gguf, hub id; None: the embedded
    family, which only completes the embedded target); `draft="ngram"` drafts by prompt lookup,
    with no model (ngram.py), for the methods that take it; `device_map="auto"` spreads a large model
    over the available devices (accelerate). `correction_memory` is the CorrectionMemory that csd
    reads and updates when no `memory` file is named."""
    config = make_config(config, **_with_method_defaults(config, options))
    method = METHODS.get(config.method)
    if method is None:
        raise PlaygroundError(f"unknown method {config.method!r}: choose one of {', '.join(METHODS)}")
    if config.memory:
        refuse_server_path("a correction memory")
    load_options = {"device": device, "dtype": dtype, "device_map": device_map,
                    "trust_remote_code": trust_remote_code}
    models = _load_family(method, {"target": target, "draft": draft, "qualifier": qualifier}, load_options)
    _check_vocabularies(method, models)
    primary = models[method.roles[0]]
    prompt_ids = format_prompt(primary.tokenizer, prompt, config.chat_template, model=primary.model,
                               max_new_tokens=config.max_new_tokens)
    drafting = draft_setup(config, method, models.get("draft"))
    ctx = _decoding(drafting.config, models, prompt_ids, method, drafting.runner)
    if draft == NGRAM:
        ctx.lookup = PromptLookup()
    if correction_memory is not None:
        ctx.state["given_memory"] = correction_memory
    single_step = forward_costs.single_step_seconds(primary.model) if len(method.roles) > 1 else None
    specs = {role: m.spec for role, m in models.items()} | ({"draft": NGRAM} if ctx.lookup else {})
    run = Run(config.method, ctx.config, prompt, models=specs,
              stats=Stats(target_role=method.roles[0], single_step_seconds=single_step),
              notes=[*drafting.notes, *_ignored_note(method, options)])
    for step, run in _drive(method.run(ctx), ctx, run, primary):
        if run.finished and ctx.lookup and not any(s.extra.get("ngram_match") for s in run.steps):
            run.notes.append("the prompt lookup found no earlier occurrence of the context's last two tokens in any "
                             "round: the target decoded alone")
        yield step, run


def _with_method_defaults(config: RunConfig | None, options: dict) -> dict:
    """The options, over the chosen method's own defaults (`Method.defaults`) where the caller
    named no value; a whole RunConfig given is taken as it is."""
    name = options.get("method", RunConfig().method) if config is None else None
    method = METHODS.get(name) if isinstance(name, str) else None  # a bad name is refused by make_config
    return {**method.defaults, **options} if method else options


def _ignored_note(method, options: dict) -> list[str]:
    unread = unread_options(method, ["lambda_" if name == "lambda" else name for name in options])
    return [f"{method.name} does not read {', '.join(unread)}: ignored"] if unread else []


def generate(prompt: str, config: RunConfig | None = None, **kwargs) -> Run:
    """Run to completion and return the Run (text, token records, statistics)."""
    run = None
    for _, run in stream(prompt, config, **kwargs):
        pass
    return run


def _drive(steps, ctx: Decoding, run: Run, primary: LoadedModel):
    detokenizer = Detokenizer(primary.tokenizer)
    stop_ids = eos_ids(primary)
    try:
        yield from _steps_with_text(steps, ctx, run, detokenizer, stop_ids)
    except torch.OutOfMemoryError as error:
        raise PlaygroundError("out of memory during generation: use fewer new tokens, a shorter "
                              "prompt or smaller models (the models stay loaded)") from error
    finally:
        steps.close()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def _steps_with_text(steps, ctx: Decoding, run: Run, detokenizer: Detokenizer, stop_ids: set[int]):
    """The method's steps, cut at EOS and the budget, with token text: new Steps, never changed
    afterwards (the method's own objects are left as it yielded them)."""
    waited = 0.0  # seconds the consumer held this generator at its yields
    for produced in steps:
        kept, hit_eos = _truncate(produced.tokens, stop_ids, ctx.remaining())
        step = replace(produced, tokens=[replace(token, text=detokenizer.push(token.id)) for token in kept])
        ctx.ids.extend(token.id for token in step.tokens)
        run.tokens.extend(step.tokens)
        run.steps.append(step)
        run.stats.add(step, waited)
        run.text += "".join(t.text for t in step.tokens)
        if hit_eos or ctx.remaining() <= 0:
            run.stop_reason = "eos" if hit_eos else "max_new_tokens"
            run.finished = True
        paused = time.perf_counter()
        yield step, run
        waited += time.perf_counter() - paused
        if run.finished:
            return


def _truncate(tokens: list[TokenRecord], stop_ids: set[int], budget: int):
    """Keep tokens up to and including the first EOS, and never more than the budget."""
    kept = tokens[:max(budget, 0)]
    for i, token in enumerate(kept):
        if token.id in stop_ids:
            return kept[:i + 1], True
    return kept, False


def eos_ids(loaded: LoadedModel) -> set[int]:
    ids = {loaded.tokenizer.eos_token_id}
    configured = getattr(loaded.model.generation_config, "eos_token_id", None)
    ids.update(configured if isinstance(configured, list) else [configured])
    return {i for i in ids if i is not None}


def format_prompt(tokenizer, prompt: str, use_chat_template: bool, *, model=None,
                  max_new_tokens: int = 0) -> list[int]:
    """The prompt's ids, its special-token strings kept as text (prompt_guard), refused over the
    token cap; given `model`, also when it leaves the context no room for `max_new_tokens`."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise PlaygroundError("empty prompt: type some text to continue or a question to answer")
    limit = current_limits().max_prompt_chars
    if len(prompt) > limit:
        raise PlaygroundError(f"prompt is {len(prompt)} characters, over the limit of {limit}: shorten it")
    _check_characters(prompt)
    ids = prompt_guard.prompt_ids(tokenizer, prompt, use_chat_template)
    prompt_guard.check_prompt_tokens(len(ids), model, max_new_tokens)
    return ids


def _check_characters(prompt: str) -> None:
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as error:
        raise PlaygroundError(f"prompt is not valid text (broken character at position {error.start}): "
                              "paste it again as plain UTF-8 text") from error
    for position, char in enumerate(prompt):
        if unicodedata.category(char) == "Cc" and char not in "\n\t\r":
            raise PlaygroundError(f"prompt contains the control character U+{ord(char):04X} at position "
                                  f"{position}: remove it")


def _load_family(method, given: dict, load_options: dict) -> dict[str, LoadedModel]:
    """The method's models; a prompt-lookup draft (NGRAM) is none, for the methods that take one."""
    if given["draft"] == NGRAM and not method.drafts_by_lookup:
        takes = ", ".join(m.name for m in METHODS.values() if m.drafts_by_lookup)
        raise PlaygroundError(f"{method.name} cannot draft by prompt lookup (draft {NGRAM!r}): use one of {takes}, "
                              "or a draft model")
    models = {}
    for role in ("target", "draft", "qualifier"):
        if role in method.roles and not (role == "draft" and given[role] == NGRAM):
            spec = _family_spec(method, role, given)
            models[role] = spec if isinstance(spec, LoadedModel) else load_model(spec, **load_options)
    return models


def _family_spec(method, role: str, given: dict):
    """The given model for `role`; an omitted one is the embedded family's, but only beside the
    embedded target (another target with the embedded draft or qualifier is a mix-up)."""
    spec = given[role]
    refuse_empty(role, spec)
    if spec is not None:
        return spec
    target = getattr(given["target"], "spec", given["target"])
    if role != "target" and target not in (None, DEFAULT_FAMILY["target"]):
        raise PlaygroundError(f"{method.name} needs a {role} model: pass one for target {target!r} (--{role})")
    return DEFAULT_FAMILY[role]


def _check_vocabularies(method, models: dict[str, LoadedModel]) -> None:
    if method.vocabulary != "same" or "target" not in models:
        return
    for role in ("draft", "qualifier"):
        if role in models and vocabulary_relation(models["target"].tokenizer, models[role].tokenizer) != "same":
            raise PlaygroundError(
                f"{method.name} needs a {role} that shares the target's vocabulary, but "
                f"{models[role].spec!r} and {models['target'].spec!r} tokenize differently: "
                "use a heterogeneous method (slem, tli or slrs) or a same-family draft")


def _decoding(config: RunConfig, models: dict[str, LoadedModel], prompt_ids: list[int], method,
              draft_runner: KVRunner | None) -> Decoding:
    """The run's context: `config` as it runs, the draft with its levers applied."""
    runners = {role: draft_runner if role == "draft" else KVRunner(m.model, name=role, tokens=len(m.tokenizer))
               for role, m in models.items()}
    device = next(iter(models.values())).model.device
    sampler = Sampler(config.temperature, config.top_k, config.top_p, config.seed, device=device)
    return Decoding(
        config=config, sampler=sampler, target=runners.get("target"), ids=list(prompt_ids),
        prompt_length=len(prompt_ids), draft=runners.get("draft"), qualifier=runners.get("qualifier"),
        target_tokenizer=models["target"].tokenizer if "target" in models else None,
        draft_tokenizer=models["draft"].tokenizer if "draft" in models else None,
        state={"model_specs": {role: m.spec for role, m in models.items()}})  # e.g. CSD's memory pair
