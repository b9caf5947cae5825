"""The bench's machinery: paired measurement of each setting against `ar`, one row per run.

Each row has the columns of `COLUMNS` (runs.csv):
  setting              the setting's label, e.g. "fsd K=5 tau=0.3" ("ar" for the reference runs)
  method               METHODS name, "fsd-random", "hf-assisted", "hf-universal", "hf-generate" or "hf-lookup"
  candidates           K (empty for ar)
  tau                  the method's threshold (tau; tau_t for psd), empty if it has none
  random_accept        acceptance probability of the fsd-random control, else empty
  prompt_id, repeat    the task's id and the 0-based repeat index
  tokens, seconds      tokens generated and wall-clock seconds of the call (prefill included)
  tokens_per_second    tokens / seconds
  ar_tokens_per_second tokens/s of the ar run paired with this one (ar rows: their own)
  speedup              tokens_per_second / ar_tokens_per_second (ar rows: 1)
  acceptance_rate      accepted / drafted candidates (ours only)
  candidate_acceptance accepted / examined candidates (those up to each block's first rejection)
  mean_acceptance_length  tokens per target forward, bonus included (ours only)
  expected_speedup     Leviathan's Theorem 3.8 with the run's tokens per drafted block, c and verify_cost
  cost_ratio           Leviathan's c: seconds per draft forward over the target's one-token step
                       (the typical step's: the median over the run's steps)
  verify_cost          seconds per verification pass over that one-token step (also the median)
  share_draft, share_qualifier, share_target, share_rescued   token origin shares
  exact_match          1 if the output equals the target-only (ar) output for the prompt
  first_divergence     first token position where it differs from that output (empty if equal)
  log_likelihood       the target's mean log-probability per generated token
  correct              1/0 from the answer check (empty when the prompt has no answers)
  error                the exception, when a run failed (then the measures are empty)
"""

import time
from dataclasses import dataclass, replace

from ...decoding import int8_draft
from ...decoding.stats import Stats
from ...decoding.step import ORIGINS
from ...deploy.prompt_guard import format_prompt
from ...engine import generate
from ...methods import METHODS
from ...models.loading import LoadedModel
from ..baseline import assisted_generate
from ..quality import Task, agreement, is_correct, mean_log_likelihood
from .sweep import BASELINES, RANDOM_CONTROL, Setting, random_controls

STATS_COLUMNS = ["acceptance_rate", "candidate_acceptance", "mean_acceptance_length", "expected_speedup",
                 "cost_ratio", "verify_cost", *(f"share_{o}" for o in ORIGINS)]  # from our runs' Stats
COLUMNS = ["setting", "method", "candidates", "tau", "random_accept", "prompt_id", "repeat", "tokens",
           "seconds", "tokens_per_second", "ar_tokens_per_second", "speedup", *STATS_COLUMNS,
           "exact_match", "first_divergence", "log_likelihood", "correct", "error"]


@dataclass
class Outcome:
    """What one call produced, whichever implementation ran it."""

    ids: list[int]
    seconds: float
    stats: Stats | None = None  # our methods' statistics; None for the baselines and failed runs
    error: str = ""

    @property
    def tokens_per_second(self) -> float | None:
        return len(self.ids) / self.seconds if self.seconds and self.ids else None


