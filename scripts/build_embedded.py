"""Rebuild the embedded draft, qualifier and byte drafter from the embedded target (seeded, CPU).

    HF_HUB_OFFLINE=1 python scripts/build_embedded.py            # writes assets/embedded/*

1. Generate the target's chat answers to templated prompts and to user questions the target writes
   itself (batched, left padding; half greedy, half sampled at temperature 0.7): the on-policy
   data DistillSpec recommends.
2. Record the target's top-k log-probabilities at every answer position.
3. Train the draft and the qualifier (some of the target's layers + low-rank deltas, see
   playground/distill.py) to minimise KL(target top-k || student) at those positions.
4. Train the byte drafter (its own byte vocabulary) on the first PROMPTS answers as text.
5. Prepare the students as users get them and measure them on held-out prompts: greedy agreement
   with the target, tokens/s against the target. Results go to assets/embedded/metrics.json.
Intermediate data is cached in --work-dir, so a re-run retrains without regenerating.
"""

import argparse
import json
import math
import pathlib
import random
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from tqdm import tqdm
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache, LlamaConfig, LlamaForCausalLM

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from distill_prompts import HELD_OUT, extra_prompts, self_prompts, training_prompts  # noqa: E402
from playground import embedded  # noqa: E402
from playground.agreement import generate_answers, greedy_agreement, retokenized  # noqa: E402
from playground.distill import extract_deltas, save_deltas, top_forward, trainable_student  # noqa: E402

SEED = 20261122
PROMPTS = 640  # every model trains on the target's answers to these (the byte drafter only on these)
EXTRA_PROMPTS = 1920  # more, wider templated prompts
SELF_PROMPTS = 1280  # questions the target writes itself: the most varied data
MAX_ANSWER_TOKENS = 128
TOP_K = 16
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
EVAL_MAX_NEW_TOKENS = 128


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def progress(batch_starts):
    return tqdm(batch_starts, desc="target answers", unit="batch")


