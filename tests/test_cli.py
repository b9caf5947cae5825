"""The CLI contract: JSON output, and one-line errors with a non-zero exit for bad input."""

import json
import os
import subprocess
import sys

import pytest

from playground.cli import main
from playground.models.tiny import char_tokenizer, tiny_llama


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory, tokenizer):
    """The tiny family saved to disk, plus a draft with another vocabulary, as the CLI sees them."""
    root = tmp_path_factory.mktemp("models")
    other = char_tokenizer("zyxwvutsrqponmlkjihgfedcba0123456789 ")
    specs = {"target": (tiny_llama(len(tokenizer), seed=1), tokenizer),
             "draft": (tiny_llama(len(tokenizer), layers=1, hidden=32, seed=2), tokenizer),
             "foreign": (tiny_llama(len(other), layers=1, hidden=32, seed=3), other)}
    for name, (model, tok) in specs.items():
        model.save_pretrained(root / name)
        tok.save_pretrained(root / name)
    return {name: str(root / name) for name in specs}


def run_cli(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
def test_generate_json_follows_the_contract(model_dirs):
    command = [sys.executable, "-m", "playground", "generate", "--method", "sd", "--prompt", "hello",
               "--target", model_dirs["target"], "--draft", model_dirs["draft"], "--max-new-tokens", "12",
               "--candidates", "3", "--json"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert set(run) == {"method", "config", "text", "tokens", "stats"}
    assert run["method"] == "sd" and run["config"]["candidates"] == 3
    assert len(run["tokens"]) == run["stats"]["tokens"] <= 12
    for token in run["tokens"]:
        assert {"id", "text", "origin"} <= set(token)
        assert token["origin"] in ("draft", "target")
    assert run["text"] == "".join(t["text"] for t in run["tokens"])


def assert_one_line_error(code, err, *needles):
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    for needle in needles:
        assert needle in lines[0]


def test_unknown_model_is_one_line_error(capsys, model_dirs):
    code, _, err = run_cli(["generate", "--prompt", "hi", "--target", "nobody/no-such-model-xyz",
                            "--draft", model_dirs["draft"]], capsys)
    assert_one_line_error(code, err, "nobody/no-such-model-xyz")


def test_draft_with_another_tokenizer_points_to_heterogeneous_methods(capsys, model_dirs):
    for method in ("sd", "fsd"):
        code, _, err = run_cli(["generate", "--method", method, "--prompt", "hi", "--target",
                                model_dirs["target"], "--draft", model_dirs["foreign"]], capsys)
        assert_one_line_error(code, err, "slem", "tli", "slrs")


def test_empty_prompt_is_one_line_error(capsys, model_dirs):
    code, _, err = run_cli(["generate", "--prompt", "  ", "--target", model_dirs["target"],
                            "--draft", model_dirs["draft"]], capsys)
    assert_one_line_error(code, err, "prompt")


def test_zero_candidates_is_one_line_error(capsys, model_dirs):
    code, _, err = run_cli(["generate", "--prompt", "hi", "--candidates", "0", "--target",
                            model_dirs["target"], "--draft", model_dirs["draft"]], capsys)
    assert_one_line_error(code, err, "candidates")


def test_bad_flag_value_is_one_line_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["generate", "--prompt", "hi", "--divergence", "hellinger"])
    assert exit_info.value.code == 2
    assert_one_line_error(2, capsys.readouterr().err, "divergence")


def test_models_lists_every_family_with_its_memory_and_the_embedded_figures(capsys, monkeypatch):
    from playground.models.embedded import EMBEDDED_MODELS  # noqa: PLC0415
    from playground.models.presets import load_presets  # noqa: PLC0415

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, out, _ = run_cli(["models"], capsys)
    assert code == 0
    lines = out.splitlines()
    for name in EMBEDDED_MODELS:
        assert any(line.split()[:1] == [name] for line in lines), f"embedded model {name} not listed"
    for name, preset in load_presets().items():
        [line] = [line for line in lines if line.split()[:1] == [name]]
        assert f"{preset.memory_bytes / 1e9:.2f} GB" in line and preset.fits in line
        assert ("gated" in line) == preset.gated
    embedded_line = next(line for line in lines if line.split()[:1] == ["embedded"])
    assert "available offline" in embedded_line
    draft_agreement = load_presets()["embedded"].measured["draft_agreement"]
    assert f"draft agreement {draft_agreement:.1%}" in out
