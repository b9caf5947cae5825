"""Teaching fidelity: steps carry the evidence their rule decided on, and step mode, tooltips and
exports show exactly those numbers, never recomputed ones."""

import copy
import json
import math
from dataclasses import asdict, replace
from html import unescape

import pytest
import torch

import playground
from playground.config import RunConfig
from playground.decoding import int8_draft
from playground.decoding.sampling import Sampler
from playground.decoding.step import Evidence
from playground.deploy.prompt_guard import format_prompt
from playground.methods import METHODS, Decoding
from playground.methods.acceptance import Threshold
from playground.methods.drafting import Drafted
from playground.methods.rules import ResidualRatio
from playground.methods.walk import decide
from playground.models.presets import Preset
from playground.models.tiny import char_tokenizer, loaded, tiny_llama
from playground.ui.handlers import Handlers
from playground.ui.options import all_controls
from playground.ui.views import explain_round, render
from playground.ui.views.explain_round import explain_step

KEY, PROMPT = "session", "hello there"


@pytest.fixture
def handlers(family):
    by_spec = {m.spec: m for m in family.values()}
    return Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier")])


def values(**overrides) -> list:
    chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 24} | overrides
    return [chosen[c.name] for c in all_controls()]


def stepped(handlers, method: str, **overrides):
    """One step-mode round: (explanation html, the Explanation, the decode function)."""
    _, _, html, _ = handlers.step(KEY, PROMPT, method, 0, *values(**overrides))
    stepping = handlers.sessions.get(KEY).stepping
    return html, stepping.explanation, stepping.decode


def test_step_mode_shows_the_numbers_the_sd_ratio_used_for_a_greedy_draft(handlers):
    # The draft drafts greedily, so q is one-hot on the candidate and min(1, p/q) = p(x): the
    # displayed p(x) must be the acceptance probability itself, and q(x) exactly 1.
    html, explanation, _ = stepped(handlers, "sd", temperature=0.7, draft_sampling="greedy", seed=2)
    assert explanation.checks
    for check in explanation.checks:
        assert check.at_candidate["q"] == 1.0
        assert check.at_candidate["p"] == pytest.approx(check.checks["accept_prob"], abs=1e-7)
        assert check.at_candidate["q_raw"] < 1.0  # the soft draft distribution is shown apart, as raw
        assert check.at_candidate["p"] != check.at_candidate["p_raw"]  # temperature 0.7 vs raw T=1
        shown = f"min(1, {check.at_candidate['p']:.4g} / 1) = {check.checks['accept_prob']:.4g}"
        assert shown in html


def test_step_mode_runs_no_forward_of_its_own(handlers, family, monkeypatch):
    calls = []
    draft = family["draft"].model
    for model in {family["target"].model, draft, int8_draft.int8_twin(draft)}:  # sd drafts with the twin
        monkeypatch.setattr(model, "forward", _counting(model.forward, calls))
    handlers.step(KEY, PROMPT, "sd", 0, *values(temperature=1.0, seed=1))
    run = handlers.sessions.get(KEY).stepping.run
    # The round's own forwards and the speed account's timing of T(1) after it, nothing more.
    assert len(calls) == sum(run.steps[0].forwards.values()) + run.stats.account.timing_passes


def _counting(forward, calls):
    def counted(*args, **kwargs):
        calls.append(1)
        return forward(*args, **kwargs)
    return counted


def test_the_engine_never_changes_a_step_once_yielded(family, monkeypatch):
    made, fuzzy = [], METHODS["fsd"]

    def recording(ctx):
        for step in fuzzy.run(ctx):
            made.append((step, copy.deepcopy(step.to_dict())))
            yield step

    monkeypatch.setitem(METHODS, "fsd", replace(fuzzy, run=recording))
    yielded = [(step, copy.deepcopy(step.to_dict()))
               for step, _ in playground.stream(PROMPT, method="fsd", temperature=1.0, max_new_tokens=30,
                                                target=family["target"], draft=family["draft"])]
    assert made and yielded
    assert all(step.to_dict() == snapshot for step, snapshot in made)  # the method's own objects
    assert all(step.to_dict() == snapshot for step, snapshot in yielded)  # what consumers got
    special = set(family["target"].tokenizer.all_special_ids)  # <unk> has no text of its own
    assert all(token.text for step, _ in yielded for token in step.tokens if token.id not in special)