def length_batches(lengths: list[int], max_tokens: int, generator: torch.Generator | None = None):
    """Index batches of similar lengths, each under `max_tokens` padded tokens; shuffled if seeded."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches, current = [], []
    for i in order:
        if current and (len(current) + 1) * lengths[i] > max_tokens:
            batches.append(current)
            current = []
        current.append(i)
    batches.append(current)
    if generator is not None:
        batches = [batches[i] for i in torch.randperm(len(batches), generator=generator)]
    return batches


def padded(sequences: list[list[int]], pad_id: int):
    width = max(map(len, sequences))
    ids = torch.full((len(sequences), width), pad_id)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, :len(seq)] = torch.tensor(seq)
        mask[row, :len(seq)] = 1
    return ids, mask


def answer_positions(examples, batch) -> list[tuple[int, int, int]]:
    """(row, first, last+1) of the positions whose next token is an answer token."""
    spans = []
    for row, i in enumerate(batch):
        prompt, answer = examples[i]
        spans.append((row, len(prompt) - 1, len(prompt) + len(answer) - 1))
    return spans


def hidden_at_answers(model, ids, mask, spans):
    hidden = model.model(input_ids=ids, attention_mask=mask).last_hidden_state
    return torch.cat([hidden[row, first:last] for row, first, last in spans])


@torch.no_grad()
def teacher_pass(target, examples, pad_id, frozen):
    """Per example: the target's top-k log-probs (float16) and ids at its answer positions, and, for
    a student with `frozen` > 0 layers, its hidden states (bfloat16, whole sequence) after them."""
    result = [None] * len(examples)
    for batch in tqdm(length_batches([sum(map(len, e)) for e in examples], 4096), desc="teacher pass"):
        ids, mask = padded([examples[i][0] + examples[i][1] for i in batch], pad_id)
        out = target(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        for row, (i, (_, first, last)) in enumerate(zip(batch, answer_positions(examples, batch))):
            values, indices = out.logits[row, first:last].float().log_softmax(-1).topk(TOP_K, dim=-1)
            length = last + 1
            result[i] = {"top_logprobs": values.half(), "top_ids": indices.int()}
            if frozen:
                result[i]["hidden"] = out.hidden_states[frozen][row, :length].to(torch.bfloat16)
    return result


def cosine_schedule(optimizer, total_steps: int, warmup: int = 20):
    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total_steps - warmup)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


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


def train_student(student, frozen, examples, teacher, epochs, lr, seed, max_tokens=1024):
    """Minimise KL(target top-k, renormalised || student) at every answer position.

    Starts from the target's hidden states after the frozen layers, and normalises the student
    over the tokens that occur in any of the target's top-k lists (the training vocabulary): that
    cuts the output layer's cost, the largest part of a step, by the vocabulary's shrink factor.
    """
    vocabulary = torch.unique(torch.cat([t["top_ids"].flatten() for t in teacher])).long()
    position_in_vocabulary = torch.full((student.config.vocab_size,), -1, dtype=torch.long)
    position_in_vocabulary[vocabulary] = torch.arange(len(vocabulary))
    print(f"training vocabulary: {len(vocabulary)} of {student.config.vocab_size} tokens")
    params = [p for p in student.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    generator = torch.Generator().manual_seed(seed)
    lengths = [sum(map(len, e)) for e in examples]
    scheduler = cosine_schedule(optimizer, epochs * len(length_batches(lengths, max_tokens)))
    student.train()
    for epoch in range(epochs):
        progress = tqdm(length_batches(lengths, max_tokens, generator), desc=f"epoch {epoch + 1}/{epochs}")
        for batch in progress:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                hidden = top_forward(student, trainable_inputs(student, frozen, examples, teacher, batch), frozen)
                hidden = torch.cat([hidden[row, first:last]
                                    for row, first, last in answer_positions(examples, batch)])
                logits = hidden @ student.model.embed_tokens.weight[vocabulary].T
            student_logprobs = logits.float().log_softmax(-1)
            teacher_logprobs = torch.cat([teacher[i]["top_logprobs"] for i in batch]).float().log_softmax(-1)
            indices = position_in_vocabulary[torch.cat([teacher[i]["top_ids"] for i in batch]).long()]
            kl = (teacher_logprobs.exp() * (teacher_logprobs - student_logprobs.gather(-1, indices))).sum(-1)
            loss = kl.mean()
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            progress.set_postfix(kl=f"{loss.item():.3f}")
    student.eval()
    return student


# ---- byte drafter --------------------------------------------------------------------------------

BYTE_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def byte_tokenizer(chat_template: str):
    """A byte-level tokenizer (256 bytes + the target's 3 chat specials) that loads offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: PLC0415
    from transformers import PreTrainedTokenizerFast  # noqa: PLC0415

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {token: i for i, token in enumerate(BYTE_SPECIALS + sorted(alphabet))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(BYTE_SPECIALS)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<|endoftext|>",
                                        bos_token="<|im_start|>", eos_token="<|im_end|>",
                                        pad_token="<|im_end|>")
    tokenizer.chat_template = chat_template
    return tokenizer


def train_byte_draft(byte_tok, examples, settings, seed):
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(byte_tok), hidden_size=settings["hidden_size"],
                         intermediate_size=settings["intermediate_size"],
                         num_hidden_layers=settings["num_hidden_layers"],
                         num_attention_heads=settings["num_attention_heads"],
                         num_key_value_heads=settings["num_attention_heads"],
                         max_position_embeddings=4096, tie_word_embeddings=True,
                         bos_token_id=byte_tok.bos_token_id, eos_token_id=byte_tok.eos_token_id,
                         pad_token_id=byte_tok.pad_token_id)
    model = LlamaForCausalLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings["lr"], weight_decay=0.01)
    generator = torch.Generator().manual_seed(seed)
    lengths = [sum(map(len, e)) for e in examples]
    steps = settings["epochs"] * len(length_batches(lengths, 4096))
    scheduler = cosine_schedule(optimizer, steps)
    model.train()
    for epoch in range(settings["epochs"]):
        progress = tqdm(length_batches(lengths, 4096, generator), desc=f"byte epoch {epoch + 1}")
        for batch in progress:
            ids, mask = padded([examples[i][0] + examples[i][1] for i in batch], byte_tok.pad_token_id)
            spans = answer_positions(examples, batch)
            logits = model.lm_head(hidden_at_answers(model, ids, mask, spans))
            labels = torch.cat([ids[row, first + 1:last + 1] for row, first, last in spans])
            loss = F.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            progress.set_postfix(loss=f"{loss.item():.3f}")
    model.eval()
    return model


# ---- measurements --------------------------------------------------------------------------------

