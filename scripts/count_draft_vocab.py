"""Rank the embedded target's tokens by how often its own answers use them: the pruned draft head
(`--draft-vocab N`, FR-Spec) keeps the N most frequent.

    HF_HUB_OFFLINE=1 python scripts/count_draft_vocab.py [--prompts 640]

Writes `assets/embedded/smollm2-token-ranking.json`: token ids, most frequent first (tokens never
seen follow in id order), counted over the target's answers to the first --prompts training
prompts of `build_embedded.py` (the first half greedy, the rest sampled; the held-out prompts
excluded), and the share of the held-out answers that the first N ids cover, for this ranking
and for plain id order. The shipped file counts the first 192 prompts (about 20 minutes here).
"""

import argparse
import collections
import json

import torch
from distill_prompts import HELD_OUT, training_prompts
from embedded_recipe.measure import load_prepared
from embedded_recipe.settings import MAX_ANSWER_TOKENS, PROMPTS, SEED
from transformers import set_seed

from playground.decoding.draft_vocab import RANKING_FILE, vocabulary_digest
from playground.decoding.prepacked import prepack_linears
from playground.measure.agreement import generate_answers
from playground.models import embedded

LENGTHS = (2048, 4096, 8192, 16384)


def coverage(ranked: list[int], answers: list[list[int]], length: int) -> float:
    kept = set(ranked[:length])
    tokens = [t for answer in answers for t in answer]
    return round(sum(t in kept for t in tokens) / len(tokens), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=PROMPTS, help="training prompts to answer (at most %(default)s)")
    count = min(parser.parse_args().prompts, PROMPTS)
    set_seed(SEED)
    embedded.prepare([embedded.DEFAULT_TARGET])
    target, tokenizer = load_prepared(embedded.DEFAULT_TARGET)
    prepack_linears(target)
    prompts = training_prompts(PROMPTS, SEED)[:count]
    half = len(prompts) // 2
    answers = (generate_answers(target, tokenizer, prompts[:half], MAX_ANSWER_TOKENS)
               + generate_answers(target, tokenizer, prompts[half:], MAX_ANSWER_TOKENS, sample=True))
    counts = collections.Counter(t for _, answer in answers for t in answer)
    vocab_size = target.config.vocab_size
    ranked = sorted(counts, key=lambda t: (-counts[t], t))
    ranked += [t for t in range(vocab_size) if t not in counts]
    held_out = [answer for _, answer in generate_answers(target, tokenizer, HELD_OUT, MAX_ANSWER_TOKENS)]
    record = {
        "source": f"the target's answers to the first {count} training prompts of scripts/build_embedded.py "
                  f"(seed {SEED}, <= {MAX_ANSWER_TOKENS} tokens, first half greedy, rest sampled)",
        "vocab_size": vocab_size,
        "vocabulary": vocabulary_digest(tokenizer),
        "answer_tokens": sum(counts.values()),
        "distinct_tokens": len(counts),
        "held_out_coverage": {str(n): coverage(ranked, held_out, n) for n in LENGTHS},
        "held_out_coverage_by_id": {str(n): coverage(list(range(vocab_size)), held_out, n) for n in LENGTHS},
        "token_ids": ranked,
    }
    RANKING_FILE.write_text(json.dumps(record) + "\n")
    print(json.dumps({k: v for k, v in record.items() if k != "token_ids"}, indent=2))


if __name__ == "__main__":
    torch.set_num_threads(2)
    main()
