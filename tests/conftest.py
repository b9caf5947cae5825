import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from tests.tiny import char_tokenizer, loaded, tiny_llama  # noqa: E402

ALPHABET = "abcdefghijklmnopqrstuvwxyz .,!?<>"


@pytest.fixture(scope="session")
def tokenizer():
    return char_tokenizer(ALPHABET)


@pytest.fixture(scope="session")
def family(tokenizer):
    """A target, a weaker draft and a mid-size qualifier sharing one character vocabulary."""
    vocab = len(tokenizer)
    return {
        "target": loaded("tiny-target", tiny_llama(vocab, layers=2, hidden=64, seed=1), tokenizer),
        "draft": loaded("tiny-draft", tiny_llama(vocab, layers=1, hidden=32, seed=2), tokenizer),
        "qualifier": loaded("tiny-qualifier", tiny_llama(vocab, layers=2, hidden=48, seed=3), tokenizer),
    }
