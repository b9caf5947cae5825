"""Hostile and malformed input: every call returns a run or one clear line, never a traceback."""

import json
import math
from dataclasses import fields

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import playground
from playground.cli import main
from playground.config import RunConfig
from playground.errors import PlaygroundError
from playground.models import embedded
from playground.models.loading import load_model
from playground.models.policy import check_allowed

weird_floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([-1.0, 0.0, 1e9]))
wrong_types = st.one_of(st.none(), st.booleans(), st.text(max_size=4), st.lists(st.integers(), max_size=1),
                        st.sampled_from([-2**70, -1, 2**70]), weird_floats)
by_type = {int: st.one_of(st.integers(-3, 10), st.just(2**64)), float: weird_floats, bool: st.booleans(),
           str: st.text(max_size=8)}
special = {
    "method": st.one_of(st.sampled_from(sorted(playground.METHODS)), st.text(max_size=8)),
    "divergence": st.sampled_from(["js", "tv", "kl", "kl-draft", "hellinger", ""]),
    "draft_sampling": st.sampled_from(["sample", "greedy", "best"]),
    "max_new_tokens": st.one_of(st.integers(-3, 6), st.just(10**6)),
    "memory": st.just(""),  # a path: see the file tests
}
# Every option, with values of its own type (good and bad) and of every wrong type.
options = st.fixed_dictionaries({}, optional={
    f.name: st.one_of(special.get(f.name, by_type[f.type]), wrong_types) for f in fields(RunConfig)})
prompts = st.one_of(st.text(max_size=40), st.sampled_from(["\x00", "a\udcffb", "ok\x07", "x" * 30_000]), wrong_types)


def assert_one_line(error: Exception) -> None:
    message = str(error)
    assert message and "\n" not in message and "Traceback" not in message


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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
    json.loads(run.to_json(), parse_constant=lambda name: pytest.fail(f"{name} in the JSON"))


@pytest.mark.parametrize("args", [
    ["generate", "--prompt", "hi", "--candidates", "10000"],
    ["generate", "--prompt", "hi", "--tau", "nan"],
    ["generate", "--prompt", "hi", "--temperature", "-1"],
    ["generate", "--prompt", "hi", "--max-new-tokens", "0"],
    ["generate", "--prompt", "hi", "--candidates", "many"],
    ["generate", "--prompt", "hi", "--method", "nope"],
    pytest.param(["generate", "--prompt", "\x00"], marks=pytest.mark.slow),  # loads the embedded family first
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


@pytest.fixture(scope="module")
def cli_paths(tmp_path_factory, tokenizer):
    from playground.models.tiny import tiny_llama  # noqa: PLC0415

    root = tmp_path_factory.mktemp("cli")
    for name, layers in (("target", 2), ("draft", 1)):
        tiny_llama(len(tokenizer), layers=layers).save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
    (root / "no-model").mkdir()
    (root / "file.txt").write_text("not a folder")
    return {"target": str(root / "target"), "draft": str(root / "draft"), "root": str(root),
            "no_model": str(root / "no-model"), "file": str(root / "file.txt")}


def cli_bad_inputs(paths: dict) -> dict[str, tuple[list, list]]:
    """Per subcommand: arguments that would run quickly, and (flag, value) pairs that are each bad
    (refused by argparse, by validation, or when the model loads)."""
    tiny = ["--target", paths["target"], "--draft", paths["draft"]]
    config_flags = []
    for f in fields(RunConfig):
        flag = f.metadata.get("flag", "--" + f.name.replace("_", "-"))
        if f.type is int:
            config_flags += [(flag, value) for value in ("x", "1.5", "")]
        elif f.type is float:
            config_flags += [(flag, value) for value in ("nan", "-inf", "x")]
        elif "choices" in f.metadata:
            config_flags.append((flag, "bogus"))
    models = [("--target", ""), ("--target", paths["no_model"]), ("--device", "tpu"), ("--dtype", "int8")]
    limits = [("--seed", str(2**64)), ("--candidates", "0"), ("--max-new-tokens", "0"), ("--temperature", "inf"),
              ("--temperature", "-1")]
    return {
        "generate": (["generate", "--prompt", "hi", *tiny, "--max-new-tokens", "2"],
                     [*config_flags, *models, *limits, ("--prompt", "\x00"), ("--prompt", " "),
                      ("--top-p", "0"), ("--device-map", "bogus")]),
        "calibrate": (["calibrate", "--out", paths["root"] + "/m.json", *tiny, "--limit", "1", "--max-new-tokens", "2"],
                      [*models, *limits, ("--out", paths["root"]), ("--corpus", paths["no_model"]),
                       ("--memory", paths["file"]), ("--limit", "x")]),
        "bench": (["bench", "--out", paths["root"] + "/bench", *tiny, "--limit", "1", "--methods", "sd",
                   "--max-new-tokens", "2", "--no-random-control"],
                  [*models, *limits, ("--threads", "-1"), ("--repeats", "0"), ("--limit", "0"), ("--taus", "x"),
                   ("--taus", "nan"), ("--methods", "nope"), ("--family", "nope"), ("--out", paths["file"])]),
        "serving": (["serving"], [("--candidates", "0"), ("--candidates", "x"), ("--method", "nope"),
                                  ("--target", "")]),
        "models": (["models"], [("--bogus", "1")]),
        "methods": (["methods"], [("--bogus", "1")]),
    }


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_cli_fuzz_every_subcommand_exits_2_with_one_line(cli_paths, capfd, data):
    cases = cli_bad_inputs(cli_paths)
    base, bad = cases[data.draw(st.sampled_from(sorted(cases)), label="subcommand")]
    chosen = data.draw(st.lists(st.sampled_from(bad), min_size=1, max_size=2), label="bad flags")
    try:
        code = main([*base, *[part for pair in chosen for part in pair]])
    except SystemExit as exit_info:  # argparse's refusals
        code = exit_info.code
    err = capfd.readouterr().err.strip().splitlines()
    assert code == 2, err
    assert len(err) == 1 and err[0].startswith("error:"), err


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
    from playground.models.policy import check_fits, free_memory_bytes

    free = free_memory_bytes("cpu")
    assert free and free > 0
    check_fits("small", free // 10, "cpu")
    with pytest.raises(PlaygroundError, match="needs about .* GB but only"):
        check_fits("huge", free * 2, "cpu")


def test_the_memory_estimate_is_the_loaded_models_weight_bytes():
    from transformers import AutoModelForCausalLM

    from playground.models.loading import estimate_memory_bytes

    loaded = AutoModelForCausalLM.from_pretrained(embedded.embedded_path("smollm2-135m"), dtype=torch.float32)
    weights = sum(p.numel() * p.element_size() for p in loaded.parameters())
    assert abs(estimate_memory_bytes("smollm2-135m", "float32") - weights) <= 0.001 * weights
    assert abs(estimate_memory_bytes("smollm2-135m", "bfloat16") - weights / 2) <= 0.001 * weights
