"""Token trees for sd: one target pass over every node (tree attention), a cache that keeps only
the accepted path, greedy output identical to the target's, and the option's edges. The sampling
proofs are the chi-square tests in test_sd_lossless.py."""

import json
import math
import re
from types import SimpleNamespace

import pytest
import torch

import playground
from playground.cli import main
from playground.config import RunConfig
from playground.decoding.cache import KVRunner
from playground.decoding.ngram import proposal
from playground.decoding.sampling import Sampler
from playground.decoding.token_tree import TokenTree
from playground.methods.base import Decoding
from playground.methods.drafting import _draft_position
from playground.ui.views.explain_round import explain_step
from playground.ui.views.render import explanation_html, tokens_html
from playground.ui.views.tree_view import checked_nodes, tree_html

PROMPT = "the cat sat on the mat"


def full_logits(model, sequence: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return model(torch.tensor([sequence])).logits[0, -1]


def branching_tree() -> TokenTree:
    """root -> a -> b -> c, root -> s1, a -> s2 -> s3 (parents first, as the drafter stores them)."""
    tree = TokenTree()
    a = tree.add(12, -1)
    b = tree.add(13, a)
    tree.add(14, b)
    tree.add(20, -1)
    s2 = tree.add(21, a)
    tree.add(22, s2)
    return tree


def test_one_tree_pass_gives_every_node_the_logits_of_its_own_path(family):
    model = family["target"].model
    runner, context = KVRunner(model), [3, 5, 7, 9, 11]
    runner.next_logits(context[:3])  # part of the context already cached
    tree = branching_tree()
    logits = runner.tree_logits(context, tree)
    assert torch.allclose(logits[0], full_logits(model, context), atol=1e-4)
    for node in range(len(tree)):
        path = [tree.tokens[i] for i in tree.path(node)]
        assert torch.allclose(logits[1 + node], full_logits(model, context + path), atol=1e-4), node


@pytest.mark.parametrize("kept", [[0, 4, 5], [0, 1], [3], []])
def test_the_cache_keeps_only_the_accepted_path(family, kept):
    model = family["target"].model
    runner, context, tree = KVRunner(model), [3, 5, 7, 9, 11], branching_tree()
    runner.tree_logits(context, tree)
    runner.keep_path(kept)
    accepted = context + [tree.tokens[node] for node in kept]
    assert runner.ids == accepted and runner.cache.get_seq_length() == len(accepted)
    after = accepted + [30]
    assert torch.allclose(runner.next_logits(after)[-1], full_logits(model, after), atol=1e-4)


def test_an_unsettled_tree_leaves_none_of_its_nodes_in_the_cache(family):
    model = family["target"].model
    runner, context = KVRunner(model), [3, 5, 7, 9, 11]
    runner.tree_logits(context, branching_tree())
    after = context + [20, 30]  # a sibling's token, as if it were the next context
    assert torch.allclose(runner.next_logits(after)[-1], full_logits(model, after), atol=1e-4)


@pytest.mark.parametrize("confidence", [0.0, 0.6])
@pytest.mark.parametrize("width", [2, 4])
@pytest.mark.parametrize("draft_sampling", ["sample", "greedy"])
def test_greedy_tree_sd_is_the_target_alone_token_for_token(family, width, confidence, draft_sampling):
    options = {"max_new_tokens": 40, "chat_template": False}
    reference = playground.generate(PROMPT, method="ar", target=family["target"], **options)
    run = playground.generate(PROMPT, method="sd", target=family["target"], draft=family["draft"], tree_width=width,
                              draft_confidence=confidence, draft_sampling=draft_sampling, **options)
    assert [t.id for t in run.tokens] == [t.id for t in reference.tokens]
    assert run.recorded_config()["tree_width"] == width


def test_greedy_tree_sd_with_a_lookup_branch_is_the_target_alone(family):
    """Where the context's last two tokens occurred before, the tree holds what followed them as a
    path from the root, beside the draft's own nodes."""
    echo, options = "abc cab abc cab abc", {"max_new_tokens": 40, "chat_template": False, "target": family["target"]}
    reference = playground.generate(echo, method="ar", **options)
    run = playground.generate(echo, method="sd", draft=family["draft"], tree_width=2, **options)
    assert [t.id for t in run.tokens] == [t.id for t in reference.tokens]
    ids, generated, branches = family["target"].tokenizer(echo).input_ids, 0, 0
    for step in run.steps:
        tree, block = step.extra["tree"], min(run.config.candidates, options["max_new_tokens"] - generated - 1)
        proposed, _ = proposal(ids, block)
        if proposed:
            branches += 1
            paths = [[tree["tokens"][i] for i in tree_path(tree, node)] for node in range(len(tree["tokens"]))]
            assert proposed in paths
        ids, generated = ids + [t.id for t in step.tokens], generated + len(step.tokens)
    assert branches > 0


def tree_path(tree: dict, node: int) -> list[int]:
    return TokenTree(tree["tokens"], tree["parents"], [0] * len(tree["tokens"])).path(node)


def test_a_tree_verifies_siblings_and_accepts_from_them(family):
    """With the tiny family's weak draft, some accepted tokens come from a sibling (branch > 0),
    and every round is one target pass over all its nodes."""
    run = playground.generate(PROMPT, method="sd", target=family["target"], draft=family["draft"], tree_width=4,
                              draft_confidence=0.0, max_new_tokens=60, chat_template=False, temperature=1.0, seed=1)
    trees = [step.extra["tree"] for step in run.steps]
    assert any(len(tree["tokens"]) > max(1, len(tree["path"])) for tree in trees)
    assert any((t.branch or 0) > 0 for t in run.tokens)
    assert all(step.forwards["target"] == 1 for step in run.steps)
    assert run.stats.drafted == sum(len(tree["tokens"]) for tree in trees)


def test_a_prompt_lookup_draft_runs_as_a_chain_and_says_so(family):
    run = playground.generate("abc cab abc cab", method="sd", draft="ngram", target=family["target"], tree_width=3,
                              max_new_tokens=10, chat_template=False)
    assert run.recorded_config()["tree_width"] == 1
    assert any("tree_width" in note and "prompt lookup" in note for note in run.notes)


@pytest.mark.parametrize("value, words", [(0, "between 1 and 8"), (9, "between 1 and 8"), ("3", "whole number")])
def test_a_bad_tree_width_is_one_line_naming_it(family, value, words):
    with pytest.raises(playground.PlaygroundError, match="tree_width") as error:
        playground.generate(PROMPT, method="sd", target=family["target"], draft=family["draft"], tree_width=value)
    assert words in str(error.value) and "\n" not in str(error.value)


def test_the_cli_takes_a_tree_and_records_it(family, tmp_path, capsys):
    for role in ("target", "draft"):
        family[role].model.save_pretrained(tmp_path / role)
        family[role].tokenizer.save_pretrained(tmp_path / role)
    args = ["generate", "--prompt", PROMPT, "--target", str(tmp_path / "target"), "--draft", str(tmp_path / "draft"),
            "--no-chat-template", "--max-new-tokens", "12", "--json", "--method", "sd", "--tree", "3"]
    assert main(args) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["config"]["tree_width"] == 3
    assert run["stats"]["drafted_per_pass"] >= run["stats"]["mean_acceptance_length"] - 1
    assert all("branch" in token for token in run["tokens"] if token["origin"] == "draft")


def test_step_mode_draws_the_tree_with_each_checked_node_and_the_kept_path(family):
    run = playground.generate(PROMPT, method="sd", target=family["target"], draft=family["draft"], tree_width=3,
                              draft_confidence=0.0, max_new_tokens=40, chat_template=False, temperature=1.0, seed=2)
    step = max(run.steps, key=lambda s: len(s.extra["tree"]["tokens"]))
    tree = step.extra["tree"]
    checked = checked_nodes(tree, step.evidence)
    assert len(checked) == len(step.evidence)  # every check names one node
    assert set(tree["path"]) <= set(checked)
    assert all(e.candidate == tree["tokens"][node] for node, e in checked.items())
    decode = family["target"].tokenizer.decode
    html = explanation_html(explain_step(step, run.config), lambda i: decode([i]))
    assert f"A token tree of {len(tree['tokens'])} nodes" in html
    assert html.count("tree-node tree-accepted") == len(tree["path"])
    assert html.count("tree-node tree-rejected") == len(checked) - len(tree["path"])
    # an unchecked node stands for its subtree: drawn ones plus those "below" them are all the rest
    below = sum(int(n) for n in re.findall(r'class="tree-below">\(\+(\d+) below\)', html))
    assert html.count("tree-node tree-unchecked") + below == len(tree["tokens"]) - len(checked)


def test_the_token_view_marks_tokens_from_a_branch_and_strikes_rejected_siblings(family):
    run = playground.generate(PROMPT, method="sd", target=family["target"], draft=family["draft"], tree_width=4,
                              draft_confidence=0.0, max_new_tokens=60, chat_template=False, temperature=1.0, seed=1)
    decode = family["target"].tokenizer.decode
    html = tokens_html(run.tokens, lambda i: decode([i]), show_rejected=True)
    from_branches = sum(1 for t in run.tokens if t.branch)
    struck = sum(len(t.replaced) for t in run.tokens)
    assert from_branches and html.count("tok-branch") == from_branches
    assert html.count("tok-rejected") == struck > sum(len(t.replaced) for t in run.tokens if t.is_correction)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_csd_on_a_tree_at_lambda_infinity_is_sd_on_the_same_tree(family, seed):
    """The paper's limit holds for trees too: csd offers sd's tree, and with no rescue it draws
    exactly what sd draws."""
    options = {"target": family["target"], "draft": family["draft"], "max_new_tokens": 40, "temperature": 1.0,
               "seed": seed, "chat_template": False, "tree_width": 3, "draft_confidence": 0.0}
    csd = playground.generate(PROMPT, method="csd", lambda_=math.inf, **options)
    assert [t.id for t in csd.tokens] == [t.id for t in playground.generate(PROMPT, method="sd", **options).tokens]
    assert csd.recorded_config()["tree_width"] == 3 and all("tree" in step.extra for step in csd.steps)


def test_a_gate_that_always_passes_rescues_the_drafts_own_token_of_a_rejected_node(family):
    run = playground.generate(PROMPT, method="csd-gate", target=family["target"], draft=family["draft"], gate_tau=0.0,
                              max_new_tokens=30, temperature=1.0, seed=3, chat_template=False, tree_width=3,
                              draft_confidence=0.0)
    rescued = [t for t in run.tokens if t.origin == "rescued"]
    assert rescued and all(t.branch == 0 and t.diagnostics["is_safe"] for t in rescued)
    for step in run.steps[:-1]:  # the last step's tokens may be cut at the length limit
        checks = [e for e in step.evidence if e.verdict == "rescued"]
        assert [e.candidate for e in checks] == [t.id for t in step.tokens if t.origin == "rescued"]
        assert all(e.test.rescued for e in checks)


def test_a_siblings_raw_distribution_is_the_one_it_was_drawn_from(family):
    """What threshold rules compare (docs/rules.md, "Fuzzy SD"): the chain's token meets the
    draft's raw q, each sibling q without the tokens drawn before it, renormalized."""
    from playground.config import RunConfig
    from playground.decoding.sampling import Sampler
    from playground.methods import Decoding
    from playground.methods.drafting import draft_tree

    prompt = family["target"].tokenizer("hello there").input_ids
    ctx = Decoding(RunConfig(temperature=1.0, tree_width=3, draft_confidence=0.0), Sampler(temperature=1.0, seed=4),
                   KVRunner(family["target"].model, "target"), list(prompt), len(prompt))
    drafted = draft_tree(ctx, KVRunner(family["draft"].model, "draft"), 3)
    tree = drafted.tree
    for parent in (-1, 0, 1):
        first, *siblings = [i for i in tree.children(parent) if not drafted.from_lookup[i]]
        taken = [tree.tokens[first]]
        for sibling in siblings:
            expected = drafted.q_raw[first].clone()
            expected[taken] = 0.0
            assert torch.allclose(drafted.q_raw[sibling], expected / expected.sum())
            taken.append(tree.tokens[sibling])
        assert siblings, "width 3 with the confidence stop off: siblings at every depth"


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_a_draft_that_scores_part_of_the_vocabulary_is_sampled_there_with_the_same_q(temperature):
    """A pruned head or a feature draft scores only its `support`: drafting there gives the q and
    q_raw that drafting over the whole vocabulary (-inf elsewhere) gives, and tokens and siblings
    from the support, spread back to the vocabulary's ids."""
    generator = torch.Generator().manual_seed(0)
    vocab, support = 300, torch.randperm(300, generator=generator)[:40]
    logits = torch.full((vocab,), -torch.inf)
    logits[support] = 3 * torch.randn(40, generator=generator)
    config = RunConfig(temperature=temperature, tree_width=3, draft_confidence=0.0)
    sparse, dense = (_draft_position(Decoding(config, Sampler(temperature=temperature, seed=1), None, [], 0),
                                     logits, 3, scored) for scored in (support, None))
    assert torch.allclose(sparse.q, dense.q) and torch.allclose(sparse.q_raw, dense.q_raw)
    tokens = sparse.numbers[0::2].tolist()  # the token, then each sibling's
    assert set(tokens) <= set(support.tolist()) and len(set(tokens)) == 3
    for q in sparse.sibling_qs:
        assert q.shape == (vocab,) and abs(float(q.sum()) - 1) < 1e-5 and float(q[sparse.token]) == 0
    if temperature == 0:
        assert sparse.numbers.tolist() == dense.numbers.tolist()
        assert all(torch.equal(a, b) for a, b in zip(sparse.sibling_qs, dense.sibling_qs, strict=True))


def test_an_unchecked_node_says_why_the_walk_left_it():
    """A reviewer saw a tree's siblings marked "unchecked" in step mode, and no reason."""
    check = SimpleNamespace
    tree = {"tokens": [10, 11, 12, 13, 14], "parents": [-1, -1, -1, 0, 1], "path": [1]}
    checks = [check(position=0, candidate=10), check(position=0, candidate=11)]  # 'A' rejected, 'B' kept
    html = tree_html(tree, checks, lambda e: "the test", lambda i: "ABCDE"[i - 10])
    assert "unchecked: the walk kept its sibling &#x27;B&#x27; at this depth" in html  # 'C'
    assert "unchecked: below a rejected token" in html  # 'D', under 'A'
    assert "unchecked: the walk ended at this depth before reaching it" in html  # 'E', under the kept 'B'