def exported_run(handlers, **overrides) -> dict:
    """An sd run through the app, as its JSON export (with each step's evidence) wrote it."""
    list(handlers.generate(KEY, PROMPT, "sd", False, *values(temperature=1.0, seed=5, **overrides)))
    path, _ = handlers.export_json(KEY)
    exported = json.loads(open(path, encoding="utf-8").read())
    assert len(exported["evidence"]) == len(handlers.sessions.get(KEY).run.steps)
    return exported


def assert_top_tokens_ranked(check: dict) -> None:
    assert len(check["top"]["p"]) <= 8 and check["top"]["p"] == sorted(check["top"]["p"], key=lambda t: -t[1])


def test_tooltips_and_exports_carry_the_same_numbers_as_the_evidence(handlers):
    """A chain checks one candidate per position: each check's numbers are its token's own (a
    kept candidate) or those of the candidate it replaced (a correction)."""
    exported = exported_run(handlers, tree_width=1)
    checks = [check for step in exported["evidence"] for check in step]
    checked = [t.get("replaced", [t])[0] for t in exported["tokens"] if not t.get("bonus")]
    assert len(checks) == len(checked) > 0 and any("replaced" in t for t in exported["tokens"])
    for check, figures in zip(checks, checked):
        assert figures["accept_prob"] == check["checks"]["accept_prob"]
        assert figures["p_draft"] == check["at_candidate"]["q"]
        assert_top_tokens_ranked(check)


@pytest.mark.parametrize("method, options, kind", [
    ("sd", {}, "ratio"), ("fsd", {"tau": 0.5}, "threshold"), ("slem", {}, "draw")])
def test_a_checks_typed_numbers_are_its_rules_own(family, method, options, kind):
    """The views read a check's fields (step.RuleCheck), never its dict's keys: each rule's own
    numbers come out as fields, the same as the record's, for every check of a real run."""
    run = playground.generate("hello there", method=method, target=family["target"], draft=family["draft"],
                              temperature=1.0, seed=4, max_new_tokens=24, **options)
    checks = [(e.rule_check, e.checks) for step in run.steps for e in step.evidence]
    assert checks
    for check, figures in checks:
        assert all(getattr(check, name) == value for name, value in figures.items() if hasattr(check, name))
        assert check.is_ratio == (kind == "ratio") and check.has_draw == (kind == "ratio")
        assert check.reads_divergence == (kind == "threshold")
        assert (check.verifier_draw is not None) == (kind == "draw")
    kept = [t.check for t in run.tokens if t.block_position is not None and not t.is_correction and not t.bonus]
    assert all(check.is_ratio == (kind == "ratio") for check in kept)


def test_a_trees_tokens_and_exports_account_for_every_check(handlers):
    """A tree checks a node's candidates in turn: the token emitted there accounts for each check,
    one record format for all: the candidates rejected there (`replaced`, each with its own
    numbers) and, for a kept candidate, its own numbers last."""
    exported = exported_run(handlers, tree_width=2, draft_confidence=0.0)
    checks = iter(check for step in exported["evidence"] for check in step)
    decided = [t for t in exported["tokens"] if not t.get("bonus")]
    figures = [t.get("replaced", []) + ([] if "drawn_from" in t else [t]) for t in decided]
    assert sum(len(step) for step in exported["evidence"]) == sum(map(len, figures)) > len(decided) > 0
    assert any(t.get("branch") for t in decided) and any("drawn_from" in t for t in decided)
    for token, own in zip(decided, figures):
        mine = [next(checks) for _ in own]
        assert all(c["emitted"] == token["id"] and c["position"] == token["position_in_block"] for c in mine)
        replaced = [r["id"] for r in token.get("replaced", [])]
        assert [c["candidate"] for c in mine[:len(replaced)]] == replaced
        if "drawn_from" in token:
            assert {c["verdict"] for c in mine} == {"rejected"}
        else:
            *rejected, shown = mine
            assert {c["verdict"] for c in rejected} <= {"rejected"} and shown["verdict"] == "accepted"
            assert (shown["candidate"], shown["checks"]["branch"]) == (token["id"], token["branch"])
        for check, numbers in zip(mine, own):
            assert numbers["accept_prob"] == check["checks"]["accept_prob"]
            assert numbers["p_draft"] == check["at_candidate"]["q"]
        for check in mine:
            assert_top_tokens_ranked(check)


