"""Step 4b: the BPE drafter, a heterogeneous draft worth teaching: a vocabulary of its own (a
byte-level BPE trained on the target's prompts and answers), a new tied embedding and output head
for it, and 3 of the distilled draft's layers (the target's layers 0, 1, 29 with the draft's deltas)
with low-rank deltas of its own on top, trained on the target's answers retokenized (hard labels).
Three layers, not the draft's five: under slem the five-layer variant agreed more but lost to ar on
its two draft steps a round (assets/embedded/README.md)."""

import time

import torch
import torch.nn.functional as F
from distill_prompts import extra_prompts, training_prompts
from tqdm import tqdm
from transformers import get_cosine_schedule_with_warmup, set_seed

from playground.measure.agreement import retokenized
from playground.models import embedded
from playground.models.distill import (
    EMBEDDING,
    assemble_student,
    extract_deltas,
    load_deltas,
    save_deltas,
    top_forward,
    trainable_student,
    with_vocabulary,
)

from .batches import answer_positions, length_batches, padded
from .data import answered
from .settings import BPE_DRAFT, DATA_DIR, EXTRA_PROMPTS, PROMPTS, SEED, WARMUP_STEPS

BPE_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # the target's ids 0, 1, 2


def stored_conversations(tokenizer, self_questions: int):
    """The prompts and the target's answers stored in DATA_DIR, generating nothing: the templated
    sets and the answers to the target's first `self_questions` questions."""
    base = training_prompts(PROMPTS, SEED)
    extra = extra_prompts(EXTRA_PROMPTS, SEED, exclude=base)
    own = torch.load(DATA_DIR / "prompts-self.pt")[:self_questions]
    prompts, examples = [], []
    for part, name in ((base, f"answers-{PROMPTS}"), (extra, f"answers-extra-{EXTRA_PROMPTS}"),
                       (own, f"answers-self-{self_questions}")):
        prompts += part
        examples += answered(None, tokenizer, part, name)  # stored: the target is not needed
    return prompts, examples