@torch.no_grad()
def greedy_tokens_per_second(model, prompt_ids: list[int], new_tokens: int = 48) -> float:
    """Batch 1, greedy, KV cache, no stopping: the loop a speculative method runs."""
    cache = DynamicCache()
    ids = torch.tensor([prompt_ids])
    started = time.perf_counter()
    for _ in range(new_tokens):
        logits = model(input_ids=ids, past_key_values=cache, use_cache=True).logits
        ids = logits[:, -1:].argmax(-1)
    return new_tokens / (time.perf_counter() - started)


def speeds(models: dict, reference: str, rounds: int = 15) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Median tokens/s of each model given {name: (model, prompt_ids)}, and the quartiles of each
    round's ratio to `reference`. Models run alternately in one process and each round's ratio
    compares neighbouring measurements, so a shared CPU's slow spells cancel out."""
    samples = {name: [] for name in models}
    for _ in range(rounds):
        for name, (model, prompt_ids) in models.items():
            samples[name].append(greedy_tokens_per_second(model, prompt_ids))
    tokens_per_second = {name: statistics.median(values) for name, values in samples.items()}
    ratios = {name: statistics.quantiles([a / b for a, b in zip(values, samples[reference])], n=4)
              for name, values in samples.items()}
    return tokens_per_second, ratios


def load_prepared(name: str):
    path = embedded.embedded_path(name)
    return AutoModelForCausalLM.from_pretrained(path).eval(), AutoTokenizer.from_pretrained(path)


def measure(target, tokenizer, byte_model, byte_tok) -> dict:
    """Held-out figures for the students as `prepare()` builds them."""
    heldout = generate_answers(target, tokenizer, HELD_OUT, EVAL_MAX_NEW_TOKENS)
    quick = generate_answers(target, tokenizer, HELD_OUT[:QUICK_CHECK["prompts"]], QUICK_CHECK["max_new_tokens"])
    students = {name: load_prepared(name)[0] for name in STUDENTS}
    metrics = {"held_out_prompts": len(HELD_OUT), "held_out_answer_tokens": sum(len(a) for _, a in heldout),
               "quick_check": QUICK_CHECK, "agreement": {}, "quick_check_agreement": {}}
    for name, student in students.items():
        metrics["agreement"][name] = round(greedy_agreement(student, heldout), 4)
        metrics["quick_check_agreement"][name] = round(greedy_agreement(student, quick), 4)
    byte_heldout = retokenized(heldout, HELD_OUT, tokenizer, byte_tok)
    metrics["agreement"]["byte-draft"] = round(greedy_agreement(byte_model, byte_heldout), 4)
    byte_quick = retokenized(quick, HELD_OUT, tokenizer, byte_tok)
    metrics["quick_check_agreement"]["byte-draft"] = round(greedy_agreement(byte_model, byte_quick), 4)
    prompt = heldout[1][0]
    tokens_per_second, ratios = speeds({embedded.DEFAULT_TARGET: (target, prompt),
                                        **{name: (student, prompt) for name, student in students.items()},
                                        "byte-draft": (byte_model, byte_heldout[1][0])},
                                       reference=embedded.DEFAULT_TARGET)
    metrics["tokens_per_second"] = {name: round(value, 1) for name, value in tokens_per_second.items()}
    metrics["speed_vs_target"] = {name: round(quartiles[1], 2) for name, quartiles in ratios.items()}
    metrics["speed_vs_target_quartiles"] = {name: [round(quartiles[0], 2), round(quartiles[2], 2)]
                                            for name, quartiles in ratios.items()}
    answer_bytes = sum(len(a) for _, a in byte_heldout)
    metrics["target_bytes_per_token"] = round(answer_bytes / metrics["held_out_answer_tokens"], 2)
    return metrics


# ---- main ----------------------------------------------------------------------------------------

def cached(path: pathlib.Path, build):
    if path.exists():
        return torch.load(path)
    value = build()
    torch.save(value, path)
    return value


def answered(target, tokenizer, prompts, path):
    """The target's answers to `prompts` (cached at `path`): the first half greedy, the rest sampled."""
    def generate():
        torch.manual_seed(SEED)  # the same samples whether or not other caches exist
        half = len(prompts) // 2
        return (generate_answers(target, tokenizer, prompts[:half], MAX_ANSWER_TOKENS, progress=progress)
                + generate_answers(target, tokenizer, prompts[half:], MAX_ANSWER_TOKENS, sample=True, progress=progress))
    return cached(path, generate)


