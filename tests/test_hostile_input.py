"""Hostile and malformed input: every call returns a run or one clear line, never a traceback."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import playground
from playground.cli import main
from playground.errors import PlaygroundError
from playground.models import load_model
from playground.policy import check_allowed

weird_floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([-1.0, 0.0, 1e9]))
options = st.fixed_dictionaries({}, optional={
    "method": st.one_of(st.sampled_from(sorted(playground.METHODS)), st.text(max_size=8)),
    "candidates": st.one_of(st.integers(-3, 8), st.just(10_000)),
    "max_new_tokens": st.one_of(st.integers(-3, 6), st.just(10**6)),
    "temperature": weird_floats, "top_p": weird_floats, "top_k": st.integers(-5, 100),
    "tau": weird_floats, "tau_q": weird_floats, "tau_t": weird_floats, "gate_tau": weird_floats,
    "lambda_": weird_floats, "random_accept": weird_floats, "seed": st.integers(0, 2**31),
    "divergence": st.sampled_from(["js", "tv", "kl", "kl-draft", "hellinger", ""]),
    "draft_length": st.integers(-2, 5), "qualifier_length": st.integers(-2, 9),
})
prompts = st.one_of(st.text(max_size=40), st.sampled_from(["\x00", "a\udcffb", "ok\x07", "x" * 30_000]))


def assert_one_line(error: Exception) -> None:
    message = str(error)
    assert message and "\n" not in message and "Traceback" not in message


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompt=prompts, chosen=options)
def test_api_returns_a_run_or_one_clear_line(family, prompt, chosen):
    try:
        run = playground.generate(prompt, target=family["target"], draft=family["draft"],
                                  qualifier=family["qualifier"], **chosen)
    except PlaygroundError as error:
        assert_one_line(error)
        return
    assert len(run.tokens) <= run.config.max_new_tokens
    assert not math.isnan(run.config.tau)


@pytest.mark.parametrize("args", [
    ["generate", "--prompt", "hi", "--candidates", "10000"],
    ["generate", "--prompt", "hi", "--tau", "nan"],
    ["generate", "--prompt", "hi", "--temperature", "-1"],
    ["generate", "--prompt", "hi", "--max-new-tokens", "0"],
    ["generate", "--prompt", "hi", "--candidates", "many"],
    ["generate", "--prompt", "hi", "--method", "nope"],
    ["generate", "--prompt", "\x00"],
    ["generate", "--prompt", "hi", "--target", "/no/such/dir"],
])
def test_cli_bad_parameters_give_one_line(args, capsys):
    try:
        code = main(args)
    except SystemExit as exit_info:  # argparse rejects some before any model loads
        code = exit_info.code
    err = capsys.readouterr().err.strip()
    assert code != 0
    assert len(err.splitlines()) == 1 and err.startswith("error:"), err


def test_public_mode_refuses_local_paths_and_unlisted_ids(monkeypatch, tmp_path):
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    for spec in (str(tmp_path), "someone/unlisted-model"):
        with pytest.raises(PlaygroundError, match="not allowed on this public deployment"):
            load_model(spec)
    check_allowed("smollm2-135m", trust_remote_code=False)  # embedded: allowed
    check_allowed("Qwen/Qwen2.5-0.5B-Instruct", trust_remote_code=False)  # a preset's model


def test_public_mode_never_trusts_remote_code(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    with pytest.raises(PlaygroundError, match="trust_remote_code"):
        load_model("smollm2-135m", trust_remote_code=True)


def test_space_turns_public_mode_on_by_default(monkeypatch, tmp_path):
    monkeypatch.delenv("PLAYGROUND_PUBLIC", raising=False)
    monkeypatch.setenv("SPACE_ID", "someone/playground")
    with pytest.raises(PlaygroundError, match="not allowed"):
        load_model(str(tmp_path))
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "0")
    with pytest.raises(PlaygroundError, match="not found|cannot load"):
        load_model(str(tmp_path / "missing"))


def test_a_model_larger_than_free_memory_is_refused_before_loading():
    from playground.policy import check_fits, free_memory_bytes

    free = free_memory_bytes("cpu")
    assert free and free > 0
    check_fits("small", free // 10, "cpu")
    with pytest.raises(PlaygroundError, match="needs about .* GB but only"):
        check_fits("huge", free * 2, "cpu")
