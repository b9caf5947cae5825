"""Incremental detokenization on the embedded family's real byte-level tokenizers."""

import pytest
from transformers import AutoTokenizer

from playground.decoding.text import Detokenizer
from playground.models import embedded

TEXT = "Hello, wörld! 你好 🙂 naïve café — “quotes”\n    return s[::-1]  # 🙃"


@pytest.fixture(scope="module", params=["smollm2-135m", "byte-draft"])
def tokenizer(request):
    return AutoTokenizer.from_pretrained(embedded.cache_dir() / request.param)


def test_pieces_add_up_to_the_text_and_never_split_a_character(tokenizer):
    ids = tokenizer(TEXT, add_special_tokens=False).input_ids + [tokenizer.eos_token_id]
    detokenizer = Detokenizer(tokenizer)
    pieces = [detokenizer.push(i) for i in ids]
    assert "".join(pieces) == TEXT  # the special token at the end adds nothing
    assert not any("\ufffd" in piece for piece in pieces)
    assert "" in pieces  # multi-byte characters do span tokens: the buffering is exercised
