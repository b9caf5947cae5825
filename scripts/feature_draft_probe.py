"""Would a feature draft pay on the embedded family? A probe of the EAGLE idea (Li et al. 2024):
the draft reads the target's last hidden state as well as the tokens, so one layer may do what the
embedded draft needs five for.

    HF_HUB_OFFLINE=1 python scripts/feature_draft_probe.py --out bench/results/feature_draft

1. One target pass over the stored conversations (assets/embedded/distill-data): its final hidden
   state f_t at every position and its top-k log-probabilities at the answer positions (cached in
   --work-dir).
2. Train the draft: f_t and the embedding of token t+1, joined by a linear layer, go through one
   decoder layer and the target's final norm; the result is read as f_{t+1} by the target's own
   output layer. Loss: smooth L1 to the true f_{t+1}, plus KL(target top-k || draft) normalised
   over the batch's top-k ids.
3. Held-out chained agreement, greedy, of this draft and of the embedded one: the share of blocks
   whose d-th token is the target's given that the earlier ones were (the feature draft's later
   tokens read its own predicted features), and the mean accepted tokens of a K-token block.
4. One-token step costs as sd runs its drafts (int8 linear layers, the pruned 8,192-token head) and
   Leviathan's prediction for each draft from those costs.

sd cannot run a feature draft yet: this measures whether building it would pay.
"""

import argparse
import json
import pathlib
import statistics
import time

import torch
from distill_prompts import HELD_OUT
from embedded_recipe.batches import length_batches
from embedded_recipe.data import cached, stored_conversations, teacher_pass
from embedded_recipe.measure import load_prepared
from embedded_recipe.settings import EVAL_MAX_NEW_TOKENS, SEED, WARMUP_STEPS
from embedded_recipe.students import top_k_kl
from torch import nn
from tqdm import tqdm
from transformers import DynamicCache, LlamaForCausalLM, get_cosine_schedule_with_warmup

from playground.decoding.draft_vocab import pruned_head
from playground.decoding.int8_draft import Int8Linear, int8_twin
from playground.measure.agreement import generate_answers
from playground.models import embedded
from playground.models.loading import load_model

DRAFT_VOCAB = 8192  # the default pruned head of sd


class FeatureDraft(nn.Module):
    """(f_t, token t+1) -> predicted f_{t+1}; shares the target's embeddings and output layer."""

    def __init__(self, target):
        super().__init__()
        config = target.config.__class__.from_dict({**target.config.to_dict(), "num_hidden_layers": 1})
        self.body = LlamaForCausalLM(config)
        self.body.model.embed_tokens = target.model.embed_tokens
        self.body.model.embed_tokens.requires_grad_(False)
        self.body.model.norm.load_state_dict(target.model.norm.state_dict())
        self.body.model.layers[0].load_state_dict(target.model.layers[-1].state_dict())
        width = config.hidden_size
        self.join = nn.Linear(2 * width, width)
        with torch.no_grad():  # start from the token's embedding plus a tenth of the feature
            self.join.weight.copy_(torch.cat([0.1 * torch.eye(width), torch.eye(width)], dim=1))
            self.join.bias.zero_()

    def forward(self, features, next_ids, cache=None, mask=None):
        joined = self.join(torch.cat([features, self.body.model.embed_tokens(next_ids)], -1))
        return self.body.model(inputs_embeds=joined, attention_mask=mask, past_key_values=cache,
                               use_cache=cache is not None).last_hidden_state

    def logits(self, predicted):
        return predicted @ self.body.model.embed_tokens.weight.T


def training_batch(examples, passes, batch, noise, generator):
    """Inputs (f_t, token t+1), targets f_{t+1}, the mask, and per row the positions t whose
    prediction of token t+2 is an answer token the teacher scored, with those top-k lists."""
    width = max(sum(map(len, examples[i])) - 1 for i in batch)
    features = torch.zeros(len(batch), width, passes[batch[0]]["hidden"].shape[-1])
    targets, next_ids = torch.zeros_like(features), torch.zeros(len(batch), width, dtype=torch.long)
    mask, scored, top_ids, top_logprobs = torch.zeros_like(next_ids), [], [], []
    for row, i in enumerate(batch):
        ids, f = examples[i][0] + examples[i][1], passes[i]["hidden"].float()
        n, first = len(ids) - 1, len(examples[i][0]) - 1
        features[row, :n], targets[row, :n], mask[row, :n] = f[:n], f[1:], 1
        next_ids[row, :n] = torch.tensor(ids[1:])
        scored.append((row, torch.arange(first, n - 1)))  # teacher rows 1.. (row 0 comes from the prefill)
        top_ids.append(passes[i]["top_ids"][1:].long())
        top_logprobs.append(passes[i]["top_logprobs"][1:].float())
    features += (torch.rand(features.shape, generator=generator) - 0.5) * 2 * noise
    return features, next_ids, targets, mask, scored, torch.cat(top_ids), torch.cat(top_logprobs)