def training_data(target, tokenizer, args):
    """The prompts and the target's answers to them: PROMPTS templated ones, EXTRA_PROMPTS more
    templated ones, then SELF_PROMPTS the target wrote (all cached in the work directory)."""
    base = training_prompts(PROMPTS, SEED)
    extra = extra_prompts(EXTRA_PROMPTS, SEED, exclude=base)
    own = cached(args.work_dir / f"prompts-self-{SELF_PROMPTS}.pt",
                 lambda: self_prompts(target, tokenizer, SELF_PROMPTS, SEED))
    prompts, examples = [], []
    for part, name in ((base, f"answers-{PROMPTS}"), (extra, f"answers-extra-{EXTRA_PROMPTS}"),
                       (own, f"answers-self-{SELF_PROMPTS}")):
        prompts += part
        examples += answered(target, tokenizer, part, args.work_dir / f"{name}.pt")
    print(f"{len(examples)} conversations, {sum(len(a) for _, a in examples)} answer tokens")
    return prompts, examples


def train_students(target, tokenizer, examples, args) -> None:
    for offset, (name, settings) in enumerate(STUDENTS.items()):
        if name not in args.only:
            continue
        frozen, data = settings["frozen"], examples[:settings["conversations"]]
        assert settings["layers"][:frozen] == list(range(frozen)), "frozen layers must be the target's first"
        # One pass serves every student trained on the same conversations: it records the hidden
        # states the deepest-frozen of them needs; the others use only its top-k log-probs.
        depth = max(s["frozen"] for s in STUDENTS.values() if s["conversations"] == settings["conversations"])
        teacher = cached(args.work_dir / f"teacher-{len(data)}-depth-{depth}.pt",
                         lambda: teacher_pass(target, data, tokenizer.pad_token_id, depth))
        student = trainable_student(target, settings["layers"], frozen, settings["rank"], SEED + offset)
        train_student(student, frozen, data, teacher, settings["epochs"], settings["lr"], SEED + offset)
        save_deltas(embedded.ASSETS_DIR / f"{name}.safetensors", settings["layers"],
                    extract_deltas(student, frozen))


def train_byte_drafter(tokenizer, prompts, examples) -> None:
    byte_tok = byte_tokenizer(tokenizer.chat_template)
    byte_data = retokenized(examples[:PROMPTS], prompts[:PROMPTS], tokenizer, byte_tok, BYTE_DRAFT["max_bytes"])
    byte_model = train_byte_draft(byte_tok, byte_data, BYTE_DRAFT, SEED)
    byte_model.to(torch.bfloat16).save_pretrained(embedded.ASSETS_DIR / "byte-draft")
    byte_tok.save_pretrained(embedded.ASSETS_DIR / "byte-draft")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work-dir", type=pathlib.Path, default=embedded.cache_dir().parent / "build-embedded")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch threads; use 1 on a machine shared with other jobs (2 threads then spin)")
    parser.add_argument("--only", nargs="+", choices=[*STUDENTS, "byte-draft"], default=[*STUDENTS, "byte-draft"],
                        help="retrain only these models (the others keep their committed weights)")
    parser.add_argument("--measure-only", action="store_true",
                        help="skip training: re-measure the committed weights and rewrite metrics.json")
    args = parser.parse_args()
    started = time.perf_counter()
    torch.set_num_threads(args.threads)
    seed_everything(SEED)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    embedded.prepare([embedded.DEFAULT_TARGET])
    target_dir = embedded.embedded_path(embedded.DEFAULT_TARGET)
    target = AutoModelForCausalLM.from_pretrained(target_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(target_dir)

    prompts, examples = training_data(target, tokenizer, args)
    if not args.measure_only:
        train_students(target, tokenizer, examples, args)
        if "byte-draft" in args.only:
            train_byte_drafter(tokenizer, prompts, examples)
    embedded.prepare()
    byte_model, byte_tok = load_prepared("byte-draft")
    metrics = measure(target, tokenizer, byte_model, byte_tok)
    metrics.update({"seed": SEED, "training_prompts": len(prompts),
                    "training_answer_tokens": sum(len(a) for _, a in examples),
                    "students": STUDENTS, "byte_draft": BYTE_DRAFT,
                    "minutes_this_run": round((time.perf_counter() - started) / 60, 1),
                    "held_out": HELD_OUT})
    (embedded.ASSETS_DIR / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(json.dumps({k: metrics[k] for k in ("agreement", "speed_vs_target", "minutes_this_run")}, indent=2))


if __name__ == "__main__":
    main()
