"""Prompt-lookup drafting (`draft="ngram"`): the lookup itself, losslessness (greedy: the target's
own output; sampling: the target's joint distribution), the methods that take it, and the CLI."""

import json
import math

import pytest

import playground
from playground.cli import main
from playground.decoding.ngram import lookup
from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.options import all_controls

ECHO = "abc cab abc cab abc"  # a prompt whose continuations repeat it: lookups find matches


def test_lookup_takes_the_latest_occurrence_of_the_longest_tail():
    assert lookup([1, 2, 3, 9, 1, 2, 3, 7, 8, 2, 3], 2) == ([7, 8], 2)  # "2 3" last seen before 7 8
    assert lookup([5, 1, 2, 3, 4, 1, 2, 3], 3) == ([4, 1, 2], 3)
    assert lookup([4, 5, 6], 3) == ([], 0)  # the last token never occurred before
    assert lookup([7, 7], 4) == ([7], 1)
    assert lookup([1], 3) == ([], 0)


def test_greedy_prompt_lookup_is_the_target_alone_token_for_token(family):
    options = {"target": family["target"], "max_new_tokens": 40, "chat_template": False}
    reference = playground.generate(ECHO, method="ar", **options)
    run = playground.generate(ECHO, method="sd", draft="ngram", candidates=4, **options)
    assert [t.id for t in run.tokens] == [t.id for t in reference.tokens]
    assert run.stats.drafted > 0 and run.stats.forwards.get("draft", 0) == 0  # proposals cost no forward
    assert any(step.extra["ngram_match"] for step in run.steps)
    assert run.models["draft"] == "ngram" and run.recorded_config()["draft_int8"] is False
    assert run.notes == ["draft_int8, draft_vocab, draft_confidence, tree_width off: the draft is a prompt lookup, "
                         "not a model"]


def test_a_prompt_with_nothing_to_look_up_says_so(family):
    run = playground.generate("xyz", method="sd", draft="ngram", target=family["target"], max_new_tokens=1,
                              chat_template=False)
    assert any("found no earlier occurrence" in note for note in run.notes)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_csd_at_lambda_infinity_is_sd_with_a_prompt_lookup_draft(family, seed):
    options = {"target": family["target"], "draft": "ngram", "max_new_tokens": 30, "temperature": 1.0,
               "seed": seed, "chat_template": False}
    assert [t.id for t in playground.generate(ECHO, method="csd", lambda_=math.inf, **options).tokens] == \
        [t.id for t in playground.generate(ECHO, method="sd", **options).tokens]


def test_methods_that_need_a_draft_model_refuse_a_prompt_lookup_in_one_line(family):
    with pytest.raises(playground.PlaygroundError, match="psd-f cannot draft by prompt lookup") as error:
        playground.generate(ECHO, method="psd-f", draft="ngram", target=family["target"],
                            qualifier=family["qualifier"])
    assert "sd, fsd, csd" in str(error.value) and "\n" not in str(error.value)


def test_cli_drafts_by_prompt_lookup(family, tmp_path, capsys):
    family["target"].model.save_pretrained(tmp_path / "target")
    family["target"].tokenizer.save_pretrained(tmp_path / "target")
    args = ["generate", "--prompt", ECHO, "--target", str(tmp_path / "target"), "--no-chat-template",
            "--max-new-tokens", "20", "--json"]
    assert main([*args, "--method", "sd", "--draft", "ngram"]) == 0
    lookup_run = json.loads(capsys.readouterr().out)
    assert main([*args, "--method", "ar"]) == 0
    assert [t["id"] for t in lookup_run["tokens"]] == [t["id"] for t in json.loads(capsys.readouterr().out)["tokens"]]
    assert lookup_run["config"]["models"]["draft"] == "ngram"


def test_the_app_runs_a_prompt_lookup_draft_typed_in_the_draft_box(family):
    by_spec = {m.spec: m for m in family.values()}
    handlers = Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft")])
    status, described, dropdown = handlers.load("k", "tiny-target", "ngram", "")
    assert "loaded tiny-target, ngram" in status and "prompt lookup, no model" in described
    assert {name for _, name in dropdown.choices} == {"ar", "sd", "fsd", "csd", "csd-memory", "csd-gate"}
    values = [{"max_new_tokens": 20, "temperature": 1.0}.get(c.name, c.default) for c in all_controls()]
    for method in ("sd", "csd"):
        assert "done: 20 tokens" in list(handlers.generate("k", ECHO, method, False, *values))[-1][0]