def test_psd_f_displays_the_inclusive_comparison_of_its_rule():
    def check(comparison: str) -> Evidence:
        test = Threshold("js", 0.25, 0.25, comparison)
        return Evidence("target", 0, 5, "accepted" if test.held else "rejected", 5,
                        {"divergence": 0.25, "tau": 0.25, "comparison": comparison}, {}, {"p": [], "r": []}, None, test)

    assert check("<=").test.held and not check("<").test.held
    assert "= 0.25 ≤ tau 0.25" in render.check_test(check("<="), str)  # psd: Div <= tau accepts
    assert "= 0.25 ≥ tau 0.25" in render.check_test(check("<"), str)  # fsd: Div < tau rejects


@pytest.mark.parametrize(("method", "kinds"), [("sd", {"ratio"}), ("fsd", {"threshold"}),
                                               ("psd-a", {"exact match", "threshold"}), ("csd", {"ratio", "rescue"})])
def test_each_rule_writes_its_own_test_and_the_verdict_follows_it(handlers, method, kinds):
    """Every check carries its rule's typed test; the verdict is what the test says (a rescue is a
    held test), and the exported evidence names its kind."""
    options = {"lambda_": 0.0, "gate_tau": 0.0} if method == "csd" else {}
    _, explanation, _ = stepped(handlers, method, temperature=1.0, seed=2, **options)
    checks = explanation.checks
    assert checks and all(check.test is not None for check in checks)
    assert {check.test.kind for check in checks} <= kinds
    for check in checks:
        assert check.test.held == (check.verdict in ("accepted", "rescued"))
        assert asdict(check)["test"]["kind"] == check.test.kind


def test_psd_f_step_mode_shows_both_stages(handlers):
    html, explanation, _ = stepped(handlers, "psd-f", temperature=1.0, seed=1, tau_q=0.3, tau_t=0.5)
    stages = [check.stage for check in explanation.checks]
    assert "qualifier" in stages and "target" in stages
    assert stages == sorted(stages, key=lambda stage: stage != "qualifier")  # stage 1 first
    assert "Stage 1: the qualifier checks" in html and "Stage 2: the target checks" in html
    for check in explanation.checks:
        expected = "≤" if check.checks["divergence"] <= check.checks["tau"] else ">"
        assert (expected == "≤") == (check.verdict == "accepted")
        assert f"{check.checks['divergence']:.4g} {expected} tau {check.checks['tau']:g}" in unescape(html)


@pytest.mark.parametrize("rule, shown", [("sample-qualifier", "r drew"), ("residual", "min(1, r(x) / q(x))")])
def test_psd_a_step_mode_says_which_rule_runs(handlers, rule, shown):
    html, explanation, _ = stepped(handlers, "psd-a", temperature=1.0, seed=3, assisted_rule=rule)
    assert any(check.stage == "qualifier" for check in explanation.checks)
    assert shown in html


@pytest.mark.parametrize("tree_width", [1, 2])
def test_csd_rescue_shows_the_memory_count_and_the_gate_ratio(family, tree_width):
    """The rescue's numbers are in its check (the exported evidence) and in the rescued token's
    record, in a chain as in a tree; step mode words them."""
    assert shown_rescues(family, tree_width), "the tiny family should produce some rescues at lambda = 1"


def rescue_figures(step, check) -> dict:
    """The rescue's figures as its check carries them, asserted equal to the rescued token's record's."""
    record = step.tokens[check.position].diagnostics
    names = ("correction", "memory_count", "lambda", "gate_ratio", "p_candidate_raw", "p_correction_raw")
    assert {name: check.checks[name] for name in names} == {name: record[name] for name in names}
    return check.checks


