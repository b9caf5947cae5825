"""Benchmark: every method against the target alone, over one prompt set.

For each setting (method x candidate length x threshold) and each prompt, `ar` and the method run
back to back, and the order alternates per repeat, so that machine drift (other jobs, heat) hits
both sides of each ratio alike. Speedup is the median of these paired ratios, never a ratio of
averages taken at different times. Methods come from `METHODS` by name, so a new method is
benchmarked as soon as it is registered. Four names are the bench's own:
`hf-assisted` (transformers' `generate(assistant_model=...)` with the same draft and K, see
`playground.measure.baseline`), `hf-universal` (the same with `assistant_tokenizer=`, on the
heterogeneous draft), `hf-generate` (transformers' `generate` on the target alone: our `ar`
against the library's own loop) and `hf-lookup` (its prompt-lookup decoding, K tokens: our
`draft="ngram"` against the library's). Passing `fsd` also runs its random-acceptance control `fsd-random`
(seed 000, Figure 6): fsd with `random_accept` set to the probability with which each fsd
setting accepted an examined candidate (`candidate_acceptance`), so the draft shares match.

Outputs in --out: `runs.csv` (one row per run), `summary.md`, `summary.csv`, and
plotly charts (`accuracy_vs_speed.html`, `agreement_vs_speed.html`, `random_control.html`,
`speedup_vs_candidates.html`); `runner` documents the columns of runs.csv.

Modules, each importing only those listed after it: `cli` (the `bench` subcommand) uses `report`
(summary, CSV, Markdown; it draws with `charts`) and `runner` (paired runs); `runner` and `charts`
use `settings` (what is swept).
"""

from .command import register
from .paired_runs import COLUMNS, Bench, Outcome, run_bench
from .summary import machine_info, paired_speedups, spread, summarize, write_csv, write_report
from .sweep import BASELINES, RANDOM_CONTROL, Setting, expand_settings, random_controls

__all__ = ["BASELINES", "COLUMNS", "RANDOM_CONTROL", "Bench", "Outcome", "Setting", "expand_settings", "machine_info",
           "paired_speedups", "random_controls", "register", "run_bench", "spread", "summarize", "write_csv",
           "write_report"]