def bpe_tokenizer(texts: list[str], vocab_size: int, chat_template: str):
    """A byte-level BPE of `vocab_size` tokens trained on `texts`, with the target's pre-tokenizer
    (GPT-2's split, no prefix space), the target's 3 chat specials at the same ids and its chat
    template: any text round-trips, and prompts render as the target's do."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: PLC0415
    from transformers import PreTrainedTokenizerFast  # noqa: PLC0415

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=BPE_SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    core.train_from_iterator(texts, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<|endoftext|>",
                                        bos_token="<|im_start|>", eos_token="<|im_end|>",
                                        pad_token="<|im_end|>")
    tokenizer.chat_template = chat_template
    return tokenizer


def initial_embeddings(target_embeddings: torch.Tensor, target_tokenizer, tokenizer) -> torch.Tensor:
    """Each new token's row: the mean of the target's rows of that token's target tokenization
    (both vocabularies are byte-level BPE over the same 256 symbols, so the target's BPE model cuts
    any new token's symbols, half a UTF-8 character included); a special token takes the target's."""
    target_model, target_vocab = target_tokenizer.backend_tokenizer.model, target_tokenizer.get_vocab()
    rows = torch.empty(len(tokenizer), target_embeddings.shape[1])
    for piece, new_id in tokenizer.get_vocab().items():
        ids = [target_vocab[piece]] if piece in BPE_SPECIALS else [t.id for t in target_model.tokenize(piece)]
        # the target has no symbol for some bytes that never occur in UTF-8 (0xC0, 0xF5...): its mean row
        rows[new_id] = target_embeddings[ids].float().mean(0) if ids else target_embeddings.float().mean(0)
    return rows


def base_student(target, base: str):
    """The student the BPE drafter starts from, assembled from the target and its stored deltas."""
    return assemble_student(target, *load_deltas(embedded.ASSETS_DIR / f"{base}.safetensors")).float()


def vocabulary_student(base, layers: list[int], rank: int, embeddings: torch.Tensor, seed: int):
    """A trainable student over `base`'s layers at `layers` (distill.trainable_student) whose
    embedding, tied to its output head, is a new trainable matrix for another vocabulary."""
    student = trainable_student(base, layers, 0, rank, seed)
    return with_vocabulary(student, embeddings, trainable=True)


def train_vocabulary_student(student, examples, settings, seed, pad_id, max_tokens=1024):
    """Hard-label cross-entropy on the answer tokens (the target's answers in the new vocabulary)."""
    set_seed(seed)
    embedding = student.model.embed_tokens.weight
    deltas = [p for p in student.parameters() if p.requires_grad and p is not embedding]
    optimizer = torch.optim.AdamW([{"params": deltas, "lr": settings["lr"]},
                                   {"params": [embedding], "lr": settings["embedding_lr"]}], weight_decay=0.0)
    generator = torch.Generator().manual_seed(seed)
    lengths = [sum(map(len, e)) for e in examples]
    steps = settings["epochs"] * len(length_batches(lengths, max_tokens))
    scheduler = get_cosine_schedule_with_warmup(optimizer, WARMUP_STEPS, steps)
    student.train()
    for epoch in range(settings["epochs"]):
        progress = tqdm(length_batches(lengths, max_tokens, generator), desc=f"bpe epoch {epoch + 1}")
        for batch in progress:
            ids, _ = padded([examples[i][0] + examples[i][1] for i in batch], pad_id)
            spans = answer_positions(examples, batch)
            hidden = top_forward(student, student.model.embed_tokens(ids), 0)
            hidden = torch.cat([hidden[row, first:last] for row, first, last in spans])
            labels = torch.cat([ids[row, first + 1:last + 1] for row, first, last in spans])
            loss = F.cross_entropy(student.lm_head(hidden), labels)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_([*deltas, embedding], 1.0)
            optimizer.step()
            scheduler.step()
            progress.set_postfix(loss=f"{loss.item():.3f}")
    student.eval()
    return student


def save_vocabulary_student(student, layers, tokenizer, folder) -> None:
    """The deltas (distill's format) plus the new embedding in one file, and the tokenizer."""
    folder.mkdir(parents=True, exist_ok=True)
    tensors = extract_deltas(student, 0)
    tensors[EMBEDDING] = student.model.embed_tokens.weight.detach().to(torch.bfloat16).contiguous()
    save_deltas(folder / "student.safetensors", layers, tensors)
    tokenizer.save_pretrained(folder)


def bpe_training_data(tokenizer, settings=BPE_DRAFT):
    """The BPE tokenizer (trained on the stored prompts and answers) and the conversations in it."""
    prompts, examples = stored_conversations(tokenizer, settings["self_questions"])
    answers = [tokenizer.decode(answer, skip_special_tokens=True) for _, answer in examples]
    bpe = bpe_tokenizer(prompts + answers, settings["vocab_size"], tokenizer.chat_template)
    return bpe, retokenized(examples, prompts, tokenizer, bpe)


def train_bpe_drafter(target, tokenizer) -> dict:
    """Train and store assets/embedded/bpe-draft/; returns the figures metrics.json records."""
    assert embedded.STUDENT_BASES["bpe-draft"] == BPE_DRAFT["base"], "prepare() assembles it on the same base"
    started = time.perf_counter()
    bpe, data = bpe_training_data(tokenizer)
    embeddings = initial_embeddings(target.model.embed_tokens.weight.detach(), tokenizer, bpe)
    base = base_student(target, BPE_DRAFT["base"])
    student = vocabulary_student(base, BPE_DRAFT["layers"], BPE_DRAFT["rank"], embeddings, SEED + 2)
    train_vocabulary_student(student, data, BPE_DRAFT, SEED + 2, bpe.pad_token_id)
    save_vocabulary_student(student, BPE_DRAFT["layers"], bpe, embedded.ASSETS_DIR / "bpe-draft")
    return {"minutes": round((time.perf_counter() - started) / 60, 1), "conversations": len(data),
            "answer_tokens": sum(len(a) for _, a in data)}
