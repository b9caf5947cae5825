"""The feature draft (EAGLE-3) for the embedded target, trained with training-time test.

1. Draft vocabulary: the FEATURE_DRAFT["draft_vocab"] target tokens most frequent in the stored
   answers (end-of-text tokens always in), in target-id order; `d2t`/`t2d` map between the two.
2. Teacher pass: the target over every stored conversation, keeping the inputs of the three layers
   the head reads (bfloat16) and its top-k log-probabilities at the answer positions.
3. Training-time test: step 0 reads the target's features at every position at once; step j reads
   step j-1's own output (as at inference, where the target has not yet seen the drafted token),
   with the true next token, one position further. A step-j query sees the target-feature keys up
   to its chain's start and its own chain's keys of steps 1..j, as the head's cache holds them
   at inference. Loss: cross-entropy against the target's top-k, renormalised over the tokens of the
   draft vocabulary, at every answer position of every step, step j weighted `step_decay ** j`.
4. Stages (FEATURE_DRAFT["stages"]): each trains the last one's head further, with its own epochs,
   learning rate and step weights; each stage's head is kept in the work directory under a name
   that says what it was trained from (its layer ids and the stages so far), so a recipe with a
   stage added trains only that stage, and a recipe with other settings does not load it.
The output layer is the target's own (tied) rows of the draft vocabulary, frozen, so the stored
weights are `fc`, the layer and the final norm; `prepare()` adds the rows back.
"""

import collections
import hashlib
import json
import time

import torch
from distill_prompts import HELD_OUT
from safetensors.torch import save_file
from tqdm import tqdm
from transformers import get_cosine_schedule_with_warmup

from playground.measure.agreement import generate_answers
from playground.models.feature_draft import FeatureDraft, head_config

from .batches import answer_positions, length_batches, padded
from .data import cached
from .settings import EVAL_MAX_NEW_TOKENS, FEATURE_DRAFT, FEATURE_DRAFT_DIR, QUICK_CHECK, SEED, TOP_K, WARMUP_STEPS


def draft_vocabulary(examples, tokenizer, size: int) -> list[int]:
    counts = collections.Counter(token for _, answer in examples for token in answer)
    kept = {tokenizer.eos_token_id, tokenizer.pad_token_id, *(token for token, _ in counts.most_common(size))}
    return sorted(kept)[:size] if len(kept) > size else sorted(kept)


