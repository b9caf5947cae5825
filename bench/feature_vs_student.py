"""sd drafting with the embedded feature draft (EAGLE-3) against sd drafting with the 5-layer
student, on the chat prompts: every run paired with an `ar` run of the same prompt (order
alternating over repeats), greedy and at 0.7, in one process.

    HF_HUB_OFFLINE=1 python -m bench.feature_vs_student --out bench/results/feature_vs_student

Writes runs.csv and summary.md (median paired speedup with quartiles, acceptance, c, the
verification pass's cost, the share of outputs identical to `ar`).
"""

from playground.measure.benchmark import Bench, Setting
from playground.measure.quality import load_tasks
from playground.models.default_family import DEFAULT_FAMILY, FEATURE_DRAFT
from playground.models.loading import load_model

from .helpers import CHAT_PROMPTS, machine_line, measured_lines, paired_parser, table_head, write_results

SETTINGS = [Setting("sd"), Setting("sd", draft="feature_draft"),
            Setting("sd", {"tree_width": 1, "candidates": 5}, draft="feature_draft")]


def main() -> None:
    args = paired_parser(__doc__).parse_args()
    models = {"target": load_model(DEFAULT_FAMILY["target"]), "draft": load_model(DEFAULT_FAMILY["draft"]),
              "feature_draft": load_model(FEATURE_DRAFT)}
    tasks = load_tasks(CHAT_PROMPTS)
    lines = [machine_line(f"{len(tasks)} chat prompts x {args.repeats} repeats, {args.max_new_tokens} tokens; sd at "
                          "its defaults with the student (draft) and with the feature draft"), "",
             *table_head("setting")]
    rows = []
    for temperature in [float(t) for t in args.temperatures.split(",")]:
        bench = Bench(models, tasks, {"max_new_tokens": args.max_new_tokens, "temperature": temperature},
                      repeats=args.repeats)
        measured, summary = measured_lines(bench, SETTINGS, f"t={temperature:g}: ")
        rows += measured
        lines += summary
    write_results(args.out, rows, lines)


if __name__ == "__main__":
    main()
