"""Incremental detokenization on the embedded family's real byte-level tokenizers."""

import pytest
from transformers import AutoTokenizer

from playground import embedded
from playground.text import Detokenizer

TEXT = "Hello, wörld! 你好 🙂 naïve café — “quotes”\n    return s[::-1]  # 🙃"


class PythonOnly:
    """The same tokenizer seen through its Python API only (no Rust backend to stream with)."""

    def __init__(self, tokenizer):
        self.decode = tokenizer.decode


@pytest.fixture(scope="module", params=["smollm2-135m", "byte-draft"])
def tokenizer(request):
    return AutoTokenizer.from_pretrained(embedded.cache_dir() / request.param)


@pytest.mark.parametrize("view", [lambda t: t, PythonOnly], ids=["rust-stream", "python-window"])
def test_pieces_add_up_to_the_text_and_never_split_a_character(tokenizer, view):
    ids = tokenizer(TEXT, add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
    detokenizer = Detokenizer(view(tokenizer))
    pieces = [detokenizer.push(i) for i in ids]
    assert "".join(pieces) == TEXT  # the special token at the end adds nothing
    assert not any("\ufffd" in piece for piece in pieces)
    assert "" in pieces  # multi-byte characters do span tokens: the buffering is exercised