def train(draft, examples, passes, args):
    params = [p for p in draft.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    generator = torch.Generator().manual_seed(SEED)
    lengths = [sum(map(len, e)) for e in examples]
    steps = args.epochs * len(length_batches(lengths, args.batch_tokens))
    scheduler = get_cosine_schedule_with_warmup(optimizer, WARMUP_STEPS, steps)
    output_weight = draft.body.model.embed_tokens.weight
    for epoch in range(args.epochs):
        progress = tqdm(length_batches(lengths, args.batch_tokens, generator), desc=f"epoch {epoch + 1}/{args.epochs}")
        for batch in progress:
            features, next_ids, targets, mask, scored, top_ids, top_logprobs = training_batch(
                examples, passes, batch, args.noise, generator)
            predicted = draft(features, next_ids, mask=mask)
            regression = nn.functional.smooth_l1_loss(predicted[mask.bool()], targets[mask.bool()])
            vocabulary, positions = torch.unique(top_ids, return_inverse=True)
            rows = torch.cat([predicted[row, t] for row, t in scored])
            kl = top_k_kl(rows, output_weight[vocabulary], positions, top_logprobs)
            optimizer.zero_grad()
            (regression + args.kl_weight * kl).backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            scheduler.step()
            progress.set_postfix(regression=f"{regression.item():.3f}", kl=f"{kl.item():.3f}")
    return draft.eval()


def chain_result(hits, tries, accepted) -> dict:
    return {"conditional_agreement": [round(h / max(1, n), 4) for h, n in zip(hits, tries)],
            "mean_accepted": round(statistics.fmean(accepted), 4)}


@torch.no_grad()
def feature_chain(draft, target, heldout, k) -> dict:
    hits, tries, accepted = [0] * k, [0] * k, []
    for prompt, answer in heldout:
        ids = prompt + answer
        features = target.model(input_ids=torch.tensor([ids])).last_hidden_state
        first, cache = len(prompt) - 1, DynamicCache()
        draft(features[:, :first], torch.tensor([ids[1:first + 1]]), cache=cache)
        for t in range(first, len(ids) - 2):  # a block after token t+1, which f_t predicted
            predicted = draft(features[:, t:t + 1], torch.tensor([[ids[t + 1]]]), cache=cache)
            length = 0
            for depth, position in enumerate(range(t + 2, min(t + 2 + k, len(ids)))):
                tries[depth] += 1
                if draft.logits(predicted[0, -1]).argmax().item() != ids[position]:
                    break
                hits[depth] += 1
                length += 1
                predicted = draft(predicted, torch.tensor([[ids[position]]]), cache=cache)
            accepted.append(length)
            if length:  # back to the true features' positions 0..t
                cache.crop(-length)
    return chain_result(hits, tries, accepted)


@torch.no_grad()
def token_chain(draft, heldout, k) -> dict:
    """The same measure for a draft that reads only tokens: its guesses need no loop."""
    hits, tries, accepted = [0] * k, [0] * k, []
    for prompt, answer in heldout:
        ids = prompt + answer
        guesses = draft(input_ids=torch.tensor([ids])).logits[0].argmax(-1).tolist()
        for t in range(len(prompt) - 1, len(ids) - 2):
            length = 0
            for depth, position in enumerate(range(t + 2, min(t + 2 + k, len(ids)))):
                tries[depth] += 1
                if guesses[position - 1] != ids[position]:
                    break
                hits[depth] += 1
                length += 1
            accepted.append(length)
    return chain_result(hits, tries, accepted)


def median_ms(step, rounds=15, per_round=16) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(per_round):
            step()
        samples.append((time.perf_counter() - started) / per_round * 1000)
    return samples


@torch.inference_mode()
def step_costs(feature_draft, k, context=200) -> dict:
    """Medians of interleaved rounds, in ms: the target's one-token and (k+1)-token steps, and a
    one-token step of each draft as sd runs it, all at a `context`-token cache."""
    target, draft = load_model(embedded.DEFAULT_TARGET), load_model(embedded.DEFAULT_DRAFT)
    ids = torch.randint(100, 5000, (1, context), generator=torch.Generator().manual_seed(SEED))

    def stepper(forward, prefill, new):
        cache = DynamicCache()
        forward(prefill, cache)

        def step():
            forward(new, cache)
            cache.crop(-new.shape[1])
        return step

    token_draft, token_head = int8_twin(draft.model), pruned_head(draft.model, draft.tokenizer, DRAFT_VOCAB, int8=True)
    body = int8_twin(feature_draft.body)
    join = Int8Linear(feature_draft.join.weight.detach(), feature_draft.join.bias.detach())
    feature_head = pruned_head(target.model, target.tokenizer, DRAFT_VOCAB, int8=True)
    features = torch.randn(1, context, feature_draft.join.in_features // 2)

    def target_forward(x, cache):
        target.model(input_ids=x, past_key_values=cache, use_cache=True, logits_to_keep=x.shape[1])

    def token_forward(x, cache):
        token_head(token_draft.base_model(input_ids=x, past_key_values=cache, use_cache=True).last_hidden_state[:, -1:])

    def feature_forward(x, cache):
        joined = join(torch.cat([features[:, :x.shape[1]], body.model.embed_tokens(x)], -1))
        feature_head(body.model(inputs_embeds=joined, past_key_values=cache, use_cache=True).last_hidden_state[:, -1:])

    one, block = ids[:, -1:], ids[:, -k - 1:]
    steps = {"target": stepper(target_forward, ids, one), "target_block": stepper(target_forward, ids, block),
             "token_draft": stepper(token_forward, ids, one), "feature_draft": stepper(feature_forward, ids, one)}
    for step in steps.values():
        step()  # warm up
    samples = {name: [] for name in steps}
    for _ in range(15):
        for name, step in steps.items():
            samples[name] += median_ms(step, rounds=1)
    return {name: round(statistics.median(values), 3) for name, values in samples.items()}


def predicted_speedup(mean_accepted, draft_steps, c, verify) -> float:
    """Leviathan's model: tokens per round (the accepted ones plus the correction or bonus) over
    the round's cost in target steps."""
    return round((1 + mean_accepted) / (draft_steps * c + verify), 3)


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number: give 1 or more")
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work-dir", type=pathlib.Path, default=embedded.cache_dir().parent / "build-embedded")
    parser.add_argument("--out", type=pathlib.Path, required=True, help="folder for probe.json")
    parser.add_argument("--epochs", type=positive_int, default=5)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--kl-weight", type=float, default=1.0)
    parser.add_argument("--noise", type=float, default=0.05, help="uniform noise on the input features")
    parser.add_argument("--batch-tokens", type=positive_int, default=2048)
    parser.add_argument("--conversations", type=positive_int, default=None,
                        help="the first N stored ones (default: all)")
    parser.add_argument("--k", type=positive_int, default=4, help="block length for the chains and the prediction")
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(SEED)
    args.work_dir.mkdir(parents=True, exist_ok=True)
    target, tokenizer = load_prepared(embedded.DEFAULT_TARGET)
    examples = stored_conversations()[:args.conversations]
    # the recipe's teacher pass, recording the hidden states after the last layer (the final norm's output)
    depth = target.config.num_hidden_layers
    passes = cached(args.work_dir / f"teacher-{len(examples)}-depth-{depth}.pt",
                    lambda: teacher_pass(target, examples, tokenizer.pad_token_id, depth))
    started = time.perf_counter()
    draft = train(FeatureDraft(target), examples, passes, args)
    minutes = round((time.perf_counter() - started) / 60, 1)
    heldout = generate_answers(target, tokenizer, HELD_OUT, EVAL_MAX_NEW_TOKENS)
    chains = {"feature_draft": feature_chain(draft, target, heldout, args.k),
              "token_draft": token_chain(load_prepared(embedded.DEFAULT_DRAFT)[0], heldout, args.k)}
    costs = step_costs(draft, args.k)
    verify = costs["target_block"] / costs["target"]
    result = {"settings": {k: str(v) for k, v in vars(args).items()}, "conversations": len(examples),
              "training_minutes": minutes, "held_out_answer_tokens": sum(len(a) for _, a in heldout),
              "chains": chains, "step_ms": costs, "verify_cost": round(verify, 3)}
    for name, draft_steps in (("token_draft", args.k), ("feature_draft", args.k + 1)):
        # the feature draft also re-reads the accepted tokens with the target's features: one more step
        c = costs[name] / costs["target"]
        result[name] = {"c": round(c, 3), "predicted_speedup": predicted_speedup(
            chains[name]["mean_accepted"], draft_steps, c, verify)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "probe.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