@torch.no_grad()
def feature_pass(target, examples, pad_id, layer_ids):
    """Per example: the inputs of `layer_ids` (bfloat16, whole sequence, concatenated) and the
    target's top-k log-probabilities and ids at its answer positions."""
    result = [None] * len(examples)
    for batch in tqdm(length_batches([sum(map(len, e)) for e in examples], 4096), desc="feature pass"):
        ids, mask = padded([examples[i][0] + examples[i][1] for i in batch], pad_id)
        out = target(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        depths = torch.cat([out.hidden_states[i] for i in layer_ids], dim=-1)
        for row, (i, (_, first, last)) in enumerate(zip(batch, answer_positions(examples, batch))):
            values, indices = out.logits[row, first:last].float().log_softmax(-1).topk(TOP_K, dim=-1)
            result[i] = {"features": depths[row, :last + 1].to(torch.bfloat16), "first": first,
                         "top_logprobs": values.half(), "top_ids": indices.int()}
    return result


def new_head(target, vocabulary: list[int]) -> FeatureDraft:
    """A head whose layer starts as the target's last layer (both halves of the joined input read
    through its maps), its fc as the high depth alone, its output layer the target's rows."""
    config = head_config(target.config, len(vocabulary), FEATURE_DRAFT["layer_ids"])
    head = FeatureDraft(config)
    last, width = target.model.layers[-1], config.hidden_size
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj"):
            weight = getattr(last.self_attn, name).weight
            getattr(head.midlayer.self_attn, name).weight.copy_(torch.cat([weight, weight], dim=1) / 2)
        head.midlayer.self_attn.o_proj.load_state_dict(last.self_attn.o_proj.state_dict())
        head.midlayer.mlp.load_state_dict(last.mlp.state_dict())
        head.midlayer.post_attention_layernorm.load_state_dict(last.post_attention_layernorm.state_dict())
        head.norm.load_state_dict(target.model.norm.state_dict())
        head.fc.weight.zero_()
        head.fc.weight[:, 2 * width:].copy_(torch.eye(width))
        ids = torch.tensor(vocabulary)
        head.lm_head.weight.copy_(target.get_output_embeddings().weight[ids])
        head.d2t.copy_(ids - torch.arange(len(ids)))
        head.t2d[ids] = True
    head.lm_head.requires_grad_(False)
    return head


def chain_masks(width: int, steps: int) -> list[torch.Tensor]:
    """Per step j, which keys (step 0's, then steps 1..j's, each `width` long) a chain's query sees:
    the target-feature keys up to the chain's start, and its own chain's later keys."""
    causal, own = torch.ones(width, width, dtype=torch.bool).tril(), torch.eye(width, dtype=torch.bool)
    return [torch.cat([causal, *[own] * j], dim=1) for j in range(steps)]


def batch_tensors(examples, teacher, batch, pad_id, draft_index):
    """Padded tokens, target features, and per position p the target's top-k (as draft-vocabulary
    indices, -1 outside it) for the token after p, with the answer positions marked."""
    ids, _ = padded([examples[i][0] + examples[i][1] for i in batch], pad_id)
    width = ids.shape[1]
    features = torch.nn.utils.rnn.pad_sequence([teacher[i]["features"] for i in batch], batch_first=True).float()
    top_ids = torch.full((len(batch), width, TOP_K), -1, dtype=torch.long)
    top_logprobs = torch.zeros(len(batch), width, TOP_K)
    for row, i in enumerate(batch):
        first, count = teacher[i]["first"], len(teacher[i]["top_ids"])
        top_ids[row, first:first + count] = draft_index[teacher[i]["top_ids"].long()]
        top_logprobs[row, first:first + count] = teacher[i]["top_logprobs"].float()
    return ids, features, top_ids, top_logprobs


def step_loss(head, output, top_ids, top_logprobs):
    """Cross-entropy against the target's top-k renormalised over its in-vocabulary tokens, at the
    positions that have any; -> (summed loss, positions, greedy hits)."""
    inside = top_ids >= 0
    scored = inside.any(-1)
    if not scored.any():
        return output.sum() * 0, 0, 0
    logprobs = head.logits(output[scored]).log_softmax(-1)
    ids, inside = top_ids[scored], inside[scored]
    teacher = top_logprobs[scored].masked_fill(~inside, float("-inf")).softmax(-1)
    picked = logprobs.gather(-1, ids.clamp(min=0))
    loss = -(teacher * picked.masked_fill(~inside, 0)).sum()
    hits = (logprobs.argmax(-1) == ids[:, 0]).sum().item()  # the target's own top token
    return loss, int(scored.sum()), hits


def ttt_loss(head, embedding, ids, features, top_ids, top_logprobs, steps, step_decay=1.0):
    """The training-time-test unroll over one batch -> (weighted mean loss, per-step greedy
    agreement); `embedding` is the target's token embedding table."""
    width = ids.shape[1] - 1
    hidden, keys, values, total, count, agreement = head.fuse(features[:, :width]), [], [], 0, 0, []
    masks = chain_masks(width, steps)
    positions = torch.arange(width).unsqueeze(0)
    for j in range(steps):
        tokens = torch.nn.functional.pad(ids[:, j + 1:], (0, j))[:, :width]
        past_keys = torch.cat(keys, dim=2) if keys else None
        past_values = torch.cat(values, dim=2) if values else None
        hidden, new_keys, new_values = head(hidden, embedding(tokens), positions + j, past_keys, past_values,
                                            masks[j])
        keys.append(new_keys)
        values.append(new_values)
        labels = slice(j + 1, j + 1 + width)
        loss, n, hits = step_loss(head, hidden, _shifted(top_ids[:, labels], width, -1),
                                  _shifted(top_logprobs[:, labels], width, 0.0))
        total, count = total + step_decay ** j * loss, count + step_decay ** j * n
        agreement.append(hits / max(1, n))
    return total / max(1, count), agreement


def _shifted(tensor, width, fill):
    """`tensor` padded at the end with `fill` to `width` positions."""
    missing = width - tensor.shape[1]
    return tensor if missing <= 0 else torch.cat(
        [tensor, torch.full((tensor.shape[0], missing, *tensor.shape[2:]), fill, dtype=tensor.dtype)], dim=1)


def train_stage(head, target, tokenizer, examples, teacher, stage: dict, name: str):
    """Train `head` further for one of FEATURE_DRAFT["stages"] -> the head."""
    draft_index = torch.full((target.config.vocab_size,), -1, dtype=torch.long)
    draft_index[head.d2t + torch.arange(len(head.d2t))] = torch.arange(len(head.d2t))
    head.lm_head.requires_grad_(False)
    params = [p for p in head.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=stage["lr"], weight_decay=0.0)
    generator = torch.Generator().manual_seed(SEED)
    lengths = [sum(map(len, e)) for e in examples]
    batches_per_epoch = len(length_batches(lengths, FEATURE_DRAFT["batch_tokens"]))
    scheduler = get_cosine_schedule_with_warmup(optimizer, WARMUP_STEPS, stage["epochs"] * batches_per_epoch)
    head.train()
    for epoch in range(stage["epochs"]):
        progress = tqdm(length_batches(lengths, FEATURE_DRAFT["batch_tokens"], generator),
                        desc=f"feature draft, {name}, epoch {epoch + 1}/{stage['epochs']}")
        for batch in progress:
            tensors = batch_tensors(examples, teacher, batch, tokenizer.pad_token_id, draft_index)
            loss, agreement = ttt_loss(head, target.get_input_embeddings(), *tensors, FEATURE_DRAFT["ttt_steps"],
                                       stage["step_decay"])
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            progress.set_postfix(loss=f"{loss.item():.3f}", agree="/".join(f"{a:.2f}" for a in agreement))
    return head.eval()


def settings_tag(stages: int) -> str:
    """A short name for the layer ids and the first `stages` stages' settings."""
    settings = {"layer_ids": FEATURE_DRAFT["layer_ids"], "stages": FEATURE_DRAFT["stages"][:stages]}
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]


