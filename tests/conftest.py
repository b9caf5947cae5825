import os

import pytest

# Before anything imports huggingface_hub, which reads HF_HUB_OFFLINE when it is imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

# The heavy imports (torch, transformers, gradio) are made by the fixtures, in the processes that
# run tests: pytest-xdist's controller reads this file too, and runs none (10 s of a core saved).


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    """Tiny models gain nothing from threads, and two threads per process thrash on a 2-core machine."""
    import torch  # noqa: PLC0415

    torch.set_num_threads(1)


@pytest.fixture(scope="session", autouse=True)
def own_downloads_folder(tmp_path_factory):
    """Each test process offers its downloads from a folder of its own: the shared one under /tmp
    is what the disk cap measures, and test sessions leave theirs behind (no app sweeps them), so
    a developer's machine filled it past the cap and the download tests failed in some orders."""
    from playground.ui.sharing import disk  # noqa: PLC0415

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(disk, "DOWNLOADS_ROOT", tmp_path_factory.mktemp("downloads"))
        yield


@pytest.fixture(autouse=True)
def no_ticks_between_runs(monkeypatch):
    """A job's lines are one per run ended, as most tests count them: a slow test machine's run would
    add a "going" line every few seconds. The ticks' own tests set them (test_ticks)."""
    from playground.ui.sharing import ticks  # noqa: PLC0415

    monkeypatch.setattr(ticks, "TICK_SECONDS", 3600.0)


@pytest.fixture(autouse=True)
def other_programs_unknown(monkeypatch):
    """What the other programs want is unknown unless a test sets it: an estimate paces on runs under
    the load of now (ui/sharing/eta.py), and beside a second test worker this machine's reading sits
    at half its cores, where a run recorded quiet is estimated busy."""
    from playground.ui.sharing import eta  # noqa: PLC0415

    monkeypatch.setattr(eta, "others_load", lambda moment=True: None)


@pytest.fixture(scope="session")
def tokenizer():
    from playground.models.tiny import char_tokenizer  # noqa: PLC0415

    return char_tokenizer()


@pytest.fixture(scope="session")
def family(tokenizer):
    """A target, a weaker draft and a mid-size qualifier sharing one character vocabulary."""
    from playground.models.tiny import tiny_family  # noqa: PLC0415

    return tiny_family(tokenizer)


@pytest.fixture
def every_refresh(monkeypatch):
    """No pacing: a refresh after every step, so a short run on tiny models streams many views."""
    from playground.ui.views.pacing import Pacer  # noqa: PLC0415

    monkeypatch.setattr(Pacer, "spent", lambda pacer, seconds: None)
