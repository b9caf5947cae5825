"""Every method that drafts with a model, on the chain (`tree_width` 1) and on token trees, through
the one verification walk: each run paired with an `ar` run of the same prompt (order alternating
over repeats), at each method's default threshold, on chat and edit prompts, greedy and at 0.7;
acceptance and agreement with `ar` beside the speedup. Then each method's host syncs per round
with fixed blocks (draft_confidence 0), chain and tree, on one chat prompt.

    HF_HUB_OFFLINE=1 python -m bench.method_shapes --out bench/results/method_shapes
"""

import statistics

from playground.engine import stream
from playground.measure.benchmark import Bench, Setting
from playground.measure.host_syncs import syncs_per_round
from playground.measure.quality import load_tasks
from playground.models.default_family import DEFAULT_FAMILY
from playground.models.loading import load_model

from .helpers import CHAT_PROMPTS, PROMPT_SETS, machine_line, measured_lines, paired_parser, table_head, write_results


def host_sync_lines(models: dict, prompt: str, methods: list[str], widths: list[int], tokens: int) -> list[str]:
    lines = ["", "Host syncs per round (median, mean, max; one chat prompt, t = 0.7, draft_confidence 0; "
             "engine included):", ""]
    for method in methods:
        for width in widths:
            roles = {role: models[role] for role in ("target", "draft", "qualifier")
                     if role != "qualifier" or method.startswith("psd")}
            per_round, kinds = syncs_per_round(step for step, _ in stream(
                prompt, method=method, max_new_tokens=tokens, temperature=0.7, draft_confidence=0.0,
                tree_width=width, **roles))
            lines.append(f"- {method}, tree {width}: {statistics.median(per_round):g}, "
                         f"{statistics.mean(per_round):.2f}, {max(per_round)} ({dict(kinds)})")
    return lines


def main() -> None:
    parser = paired_parser(__doc__)
    parser.add_argument("--methods", default="sd,csd,fsd,psd-f,psd-a,tli")
    parser.add_argument("--widths", default="1,2,4", help="tree widths (1: the chain)")
    parser.add_argument("--prompts", default="chat,edit", help=f"prompt sets: {', '.join(PROMPT_SETS)}")
    args = parser.parse_args()
    methods, widths = args.methods.split(","), [int(w) for w in args.widths.split(",")]
    models = {role: load_model(DEFAULT_FAMILY[role]) for role in ("target", "draft", "qualifier")}
    lines = [machine_line(f"{args.repeats} repeats, {args.max_new_tokens} tokens, each method's defaults"), "",
             *table_head("prompts, method: tree width")]
    all_rows = []
    for prompt_set in args.prompts.split(","):
        tasks = load_tasks(PROMPT_SETS[prompt_set])
        for temperature in [float(t) for t in args.temperatures.split(",")]:
            bench = Bench(models, tasks, {"max_new_tokens": args.max_new_tokens, "temperature": temperature},
                          repeats=args.repeats)
            settings = [Setting(method, {"tree_width": width}) for method in methods for width in widths]
            rows, measured = measured_lines(bench, settings, f"{prompt_set}, t={temperature:g}: ")
            all_rows += rows
            lines += measured
    lines += host_sync_lines(models, load_tasks(CHAT_PROMPTS)[0].prompt, methods, [1, 2], args.max_new_tokens)
    write_results(args.out, all_rows, lines)


if __name__ == "__main__":
    main()
