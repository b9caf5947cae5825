"""Count the tokens of the embedded target's own answers: the draft's pruned output layer
(`--draft-vocab N`, FR-Spec) scores the N most frequent of them.

    HF_HUB_OFFLINE=1 python scripts/count_draft_vocab.py --threads 1

Writes `assets/embedded/smollm2-token-frequencies.json`: token ids, most frequent first, with their
counts over the answers to the 640 training prompts of `build_embedded.py` (the first half greedy,
the rest sampled), and the share of the held-out answers each list length covers.
"""

import argparse
import collections
import json
import pathlib

import torch

from build_embedded import MAX_ANSWER_TOKENS, PROMPTS, SEED, answered, load_prepared, seed_everything
from distill_prompts import HELD_OUT, training_prompts
from playground import embedded
from playground.agreement import generate_answers
from playground.draft_vocab import FREQUENCY_FILE
from playground.prepacked import prepack_linears

LENGTHS = (1024, 2048, 4096, 8192, 16384)


def coverage(ranked: list[int], answers: list[list[int]], length: int) -> float:
    kept = set(ranked[:length])
    tokens = [t for answer in answers for t in answer]
    return sum(t in kept for t in tokens) / len(tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work-dir", type=pathlib.Path, default=embedded.cache_dir().parent / "build-embedded")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    seed_everything(SEED)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    embedded.prepare([embedded.DEFAULT_TARGET])
    target, tokenizer = load_prepared(embedded.DEFAULT_TARGET)
    prepack_linears(target)
    prompts = training_prompts(PROMPTS, SEED)
    examples = answered(target, tokenizer, prompts, args.work_dir / f"answers-{PROMPTS}.pt")
    counts = collections.Counter(t for _, answer in examples for t in answer)
    ranked = sorted(counts, key=lambda t: (-counts[t], t))
    held_out = [answer for _, answer in generate_answers(target, tokenizer, HELD_OUT, MAX_ANSWER_TOKENS)]
    record = {
        "source": f"the target's answers to the {PROMPTS} training prompts of scripts/build_embedded.py "
                  f"(seed {SEED}, <= {MAX_ANSWER_TOKENS} tokens, first half greedy, rest sampled)",
        "answer_tokens": sum(counts.values()),
        "held_out_coverage": {str(n): round(coverage(ranked, held_out, n), 4) for n in LENGTHS},
        "token_ids": ranked,
        "counts": [counts[t] for t in ranked],
    }
    FREQUENCY_FILE.write_text(json.dumps(record) + "\n")
    print(json.dumps({k: record[k] for k in ("answer_tokens", "held_out_coverage")}, indent=2))


if __name__ == "__main__":
    main()
