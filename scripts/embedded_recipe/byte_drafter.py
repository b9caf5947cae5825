"""Step 4: the byte drafter, a small Llama over bytes with its own tokenizer."""

import torch
import torch.nn.functional as F
from tqdm import tqdm
from transformers import LlamaConfig, LlamaForCausalLM, get_cosine_schedule_with_warmup, set_seed

from playground.measure.agreement import retokenized
from playground.models import embedded

from .batches import answer_positions, hidden_at_answers, length_batches, padded
from .settings import BYTE_DRAFT, PROMPTS, SEED, WARMUP_STEPS

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
    set_seed(seed)
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
    scheduler = get_cosine_schedule_with_warmup(optimizer, WARMUP_STEPS, steps)
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


def train_byte_drafter(tokenizer, prompts, examples) -> None:
    byte_tok = byte_tokenizer(tokenizer.chat_template)
    byte_data = retokenized(examples[:PROMPTS], prompts[:PROMPTS], tokenizer, byte_tok, BYTE_DRAFT["max_bytes"])
    byte_model = train_byte_draft(byte_tok, byte_data, BYTE_DRAFT, SEED)
    byte_model.to(torch.bfloat16).save_pretrained(embedded.ASSETS_DIR / "byte-draft")
    byte_tok.save_pretrained(embedded.ASSETS_DIR / "byte-draft")
