"""Every decoding method at its default settings against `ar` on the embedded family: each run
paired with an `ar` run of the same prompt (order alternating over repeats), greedy and at 0.7.
`--levers-off sd,csd,...` adds those methods with the drafting levers off, as every method but sd
drafted before the levers moved to the drafter.

    HF_HUB_OFFLINE=1 python -m bench.every_method --out bench/results/every_method

Writes runs.csv and summary.md (median paired speedup with quartiles, acceptance, share of
outputs identical to ar), as bench.speed_levers does.
"""

import statistics

from playground.measure.benchmark import Bench, Setting
from playground.measure.benchmark.command import HETERO_DRAFT
from playground.measure.quality import load_tasks
from playground.methods import METHODS
from playground.methods.draft_levers import OFF
from playground.models.default_family import DEFAULT_FAMILY
from playground.models.loading import load_model

from .helpers import CHAT_PROMPTS, machine_line, paired_parser, summary_line, write_results

REFERENCES = ("ar", "draft-only")


def settings(methods: list[str], levers_off: list[str]) -> list[Setting]:
    return [*(Setting(name) for name in methods), *(Setting(name, dict(OFF)) for name in levers_off)]


def _names(text: str) -> list[str]:
    return [name for name in text.split(",") if name]


def main() -> None:
    parser = paired_parser(__doc__)
    parser.add_argument("--methods", type=_names, default=[name for name in METHODS if name not in REFERENCES],
                        help="comma-separated methods at their defaults (default: every method that drafts)")
    parser.add_argument("--levers-off", type=_names, default=[],
                        help="comma-separated methods to run also with the drafting levers off")
    args = parser.parse_args()
    models = {role: load_model(spec) for role, spec in DEFAULT_FAMILY.items()}
    models["hetero_draft"] = load_model(HETERO_DRAFT)
    tasks = load_tasks(CHAT_PROMPTS)
    lines = [machine_line(f"{len(tasks)} chat prompts x {args.repeats} repeats, {args.max_new_tokens} tokens; every "
                          f"method at its defaults (slem, tli, slrs with {HETERO_DRAFT})"), "",
             "| setting | method/ar (quartiles) | predicted | acceptance | c | T(K+1)/T(1) | identical to ar | "
             "measured / predicted |", "|---|---|---|---|---|---|---|---|"]
    all_rows = []
    for temperature in [float(t) for t in args.temperatures.split(",")]:
        bench = Bench(models, tasks, {"max_new_tokens": args.max_new_tokens, "temperature": temperature},
                      repeats=args.repeats)
        rows = bench.run(settings(args.methods, args.levers_off))
        all_rows += rows
        ar = [r["tokens_per_second"] for r in rows if r["method"] == "ar"]
        lines.append(f"| **temperature {temperature:g}** (ar {statistics.median(ar):.1f} tok/s) | | | | | | | |")
        for label in dict.fromkeys(r["setting"] for r in rows if r["method"] != "ar"):
            lines.append(summary_line(label, [r for r in rows if r["setting"] == label]))
    write_results(args.out, all_rows, lines)


if __name__ == "__main__":
    main()