def shown_rescues(family, tree_width: int) -> int:
    """Check each rescue's step-mode words against its figures, and its gate ratio against a full
    forward of the target; returns how many rescues there were."""
    steps = [step for step, _ in playground.stream(
        PROMPT, method="csd", lambda_=1, gate_tau=0.05, max_new_tokens=150, seed=11, temperature=1.0,
        target=family["target"], draft=family["draft"], tree_width=tree_width)]
    decode = family["target"].tokenizer.decode
    context = format_prompt(family["target"].tokenizer, PROMPT, True)
    rescues = 0
    for step in steps:
        explanation = explain_step(step, playground.RunConfig(method="csd"))
        html = render.explanation_html(explanation, lambda i: decode([i]))
        for check in (c for c in step.evidence if c.verdict == "rescued"):
            rescues += 1
            c = rescue_figures(step, check)
            # by hand from a full forward of the target: p(x~) / p(t*) on raw logits
            prefix = context + [t.id for t in step.tokens[:check.position]]
            with torch.inference_mode():
                logits = family["target"].model(input_ids=torch.tensor([prefix])).logits[0, -1]
            ratio = math.exp(float(logits[check.candidate] - logits[c["correction"]]))
            assert c["gate_ratio"] == pytest.approx(ratio, rel=1e-3) and ratio >= 0.05
            assert c["memory_count"] >= c["lambda"] == 1
            assert (f"memory count {c['memory_count']} ≥ lambda 1; gate p(x~)/p(t*) = {c['p_candidate_raw']:.4g} / "
                    f"{c['p_correction_raw']:.4g} = {c['gate_ratio']:.4g} ≥ tau 0.05") in html
            assert "<td>rescued</td>" in html
        context += [t.id for t in step.tokens]
    return rescues


def test_slrs_step_mode_shows_its_ratio_against_psi(handlers, family):
    other = char_tokenizer("zyxwvutsrqponmlkjihgfedcba .,!?<>")
    models = {**{m.spec: m for m in family.values()},
              "other-draft": loaded("other-draft", tiny_llama(len(other), layers=1, hidden=32), other)}
    handlers.family.loader = models.__getitem__
    handlers.load(KEY, "tiny-target", "other-draft", "")
    shown = 0
    for _ in range(6):
        html, explanation, _ = stepped(handlers, "slrs", temperature=1.0, seed=2)
        for check in explanation.checks:
            c = check.checks
            if c["accept_prob"] is not None:
                assert c["accept_prob"] == pytest.approx(min(1.0, check.at_candidate["p"] / c["psi"]))
                assert f"min(1, {check.at_candidate['p']:.4g} / {c['psi']:.4g})" in html
                shown += 1
    assert shown


def hand_round(seed: int):
    """One tree round by hand over {A, B, C}: p = [0.6, 0.3, 0.1] at every row, q = [0.4, 0.4, 0.2];
    the root's children are B (drawn from q) and then A (drawn from q without B: [2/3, 0, 1/3])."""
    p, q = torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.4, 0.4, 0.2])
    drafted = Drafted()
    drafted.add(1, -1, q, q)
    drafted.add(0, -1, torch.tensor([2 / 3, 0.0, 1 / 3]), torch.tensor([2 / 3, 0.0, 1 / 3]))
    ctx = Decoding(RunConfig(temperature=1.0), Sampler(temperature=1.0, seed=seed), None, [], 0)
    rows = torch.stack([p, p, p])
    return decide(ctx, drafted, ResidualRatio(), rows, rows).step(drafted)


