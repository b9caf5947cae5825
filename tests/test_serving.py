"""Serving-engine equivalents: the exact options each engine names, and a plain no where none exists."""

import json
import shlex

import pytest

from playground.cli import main
from playground.errors import PlaygroundError
from playground.methods import METHODS
from playground.models import embedded
from playground.serving import SERVABLE, serving_commands


def test_sd_maps_to_both_engines_with_their_option_names():
    commands = serving_commands("sd", "org/target", "org/draft", 3)
    vllm = shlex.split(commands["vLLM"])
    assert vllm[:3] == ["vllm", "serve", "org/target"]
    assert json.loads(vllm[vllm.index("--speculative-config") + 1]) == {"model": "org/draft",
                                                                       "num_speculative_tokens": 3}
    sglang = shlex.split(commands["SGLang"])
    options = dict(zip(sglang[3::2], sglang[4::2]))
    assert options == {"--model-path": "org/target", "--speculative-algorithm": "STANDALONE",
                       "--speculative-draft-model-path": "org/draft", "--speculative-num-steps": "3",
                       "--speculative-eagle-topk": "1", "--speculative-num-draft-tokens": "4"}


def test_embedded_target_is_named_by_its_hub_id():
    commands = serving_commands("sd", embedded.DEFAULT_TARGET, embedded.DEFAULT_DRAFT, 4)
    assert embedded.HUB_TARGET in commands["vLLM"]
    assert str(embedded.cache_dir() / embedded.DEFAULT_DRAFT) in commands["SGLang"]


@pytest.mark.parametrize("method", [m for m in METHODS if m not in SERVABLE])
def test_other_methods_have_no_equivalent_and_the_cli_says_so(method, capsys):
    assert serving_commands(method, "t", "d", 4) == {}
    assert main(["serving", "--method", method]) == 0
    assert "no serving-engine equivalent" in capsys.readouterr().out


@pytest.mark.parametrize("args", [["--method", "nope"], ["--candidates", "0"]])
def test_bad_settings_are_one_line_errors(args, capsys):
    assert main(["serving", *args]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error:") and error.count("\n") == 1


def test_unknown_method_raises_the_projects_error():
    with pytest.raises(PlaygroundError):
        serving_commands("nope", "t", "d", 4)


def test_a_prompt_lookup_draft_maps_to_vllms_ngram_method_only():
    commands = serving_commands("sd", "org/target", "ngram", 4)
    vllm = shlex.split(commands.pop("vLLM"))
    assert json.loads(vllm[vllm.index("--speculative-config") + 1]) == {
        "method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 3}
    assert commands == {}  # SGLang's launcher is not given an n-gram drafter here


def test_a_tree_run_is_told_the_commands_draft_a_chain(capsys):
    assert main(["serving", "--tree", "2", "--candidates", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# This run drafted a token tree (tree width 2); these commands draft a chain of 3.")
    assert main(["serving"]) == 0
    assert "token tree" not in capsys.readouterr().out