def train_feature_draft(target, tokenizer, examples, teacher, vocabulary, work_dir):
    """The head after every stage, and the minutes of each stage trained now (a stage whose head the
    work directory keeps is not trained again)."""
    head, minutes = new_head(target, vocabulary), {}
    for number, stage in enumerate(FEATURE_DRAFT["stages"], start=1):
        kept = work_dir / f"feature-draft-{len(examples)}-stage-{number}-{settings_tag(number)}.pt"
        if kept.exists():
            head.load_state_dict(torch.load(kept))
            continue
        started = time.perf_counter()
        head = train_stage(head, target, tokenizer, examples, teacher, stage, f"stage {number}")
        torch.save(head.state_dict(), kept)
        minutes[str(number)] = round((time.perf_counter() - started) / 60, 1)
    return head, minutes


@torch.no_grad()
def chained_agreement(head, target, heldout, depth: int) -> dict:
    """Greedy, on held-out answers: per depth d, the share of blocks whose d-th drafted token is
    the target's given that the earlier ones were, and the mean accepted tokens of a block. The
    head's cache holds the target's features up to the block's start, then its own, as in sd."""
    hits, tries, accepted = [0] * depth, [0] * depth, []
    for prompt, answer in heldout:
        ids = prompt + answer
        hidden = target(input_ids=torch.tensor([ids]), output_hidden_states=True).hidden_states
        features = head.fuse(torch.cat([hidden[i] for i in head.layer_ids], dim=-1))
        first = len(prompt) - 1
        embed = target.get_input_embeddings()
        _, keys, values = head(features[:, :first], embed(torch.tensor([ids[1:first + 1]])), torch.arange(first)[None])
        for t in range(first, len(ids) - 2):  # a block after token t+1, the target's own
            output, key, value = head(features[:, t:t + 1], embed(torch.tensor([[ids[t + 1]]])), torch.tensor([[t]]),
                                      keys, values)
            keys, values = torch.cat([keys, key], 2), torch.cat([values, value], 2)
            own_keys, own_values, length = keys, values, 0
            for d, position in enumerate(range(t + 2, min(t + 2 + depth, len(ids)))):
                tries[d] += 1
                if head.target_ids(head.logits(output[0, -1]).argmax()).item() != ids[position]:
                    break
                hits[d], length = hits[d] + 1, length + 1
                output, key, value = head(output, embed(torch.tensor([[ids[position]]])),
                                          torch.tensor([[position - 1]]), own_keys, own_values)
                own_keys, own_values = torch.cat([own_keys, key], 2), torch.cat([own_values, value], 2)
            accepted.append(length)
    return {"conditional_agreement": [round(h / max(1, n), 4) for h, n in zip(hits, tries)],
            "mean_accepted": round(sum(accepted) / max(1, len(accepted)), 4)}