class Bench:
    """Runs settings over tasks, pairing every run with an `ar` run of the same prompt."""

    def __init__(self, models: dict[str, LoadedModel], tasks: list[Task], options: dict, repeats: int = 1,
                 method_options: dict[str, dict] | None = None):
        """`options`: RunConfig values for every run; `method_options`: per-method defaults
        (a family preset's recommended settings), overridden by each setting's own values."""
        self.models, self.tasks, self.options, self.repeats = models, tasks, options, repeats
        self.method_options = method_options or {}
        self.target = models["target"]
        self.prompt_ids = {t.id: format_prompt(self.target.tokenizer, t.prompt, options.get("chat_template", True))
                           for t in tasks}
        # Prompt i runs with seed + i (every method alike): random choices, such as fsd-random's
        # acceptances, are then independent across prompts instead of one sequence replayed.
        self.seeds = {t.id: options.get("seed", 0) + i for i, t in enumerate(tasks)}
        self.references: dict[str, list[int]] = {}  # task id -> the first ar output
        self._likelihoods: dict[tuple, float | None] = {}

    def run(self, settings: list[Setting], progress=None) -> list[dict]:
        rows = []
        for setting in settings:
            for repeat in range(self.repeats):
                for task in self.tasks:
                    rows.extend(self.measure_pair(setting, task, repeat))
                    if progress is not None:
                        progress.update(1)
        return rows

    def measure_pair(self, setting: Setting, task: Task, repeat: int) -> list[dict]:
        """ar and the method back to back; ar first on even repeats, second on odd ones."""
        ar_setting = Setting("ar")
        order = [ar_setting, setting] if repeat % 2 == 0 else [setting, ar_setting]
        outcomes = {s.method: self.call(s, task) for s in order}
        ar = outcomes["ar"]
        self.references.setdefault(task.id, ar.ids)
        return [self.row(ar_setting, task, repeat, ar, ar),
                self.row(setting, task, repeat, outcomes[setting.method], ar)]

    def call(self, setting: Setting, task: Task) -> Outcome:
        try:
            return self._call(setting, task)
        except Exception as error:  # noqa: BLE001  (a failing baseline is a result, not a crash)
            return Outcome([], 0.0, error=f"{type(error).__name__}: {error}".splitlines()[0])

    def _call(self, setting: Setting, task: Task) -> Outcome:
        method = "fsd" if setting.method == RANDOM_CONTROL else setting.method
        options = {**self.method_options.get(method, {}), **self.options, **setting.options,
                   "seed": self.seeds[task.id]}
        if setting.method in BASELINES:
            draft = {"hf-assisted": self.models.get("draft"), "hf-universal": self.models.get("hetero_draft"),
                     "hf-generate": None, "hf-lookup": None}[setting.method]
            if draft is not None and options.get("draft_int8"):
                draft = replace(draft, model=int8_draft.int8_twin(draft.model))  # the same draft as ours
            sampling = {k: options[k] for k in ("temperature", "top_k", "top_p", "seed") if k in options}
            run = assisted_generate(self.target, draft, self.prompt_ids[task.id],
                                    candidates=options.get("candidates", 0),
                                    max_new_tokens=options["max_new_tokens"],
                                    confidence=options.get("draft_confidence", 0.0),
                                    prompt_lookup=setting.method == "hf-lookup", **sampling)
            return Outcome(run.ids, run.seconds)
        start = time.perf_counter()
        run = generate(task.prompt, **self._roles(method, setting.draft), **{**options, "method": method})
        return Outcome([t.id for t in run.tokens], time.perf_counter() - start, run.stats)

    def _roles(self, method: str, draft: str | None = None) -> dict:
        spec = METHODS[method]
        draft = draft or ("hetero_draft" if spec.vocabulary == "any" and "hetero_draft" in self.models else "draft")
        roles = {"target": self.models.get("target"), "draft": self.models.get(draft),
                 "qualifier": self.models.get("qualifier")}
        return {role: roles[role] for role in spec.roles}

    def row(self, setting: Setting, task: Task, repeat: int, outcome: Outcome, ar: Outcome) -> dict:
        matched, diverged = agreement(outcome.ids, self.references[task.id])
        tps, ar_tps = outcome.tokens_per_second, ar.tokens_per_second
        failed = bool(outcome.error)
        return {
            "setting": setting.label, "method": setting.method,
            "candidates": setting.options.get("candidates"), "tau": setting.tau,
            "random_accept": setting.options.get("random_accept"), "prompt_id": task.id, "repeat": repeat,
            "tokens": len(outcome.ids), "seconds": outcome.seconds, "tokens_per_second": tps,
            "ar_tokens_per_second": ar_tps, "speedup": tps / ar_tps if tps and ar_tps else None,
            **stats_columns(outcome.stats),
            "exact_match": None if failed else int(matched), "first_divergence": None if failed else diverged,
            "log_likelihood": None if failed else self.log_likelihood(task, outcome.ids),
            "correct": None if failed else _as_int(is_correct(self.target.tokenizer.decode(outcome.ids), task.answers)),
            "error": outcome.error,
        }

    def log_likelihood(self, task: Task, ids: list[int]) -> float | None:
        key = (task.id, tuple(ids))
        if key not in self._likelihoods:
            self._likelihoods[key] = mean_log_likelihood(self.target.model, self.prompt_ids[task.id], ids)
        return self._likelihoods[key]


def stats_columns(stats: Stats | None) -> dict:
    """The row's STATS_COLUMNS: read from a run's Stats, empty without one."""
    if stats is None:
        return dict.fromkeys(STATS_COLUMNS)
    return {"acceptance_rate": stats.acceptance_rate, "candidate_acceptance": stats.candidate_acceptance,
            "mean_acceptance_length": stats.mean_acceptance_length,
            "expected_speedup": stats.account.predicted_speedup(),
            "cost_ratio": stats.account.cost_ratio(), "verify_cost": stats.account.verify_cost(),
            **{f"share_{origin}": share for origin, share in stats.origin_shares.items()}}


def _as_int(value: bool | None) -> int | None:
    return None if value is None else int(value)


def run_bench(bench: Bench, settings: list[Setting], with_controls: bool) -> list[dict]:
    """All settings, then the random-acceptance controls matched to the fsd results."""
    from tqdm.auto import tqdm  # noqa: PLC0415

    per_setting = bench.repeats * len(bench.tasks)
    with tqdm(total=len(settings) * per_setting, desc="bench", unit="pair") as progress:
        rows = bench.run(settings, progress)
        controls = random_controls(settings, rows) if with_controls else []
        progress.total += len(controls) * per_setting
        rows += bench.run(controls, progress)
    return rows


