import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

# Tiny models gain nothing from threads, and two threads per process thrash on a 2-core machine.
torch.set_num_threads(1)

# After the environment above: huggingface_hub reads HF_HUB_OFFLINE when it is imported.
from playground.models.tiny import char_tokenizer, tiny_family  # noqa: E402
from playground.ui.pacing import Pacer  # noqa: E402


@pytest.fixture(scope="session")
def tokenizer():
    return char_tokenizer()


@pytest.fixture(scope="session")
def family(tokenizer):
    """A target, a weaker draft and a mid-size qualifier sharing one character vocabulary."""
    return tiny_family(tokenizer)


@pytest.fixture
def every_refresh(monkeypatch):
    """No pacing: a refresh after every step, so a short run on tiny models streams many views."""
    monkeypatch.setattr(Pacer, "spent", lambda pacer, seconds: None)
