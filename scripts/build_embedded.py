"""Rebuild the embedded draft, qualifier, byte drafter and BPE drafter from the embedded target (seeded, CPU).

    HF_HUB_OFFLINE=1 python scripts/build_embedded.py            # writes assets/embedded/*

1. Generate the target's chat answers to templated prompts and to user questions the target writes
   itself (batched, left padding; half greedy, half sampled at temperature 0.7): the on-policy
   data DistillSpec recommends.
2. Record the target's top-k log-probabilities at every answer position.
3. Train the draft and the qualifier (some of the target's layers + low-rank deltas, see
   playground/models/distill.py) to minimise KL(target top-k || student) at those positions.
4. Train the byte drafter (its own byte vocabulary) on the first PROMPTS answers as text, the
   BPE drafter (its own BPE vocabulary, on top of the distilled draft) on the stored answers, and
   the feature draft (EAGLE-3, with training-time test) on the target's features of every stored
   conversation; the feature draft's figures go to assets/embedded/feature-draft/training.json.
5. Prepare the students as users get them and measure them on held-out prompts: greedy agreement
   with the target, tokens/s against the target. Results go to assets/embedded/metrics.json.
The target's answers are stored in assets/embedded/distill-data/ (committed) and the teacher passes
cached in --work-dir, so a re-run retrains without regenerating. Each step is a module of
scripts/embedded_recipe/.
"""

import argparse
import json
import pathlib
import time

import torch
from distill_prompts import HELD_OUT
from embedded_recipe.bpe_drafter import train_bpe_drafter
from embedded_recipe.byte_drafter import train_byte_drafter
from embedded_recipe.data import stored_conversations, training_data
from embedded_recipe.feature_drafter import build_feature_draft, measured
from embedded_recipe.measure import load_prepared, measure, merged
from embedded_recipe.settings import BPE_DRAFT, BYTE_DRAFT, FEATURE_DRAFT_DIR, SEED, STUDENTS
from embedded_recipe.students import train_students
from transformers import set_seed

from playground.models import embedded
from playground.models.feature_draft import load_feature_draft

METRICS = embedded.ASSETS_DIR / "metrics.json"
MODELS = [*STUDENTS, "byte-draft", "bpe-draft", embedded.FEATURE_DRAFT]


def train(target, tokenizer, args) -> dict:
    """Steps 1-4 for the models in --only; returns what metrics.json records about their training."""
    training = recorded_training()
    if set(args.only) & {*STUDENTS, "byte-draft"}:
        prompts, examples = training_data(target, tokenizer)
        train_students(target, tokenizer, examples, args.only, args.work_dir)
        if "byte-draft" in args.only:
            train_byte_drafter(tokenizer, prompts, examples)
        training.update(training_prompts=len(prompts), training_answer_tokens=sum(len(a) for _, a in examples))
    if "bpe-draft" in args.only:  # after its base, the draft
        training["bpe_draft_training"] = train_bpe_drafter(target, tokenizer)
    if embedded.FEATURE_DRAFT in args.only:
        build_feature_draft(target, tokenizer, stored_conversations(), args.work_dir)
    return training


def remeasure_feature_draft(target, tokenizer) -> None:
    """The committed feature draft's figures, measured again into its training.json."""
    record = FEATURE_DRAFT_DIR / "training.json"
    figures = json.loads(record.read_text()) if record.exists() else {}
    head = load_feature_draft(embedded.embedded_path(embedded.FEATURE_DRAFT))
    record.write_text(json.dumps({**figures, **measured(head, target, tokenizer)}, indent=2) + "\n")


def recorded_training() -> dict:
    """The training figures of the committed weights (a measure-only run does not regenerate data)."""
    recorded = json.loads(METRICS.read_text()) if METRICS.exists() else {}
    return {key: recorded.get(key) for key in ("training_prompts", "training_answer_tokens", "bpe_draft_training")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work-dir", type=pathlib.Path, default=embedded.cache_dir().parent / "build-embedded",
                        help="where the teacher passes are cached")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch threads; use 1 on a machine shared with other jobs (2 threads then spin)")
    parser.add_argument("--only", nargs="+", choices=MODELS, default=MODELS,
                        help="retrain and re-measure only these models (the others keep their committed weights "
                        "and recorded figures); the BPE drafter is trained on top of the draft, so retraining "
                        "the draft retrains it too")
    parser.add_argument("--measure-only", action="store_true",
                        help="skip training: re-measure the committed weights (of --only) and rewrite metrics.json")
    args = parser.parse_args()
    if BPE_DRAFT["base"] in args.only and "bpe-draft" not in args.only:
        args.only.append("bpe-draft")
    started = time.perf_counter()
    torch.set_num_threads(args.threads)
    set_seed(SEED)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    embedded.prepare([embedded.DEFAULT_TARGET])
    target, tokenizer = load_prepared(embedded.DEFAULT_TARGET)

    training = recorded_training() if args.measure_only else train(target, tokenizer, args)
    embedded.prepare()
    if args.measure_only and embedded.FEATURE_DRAFT in args.only:
        remeasure_feature_draft(target, tokenizer)
    names = [name for name in MODELS if name in args.only and name != embedded.FEATURE_DRAFT]
    if not names:  # the feature draft alone: its figures are in its training.json
        return
    recorded = json.loads(METRICS.read_text()) if METRICS.exists() else {}
    metrics = merged(recorded, measure(target, tokenizer, names))
    metrics.update({"seed": SEED, **training, "students": STUDENTS, "byte_draft": BYTE_DRAFT, "bpe_draft": BPE_DRAFT,
                    "measured_this_run": names, "minutes_this_run": round((time.perf_counter() - started) / 60, 1),
                    "held_out": HELD_OUT})
    METRICS.write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps({k: metrics[k] for k in ("agreement", "speed_vs_target", "minutes_this_run")}, indent=2))


if __name__ == "__main__":
    main()
