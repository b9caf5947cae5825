"""Runs a method to completion: loads the family (family.py), formats the prompt (prompt_guard),
enforces the stop rules, fills in token text, keeps the statistics, and yields each step of the
run record (run_record.py) as it is produced."""

import time
from dataclasses import fields, replace

import torch

from .config import RunConfig, unread_options, validate
from .decoding.cache import KVRunner
from .decoding.ngram import NGRAM, PromptLookup
from .decoding.sampling import Sampler
from .decoding.speed import forward_costs
from .decoding.speed.other_programs import OtherPrograms
from .decoding.speed.speed_account import RECENT_STEP_SECONDS, Clock
from .decoding.stats import Stats
from .decoding.step import TokenRecord
from .decoding.text import Detokenizer
from .deploy import prompt_guard
from .errors import PlaygroundError
from .family import check_vocabularies, load_family
from .methods import METHODS, Decoding
from .methods.draft_levers import draft_setup
from .models.loading import LoadedModel
from .models.policy import refuse_server_path
from .run_record import Run


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
    models = load_family(method, {"target": target, "draft": draft, "qualifier": qualifier}, load_options)
    check_vocabularies(method, models)
    primary = models[method.roles[0]]
    prompt_ids = prompt_guard.format_prompt(primary.tokenizer, prompt, config.chat_template, model=primary.model,
                               max_new_tokens=config.max_new_tokens)
    preparing = Clock()
    drafting = draft_setup(config, method, models.get("draft"), models.get("target"))
    ctx = _decoding(drafting.config, models, prompt_ids, method, drafting.runner, drafting.target_runner)
    if draft == NGRAM:
        ctx.lookup = PromptLookup()
    if correction_memory is not None:
        ctx.state["given_memory"] = correction_memory
    specs = {role: m.spec for role, m in models.items()} | ({"draft": NGRAM} if ctx.lookup else {})
    run = Run(config.method, ctx.config, prompt, models=specs,
              stats=Stats(target_role=method.roles[0]),
              notes=[*drafting.notes, *_ignored_note(method, options)])
    run.stats.account.draft_prepared = preparing.read()[0]
    drafts = len(method.roles) > 1  # a run of one model (ar) is its own reference: its passes are T(1)
    began = time.monotonic()
    if drafts:
        _take_last_ar_run(run.stats.account, primary.model)
    for step, run in _drive(method.run(ctx), ctx, run, primary):
        if run.finished and ctx.lookup and not any(s.ngram_match for s in run.steps):
            run.notes.append("the prompt lookup found no earlier occurrence of the context's last two tokens in any "
                             "round: the target decoded alone")
        if run.finished and not drafts:
            account = run.stats.account
            forward_costs.record_ar_run(primary.model, forward_costs.ArRun(
                began, account.host_per_token(), tuple((timing.wall, timing.cpu) for timing in account.reference)))
        yield step, run


def _take_last_ar_run(account, model) -> None:
    """What a drafting run's T(1) reads of the runs before it (docs/speed.md): the one-token passes of
    the last `ar` run of the two minutes before, all of them where its thread had its core (as its
    panel gave their mean: a reviewer read 78.8 ms there and "73.6 ms on average" beside the next sd),
    and what it spent per token besides them; with none, the target's one-token passes of those
    minutes. Passes of an earlier `ar` run too had set a lecturer's second sd at 1.28x beside tokens/s
    1.48x the `ar` run just before it."""
    last = forward_costs.last_ar_run(model, RECENT_STEP_SECONDS)
    if last is None:
        account.take_recent_steps(forward_costs.recent_passes(model, 1, within=RECENT_STEP_SECONDS))
    elif last.host is not None:
        account.recent_steps, account.ar_host = [wall for wall, _ in last.steps], last.host
    else:  # other work took its core: the passes that had theirs, if enough (SpeedAccount.take_recent_steps)
        account.take_recent_steps(list(last.steps))


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
    clock = Clock()  # the decoder's own time in this round
    besides = OtherPrograms()
    for produced in steps:
        kept, hit_eos = _truncate(produced.tokens, stop_ids, ctx.remaining())
        step = replace(produced, tokens=[replace(token, text=detokenizer.push(token.id)) for token in kept])
        ctx.ids.extend(token.id for token in step.tokens)
        run.tokens.extend(step.tokens)
        run.steps.append(step)
        run.text += "".join(t.text for t in step.tokens)
        if hit_eos or ctx.remaining() <= 0:
            run.stop_reason = "eos" if hit_eos else "max_new_tokens"
            run.finished = True
        _, cpu = clock.read()
        account = run.stats.account
        if run.finished:
            account.besides = besides.shares()
        account.take_own_pass(ctx.target, step)
        account.time_step(ctx.target, ctx.ids, starting=False, finished=run.finished)
        run.stats.add(step, waited, cpu)
        paused = time.perf_counter()
        yield step, run
        waited += time.perf_counter() - paused
        if run.finished:
            return
        account.time_step(ctx.target, ctx.ids, starting=True)
        clock = Clock()


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


def _decoding(config: RunConfig, models: dict[str, LoadedModel], prompt_ids: list[int], method,
              draft_runner, target_runner: KVRunner | None = None) -> Decoding:
    """The run's context: `config` as it runs, the draft with its levers applied (a feature
    draft's with the target runner that keeps its features)."""
    given = {"draft": draft_runner, "target": target_runner}
    runners = {role: given.get(role) or KVRunner(m.model, name=role, tokens=len(m.tokenizer))
               for role, m in models.items()}
    device = next(iter(models.values())).model.device
    sampler = Sampler(config.temperature, config.top_k, config.top_p, config.seed, device=device)
    return Decoding(
        config=config, sampler=sampler, target=runners.get("target"), ids=list(prompt_ids),
        prompt_length=len(prompt_ids), draft=runners.get("draft"), qualifier=runners.get("qualifier"),
        target_tokenizer=models["target"].tokenizer if "target" in models else None,
        draft_tokenizer=models["draft"].tokenizer if "draft" in models else None,
        state={"model_specs": {role: m.spec for role, m in models.items()}})  # e.g. CSD's memory pair
