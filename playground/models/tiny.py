"""The tiny family: real transformers models and a character-level tokenizer built in code, with
random weights. Fast enough for tests and for quick runs of the bench scripts (`--family tiny`);
its text is noise, so it measures machinery, never quality."""

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from .loading import LoadedModel

ALPHABET = "abcdefghijklmnopqrstuvwxyz .,!?<>"
CHAT_TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
                 "{% if add_generation_prompt %}<assistant>{% endif %}")
SPECIALS = ["<unk>", "<eos>"]


def char_tokenizer(alphabet: str = ALPHABET) -> PreTrainedTokenizerFast:
    vocab = {token: i for i, token in enumerate(SPECIALS + list(dict.fromkeys(alphabet)))}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    backend.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="<eos>")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny_llama(vocab_size: int, layers: int = 2, hidden: int = 64, seed: int = 0,
               eos_token_id: int = 1) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512, eos_token_id=eos_token_id, bos_token_id=None,
                         pad_token_id=None, tie_word_embeddings=False)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # sharper distributions than the default init, so text is not uniform noise
        model.lm_head.weight.mul_(20.0)
    return model


def loaded(name: str, model, tokenizer) -> LoadedModel:
    return LoadedModel(name, model, tokenizer, "cpu", "float32")


def tiny_family(tokenizer=None) -> dict[str, LoadedModel]:
    """A target, a weaker draft and a mid-size qualifier sharing one vocabulary (by default the
    character tokenizer of `ALPHABET`)."""
    tokenizer = char_tokenizer() if tokenizer is None else tokenizer
    vocab = len(tokenizer)
    return {
        "target": loaded("tiny-target", tiny_llama(vocab, layers=2, hidden=64, seed=1), tokenizer),
        "draft": loaded("tiny-draft", tiny_llama(vocab, layers=1, hidden=32, seed=2), tokenizer),
        "qualifier": loaded("tiny-qualifier", tiny_llama(vocab, layers=2, hidden=48, seed=3), tokenizer),
    }


def foreign_draft() -> LoadedModel:
    """A tiny draft whose vocabulary numbers the same characters differently: a heterogeneous pair
    with the tiny target, as byte-draft is with the embedded one."""
    tokenizer = char_tokenizer(ALPHABET[::-1])
    return loaded("tiny-foreign-draft", tiny_llama(len(tokenizer), layers=1, hidden=32, seed=4), tokenizer)