def stored_weights(head) -> dict:
    """What the assets keep: all but the output layer (the target's rows, added back by prepare)."""
    return {name: tensor.detach().to(torch.bfloat16) if tensor.is_floating_point() else tensor
            for name, tensor in head.state_dict().items()
            if not name.startswith(("rotary.", "lm_head."))}


def build_feature_draft(target, tokenizer, examples, work_dir) -> dict:
    """Train on `examples`, store the head in FEATURE_DRAFT_DIR, measure it on the held-out prompts."""
    vocabulary = draft_vocabulary(examples, tokenizer, FEATURE_DRAFT["draft_vocab"])
    layer_ids = FEATURE_DRAFT["layer_ids"]
    teacher = cached(work_dir / f"features-{len(examples)}-{'-'.join(map(str, layer_ids))}.pt",
                     lambda: feature_pass(target, examples, tokenizer.pad_token_id, layer_ids))
    head, minutes = train_feature_draft(target, tokenizer, examples, teacher, vocabulary, work_dir)
    FEATURE_DRAFT_DIR.mkdir(parents=True, exist_ok=True)
    save_file(stored_weights(head), str(FEATURE_DRAFT_DIR / "head.safetensors"))
    (FEATURE_DRAFT_DIR / "config.json").write_text(head.config.to_json_string())
    record = FEATURE_DRAFT_DIR / "training.json"
    earlier = json.loads(record.read_text()).get("stage_minutes", {}) if record.exists() else {}
    figures = {"stage_minutes": {**earlier, **minutes},
               "conversations": len(examples), "settings": FEATURE_DRAFT,
               **measured(head, target, tokenizer)}
    record.write_text(json.dumps(figures, indent=2) + "\n")
    return figures


def measured(head, target, tokenizer) -> dict:
    """Chained agreement on the held-out prompts and on the quick check (what
    tests/test_embedded.py re-measures)."""
    heldout = generate_answers(target, tokenizer, HELD_OUT, EVAL_MAX_NEW_TOKENS)
    quick = generate_answers(target, tokenizer, HELD_OUT[:QUICK_CHECK["prompts"]], QUICK_CHECK["max_new_tokens"])
    depth = FEATURE_DRAFT["ttt_steps"]
    return {"held_out": chained_agreement(head, target, heldout, depth),
            "quick_check": chained_agreement(head, target, quick, depth)}