def test_step_mode_tells_one_story_of_a_hand_computed_tree_round():
    """B is kept with min(1, 0.3/0.4) = 0.75; once rejected, A meets the residual norm(max(0, p - q))
    = [1, 0, 0], so min(1, 1 / (2/3)) = 1 keeps it. Every row, the emitted table and the token's
    record agree: A is a draft sibling kept at its node, B the candidate it replaced, then a bonus."""
    step = next(s for s in map(hand_round, range(50)) if s.evidence[0].verdict == "rejected")
    rejected, kept = step.evidence
    assert rejected.test.accept_prob == pytest.approx(0.75) and rejected.test.u >= 0.75
    # A came from the walk, not from a draw
    assert (rejected.candidate, rejected.emitted, rejected.drawn_from) == (1, 0, None)
    assert kept.test.accept_prob == 1.0 and kept.at_candidate["p"] == pytest.approx(1.0)  # the residual's A
    assert kept.at_candidate["q"] == pytest.approx(2 / 3) and kept.verdict == "accepted"
    token, bonus = step.tokens
    assert (token.id, token.origin, token.branch, token.replaced_candidates) == (0, "draft", 1, [1])
    assert token.diagnostics["p_target"] == pytest.approx(0.6)  # the target's p of A, not the residual's
    assert token.replaced[0]["accept_prob"] == pytest.approx(0.75) and bonus.bonus
    html = unescape(render.explanation_html(explain_step(step, playground.RunConfig()), "ABC".__getitem__))
    assert "1 (p after the 1 sibling(s) rejected before it: the residual)" in html
    # q of A is q without B (2/3), not the bars' q (0.4): a reviewer read 0.2724 beside the bars' 0.2462
    assert "0.6667 (without the 1 sibling(s) drawn before it)" in html
    assert "drawn from" not in html  # no token of this round was drawn in place of the candidates
    assert "from branch 2 of its node (a sibling the tree added), after 1 rejected before it" in html
    assert "every candidate on the accepted path was kept" in html


def test_teaching_settings_say_they_changed_the_shared_sidebar(handlers):
    """The walkthrough's next Generate sampled at temperature 1 with full blocks, unannounced."""
    said = "**sd**: ...\n\nChoosing sd set draft_confidence = 0.6 (sd's own defaults)."
    handlers.step(KEY, PROMPT, "sd", 0, *values())
    status, note, text, explanation, bars, _ = handlers.teaching_set(KEY, said)
    assert (text, explanation, bars) == (None, None, None), "the greedy round stayed under 'step mode reset'"
    assert "temperature 1 and draft confidence 0 are set in the sidebar" in status
    assert "Generate, Compare and Race use too" in status and "step mode reset" in status
    # the method's note said draft_confidence = 0.6: it now says what the teaching settings set after it
    assert note.endswith("draft_confidence = 0.6 (sd's own defaults).\n\nThen step mode's Teaching settings set "
                         "temperature 1 and draft confidence 0.")
    assert handlers.teaching_set(KEY, note)[1] == note  # pressed again: said once
    assert handlers.sessions.get(KEY).stepping is None


def test_the_check_slider_spans_the_rounds_own_checks(handlers):
    """A reviewer's round had 3 checks and a slider of 0-63: the slider follows the round, and a
    check left past the end comes back to the round's last."""
    _, explanation, _ = stepped(handlers, "psd-f", temperature=1.0, seed=1, tau_q=0.3, tau_t=0.5)
    count = len(explanation.checks)
    slider = handlers.step_checks(KEY, 63)
    assert slider["value"] == count - 1 and slider["label"] == f"check: 0-{count - 1} in this round"
    assert slider["maximum"] == max(count - 1, 1)
    assert handlers.step_checks(KEY, float("nan"))["value"] == 0
    # A round of one check: a slider cannot run 0-0 (it ran 0-1, and 50 typed became 1), so it is not
    # draggable and says its one check.
    del explanation.checks[1:]
    one = handlers.step_checks(KEY, 50)
    assert one["value"] == 0 and one["interactive"] is False and one["label"] == "check 0, the only one in this round"


def test_the_residual_bar_shows_only_where_a_candidate_was_rejected(handlers):
    """A reviewer saw the residual, "a rejection draws from it", drawn at an accepted check."""
    seen = set()
    for seed in range(40):
        handlers.step(KEY, PROMPT, "sd", 0, *values(temperature=1.0, draft_confidence=0.0, seed=seed))
        stepping = handlers.sessions.get(KEY).stepping  # None once a run has ended: the next step starts one
        for check in stepping.explanation.checks if stepping else []:
            drawn = [label for label in explain_round.bars(check, stepping.decode) if label.startswith("residual")]
            assert bool(drawn) == (check.verdict == "rejected" and "residual" in check.top), check.verdict
            seen.add(check.verdict)
    assert {"accepted", "rejected"} <= seen
