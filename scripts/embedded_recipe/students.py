"""Step 3: the draft and the qualifier, trained to match the target's top-k distributions."""

import torch
from tqdm import tqdm
from transformers import get_cosine_schedule_with_warmup

from playground.models import embedded
from playground.models.distill import extract_deltas, save_deltas, top_forward, trainable_student

from .batches import answer_positions, length_batches
from .data import cached, teacher_pass
from .settings import SEED, STUDENTS, WARMUP_STEPS


def padded_hidden(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.nn.utils.rnn.pad_sequence(tensors, batch_first=True).float()


def trainable_inputs(student, frozen, examples, teacher, batch):
    """What enters the student's trainable layers: its embeddings, or the target's hidden states
    after the `frozen` layers (recorded by the teacher pass)."""
    if frozen == 0:
        with torch.no_grad():
            return padded_hidden([student.model.embed_tokens(torch.tensor(examples[i][0] + examples[i][1]))
                                  for i in batch])
    return padded_hidden([teacher[i]["hidden"] for i in batch])


def top_k_kl(hidden, vocabulary_weight, positions, top_logprobs):
    """Mean KL(target's top-k, renormalised || student) over the rows of `hidden`; the student is
    normalised over the rows of `vocabulary_weight`, and `positions` are the top-k ids' rows there."""
    student_logprobs = (hidden @ vocabulary_weight.T).log_softmax(-1)
    teacher_logprobs = top_logprobs.log_softmax(-1)
    gap = teacher_logprobs - student_logprobs.gather(-1, positions)
    return (teacher_logprobs.exp() * gap).sum(-1).mean()


def train_student(student, frozen, examples, teacher, epochs, lr, seed, max_tokens=1024):
    """Minimise KL(target top-k, renormalised || student) at every answer position.

    Starts from the target's hidden states after the frozen layers, and normalises the student
    over the tokens that occur in any of the target's top-k lists (the training vocabulary): that
    cuts the output layer's cost, the largest part of a step, by the vocabulary's shrink factor.
    Float32 throughout: bf16 autocast ran a batch 30x slower on a CPU without bf16 units.
    """
    vocabulary = torch.unique(torch.cat([t["top_ids"].flatten() for t in teacher])).long()
    position_in_vocabulary = torch.full((student.config.vocab_size,), -1, dtype=torch.long)
    position_in_vocabulary[vocabulary] = torch.arange(len(vocabulary))
    print(f"training vocabulary: {len(vocabulary)} of {student.config.vocab_size} tokens")
    params = [p for p in student.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    generator = torch.Generator().manual_seed(seed)
    lengths = [sum(map(len, e)) for e in examples]
    steps = epochs * len(length_batches(lengths, max_tokens))
    scheduler = get_cosine_schedule_with_warmup(optimizer, WARMUP_STEPS, steps)
    student.train()
    for epoch in range(epochs):
        progress = tqdm(length_batches(lengths, max_tokens, generator), desc=f"epoch {epoch + 1}/{epochs}")
        for batch in progress:
            hidden = top_forward(student, trainable_inputs(student, frozen, examples, teacher, batch), frozen)
            hidden = torch.cat([hidden[row, first:last] for row, first, last in answer_positions(examples, batch)])
            loss = top_k_kl(hidden, student.model.embed_tokens.weight[vocabulary],
                            position_in_vocabulary[torch.cat([teacher[i]["top_ids"] for i in batch]).long()],
                            torch.cat([teacher[i]["top_logprobs"] for i in batch]).float())
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            progress.set_postfix(kl=f"{loss.item():.3f}")
    student.eval()
    return student


def train_students(target, tokenizer, examples, only: list[str], work_dir) -> None:
    for offset, (name, settings) in enumerate(STUDENTS.items()):
        if name not in only:
            continue
        frozen, data = settings["frozen"], examples[:settings["conversations"]]
        assert settings["layers"][:frozen] == list(range(frozen)), "frozen layers must be the target's first"
        # One pass serves every student trained on the same conversations: it records the hidden
        # states the deepest-frozen of them needs; the others use only its top-k log-probs.
        depth = max(s["frozen"] for s in STUDENTS.values() if s["conversations"] == settings["conversations"])
        teacher = cached(work_dir / f"teacher-{len(data)}-depth-{depth}.pt",
                         lambda: teacher_pass(target, data, tokenizer.pad_token_id, depth))
        student = trainable_student(target, settings["layers"], frozen, settings["rank"], SEED + offset)
        train_student(student, frozen, data, teacher, settings["epochs"], settings["lr"], SEED + offset)
        save_deltas(embedded.ASSETS_DIR / f"{name}.safetensors", settings["layers"],
                    extract_deltas(student, frozen))
