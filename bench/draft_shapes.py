"""sd's draft shapes against `ar` on the embedded family: the chain (`tree_width` 1), token trees of
several widths, prompt-lookup drafts (`draft="ngram"`) and transformers' own prompt lookup
(`hf-lookup`, K = 4); every run paired with an `ar` run of the same prompt (order alternating over
repeats), on chat, code and edit prompts (answers that repeat the prompt), greedy and at 0.7.
It also counts each shape's host syncs per round (host_syncs.py), on one chat prompt.

    HF_HUB_OFFLINE=1 python -m bench.draft_shapes --out bench/results/draft_shapes
"""

import statistics

from playground.engine import stream
from playground.measure.benchmark import Bench, Setting
from playground.measure.host_syncs import syncs_per_round
from playground.measure.quality import load_tasks
from playground.models.default_family import DEFAULT_FAMILY
from playground.models.loading import load_model

from .helpers import CHAT_PROMPTS, PROMPT_SETS, machine_line, measured_lines, paired_parser, table_head, write_results


def shapes(widths: list[int]) -> dict[str, list[Setting]]:
    """The settings each draft runs: the model draft as a chain and as trees; the lookup both ways."""
    return {"model draft": [Setting("sd", {"tree_width": 1}), *(Setting("sd", {"tree_width": w}) for w in widths)],
            "prompt lookup": [Setting("sd"), Setting("hf-lookup", {"candidates": 4})]}


def host_sync_lines(target, draft, prompt: str, widths: list[int], tokens: int) -> list[str]:
    """Each shape's host syncs per round, with the confidence stop (the default) and without it."""
    lines = ["", "Host syncs per round (median, mean, max; one chat prompt, t = 0.7; engine included; "
             "'no stop': draft_confidence 0, blocks of fixed length):", ""]
    drafts = [("chain", {"draft": draft, "tree_width": 1}),
              *((f"tree {w}", {"draft": draft, "tree_width": w}) for w in widths)]
    for label, options in [*drafts, *((f"{label}, no stop", {**options, "draft_confidence": 0.0})
                                      for label, options in drafts), ("ngram", {"draft": "ngram"})]:
        per_round, kinds = syncs_per_round(step for step, _ in stream(
            prompt, method="sd", target=target, max_new_tokens=tokens, temperature=0.7, **options))
        lines.append(f"- {label}: {statistics.median(per_round):g}, {statistics.mean(per_round):.2f}, "
                     f"{max(per_round)} ({dict(kinds)})")
    return lines


def main() -> None:
    parser = paired_parser(__doc__)
    parser.add_argument("--widths", default="3", help="comma-separated tree widths beside the chain")
    parser.add_argument("--prompts", default="chat,code,edit", help=f"prompt sets: {', '.join(PROMPT_SETS)}")
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",") if w]
    target = load_model(DEFAULT_FAMILY["target"])
    drafts = {"model draft": load_model(DEFAULT_FAMILY["draft"]), "prompt lookup": "ngram"}
    lines = [machine_line(f"{args.repeats} repeats, {args.max_new_tokens} tokens"), "",
             *table_head("prompts, draft: setting")]
    all_rows = []
    for prompt_set in args.prompts.split(","):
        tasks = load_tasks(PROMPT_SETS[prompt_set])
        for temperature in [float(t) for t in args.temperatures.split(",")]:
            for name, settings in shapes(widths).items():
                bench = Bench({"target": target, "draft": drafts[name]}, tasks,
                              {"max_new_tokens": args.max_new_tokens, "temperature": temperature}, repeats=args.repeats)
                rows, measured = measured_lines(bench, settings, f"{prompt_set}, t={temperature:g}, {name}: ")
                all_rows += rows
                lines += measured
    lines += host_sync_lines(target, drafts["model draft"], load_tasks(CHAT_PROMPTS)[0].prompt, widths,
                             args.max_new_tokens)
    write_results(args.out, all_rows, lines)


if __name__ == "__main__":
    main()
