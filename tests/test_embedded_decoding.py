"""The decoding core on the real embedded SmolLM2 family (prepared by scripts/setup.sh)."""

import time

import pytest

import playground
from playground.errors import PlaygroundError

pytestmark = pytest.mark.slow  # the embedded SmolLM2 family

PROMPT = "Name three primary colors."


@pytest.fixture(scope="module")
def reference():
    return playground.generate(PROMPT, method="ar", max_new_tokens=24)


def ids(run):
    return [t.id for t in run.tokens]


def test_greedy_sd_on_the_embedded_family_reproduces_the_target(reference):
    run = playground.generate(PROMPT, method="sd", candidates=4, max_new_tokens=24)
    assert ids(run) == ids(reference)
    assert run.text == reference.text
    assert run.stats.accepted > 0  # the distilled draft does agree with the target sometimes


def test_fuzzy_sd_at_tau_zero_on_the_embedded_family_is_the_target(reference):
    run = playground.generate(PROMPT, method="fsd", tau=0.0, max_new_tokens=24)
    assert ids(run) == ids(reference)


@pytest.mark.parametrize("spec", ["meta-llama/Llama-3.2-1B-Instruct", "nobody/does-not-exist"])
def test_gated_or_unknown_hub_id_offline_fails_fast_with_one_line(spec, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.perf_counter()
    with pytest.raises(PlaygroundError) as error:
        playground.load_model(spec)
    assert time.perf_counter() - started < 15
    message = str(error.value)
    assert "\n" not in message and spec in message and "offline" in message
