"""The recipe's settings: data sizes, the students' shapes and training, what is measured."""

from playground.models import embedded
from playground.models.default_family import FEATURE_DRAFT as FEATURE_DRAFT_NAME

SEED = 20261122
# The target's prompts and answers, committed: generating them takes over an hour on a 2-core CPU.
DATA_DIR = embedded.ASSETS_DIR / "distill-data"
PROMPTS = 640  # every model trains on the target's answers to these (the byte drafter only on these)
EXTRA_PROMPTS = 1920  # more, wider templated prompts
SELF_PROMPTS = 1280  # questions the target writes itself: the most varied data
MAX_ANSWER_TOKENS = 128
TOP_K = 16
WARMUP_STEPS = 20  # of the cosine learning-rate schedule
# The first `frozen` layers of a student are the target's layers 0..frozen-1, unchanged.
STUDENTS = {
    embedded.DEFAULT_DRAFT: {"layers": [0, 1, 2, 28, 29], "frozen": 0, "rank": 128, "epochs": 3, "lr": 2e-3,
                             "conversations": PROMPTS + EXTRA_PROMPTS + SELF_PROMPTS},
    embedded.DEFAULT_QUALIFIER: {"layers": [*range(6), *range(21, 30)], "frozen": 6, "rank": 64, "epochs": 2,
                                 "lr": 2e-3, "conversations": PROMPTS + EXTRA_PROMPTS + SELF_PROMPTS},
}
BYTE_DRAFT = {"hidden_size": 128, "intermediate_size": 384, "num_hidden_layers": 3,
              "num_attention_heads": 4, "epochs": 3, "lr": 3e-3, "max_bytes": 768}
QUICK_CHECK = {"prompts": 6, "max_new_tokens": 48}  # what tests/test_embedded.py re-measures
QUICK_CHECK_SLEM = {"bpe-draft": {"candidates": 1}}  # slem's acceptance on the quick check (tests/test_bpe_draft.py)
EVAL_MAX_NEW_TOKENS = 128
# The BPE drafter: a byte-level BPE vocabulary of its own (trained on the stored prompts and
# answers), a new tied embedding/head initialised from the target's rows, on top of the distilled
# draft (`base`: its layers with its deltas merged; `layers`: which of them, the target's 0, 1, 29)
# with rank deltas of its own; hard-label cross-entropy on the stored answers retokenized: the 640
# and 1,920 templated conversations and the 2,560 questions the target wrote (all in distill-data/;
# generates nothing).
BPE_DRAFT = {"base": embedded.DEFAULT_DRAFT, "layers": [0, 1, 4], "vocab_size": 4096, "rank": 32,
             "epochs": 2, "lr": 2e-3, "embedding_lr": 1e-3, "self_questions": 2560}
# The feature draft (EAGLE-3, `embedded_recipe/feature_drafter.py`): one layer reading the target's
# hidden states `layer_ids` (the inputs of layers 2, 15 and 27, the public heads' choice; an id of
# 30, the layer count, would read the last layer's normed output: tried with stages of 1 and 1
# epochs, it reached 36.4% held-out first-token agreement, where these ids had 41.1% after their
# first stage and 44.4% after all three), over the most frequent
# `draft_vocab` target tokens, trained with `ttt_steps` steps of training-time test on every stored
# conversation.
# Trained in stages, each from the last one's head; a stage's steps weigh `step_decay ** j` (the
# second stage leans on the first token, whose agreement the first stage left lowest).
FEATURE_DRAFT = {"draft_vocab": 8192, "layer_ids": [2, 15, 27], "ttt_steps": 4, "batch_tokens": 2048,
                 "stages": [{"epochs": 2, "lr": 1e-3, "step_decay": 1.0},
                            {"epochs": 1, "lr": 4e-4, "step_decay": 0.7},
                            {"epochs": 1, "lr": 3e-4, "step_decay": 0.7}]}
FEATURE_DRAFT_DIR = embedded.ASSETS_DIR / FEATURE_DRAFT_NAME
