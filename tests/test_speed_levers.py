"""The CPU speed levers keep every method exact: prepacked weights, the int8 draft, the pruned draft
head and confidence-ended draft blocks; and the prediction that the stats show follows its formula."""

import time
from collections import Counter

import pytest
import torch
import torch.nn.functional as F

import playground
from playground.decoding.draft_vocab import pruned_head
from playground.decoding.int8_draft import Int8Linear, dense_weight, int8_twin
from playground.decoding.ngram import proposal
from playground.decoding.prepacked import PrepackedLinear, prepack_linears
from playground.decoding.speed import forward_costs
from playground.deploy.prompt_guard import format_prompt
from playground.errors import PlaygroundError
from playground.models.tiny import loaded, tiny_llama


def test_prepacked_linear_matches_torch_and_each_row_is_independent_of_the_row_count():
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 96)
    packed = PrepackedLinear(linear)
    x = torch.randn(1, 6, 64)
    with torch.no_grad():
        assert torch.allclose(packed(x), F.linear(x, linear.weight, linear.bias), atol=1e-5)
        six = packed(x)
        for rows in range(1, 6):  # verification over K+1 rows sees what one-token decoding sees
            assert torch.equal(packed(x[:, :rows]), six[:, :rows])


def test_prepacked_model_decodes_like_the_original(tokenizer):
    original = tiny_llama(len(tokenizer), layers=2, hidden=64, seed=5)
    packed = tiny_llama(len(tokenizer), layers=2, hidden=64, seed=5)
    replaced = prepack_linears(packed)
    assert replaced == 2 * 7 + 1  # seven maps per layer and the output layer
    assert packed.lm_head.weight is not None  # kept for a pruned draft head
    ids = torch.tensor([tokenizer("hello there").input_ids])
    with torch.no_grad():
        assert torch.allclose(packed(ids).logits, original(ids).logits, atol=1e-4)
    a = playground.generate("hello", method="ar", target=loaded("o", original, tokenizer), max_new_tokens=20)
    b = playground.generate("hello", method="ar", target=loaded("p", packed, tokenizer), max_new_tokens=20)
    assert [t.id for t in a.tokens] == [t.id for t in b.tokens]


def test_prepacking_can_be_switched_off(tokenizer, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_PREPACK", "0")
    model = tiny_llama(len(tokenizer))
    assert prepack_linears(model) == 0
    assert type(model.lm_head) is torch.nn.Linear


def test_int8_linear_stays_within_its_quantization_error():
    """Weights with one scale per output channel and 7-bit activations: each output is off by
    about a percent of the largest one."""
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 96)
    x = torch.randn(1, 6, 64)
    with torch.no_grad():
        exact, quantized = F.linear(x, linear.weight, linear.bias), Int8Linear(linear.weight, linear.bias)(x)
    error = (quantized - exact).abs().max() / exact.abs().max()
    assert 0 < error < 0.03


def test_a_prepacked_weight_reads_back_exactly():
    torch.manual_seed(1)
    linear = torch.nn.Linear(48, 80, bias=True)
    assert torch.equal(dense_weight(PrepackedLinear(linear)), linear.weight.detach())


def test_int8_twin_shares_the_draft_and_leaves_it_unchanged(tokenizer):
    model = tiny_llama(len(tokenizer), layers=2, hidden=64, seed=5)
    prepack_linears(model)
    twin = int8_twin(model)
    assert int8_twin(model) is twin  # built once per model
    assert type(twin.model.layers[0].mlp.up_proj) is Int8Linear
    assert type(model.model.layers[0].mlp.up_proj) is PrepackedLinear
    assert twin.model.embed_tokens.weight is model.model.embed_tokens.weight
    assert twin.lm_head is model.lm_head  # the output layer stays: a pruned head replaces it per run
    ids = torch.tensor([tokenizer("hello there").input_ids])
    with torch.no_grad():
        exact, quantized = model(ids).logits, twin(ids).logits
    assert 0 < (quantized - exact).abs().max() < 0.05 * exact.abs().max()  # about a percent per layer
    assert int8_twin(tiny_llama(len(tokenizer)).to(torch.bfloat16)).dtype == torch.bfloat16  # not applied


@pytest.mark.parametrize("enabled", [True, False])
def test_the_int8_option_decides_which_draft_runs(family, monkeypatch, enabled):
    calls = []
    forward = Int8Linear.forward
    monkeypatch.setattr(Int8Linear, "forward", lambda self, x: calls.append(1) or forward(self, x))
    greedy(family, "sd", candidates=4, draft_int8=enabled)
    assert bool(calls) == enabled


def test_pruned_head_scores_only_its_tokens(family):
    draft = family["draft"]
    head = pruned_head(draft.model, draft.tokenizer, 10)
    kept = set(head.token_ids.tolist())
    assert kept == set(range(10)) | {draft.tokenizer.eos_token_id}  # no shipped ranking: id order
    hidden = torch.randn(2, draft.model.config.hidden_size)
    logits = head(hidden)
    full = draft.model.lm_head(hidden)
    inside = torch.tensor(sorted(kept))
    assert torch.allclose(logits[:, inside], full[:, inside].detach(), atol=1e-5)
    outside = [i for i in range(logits.shape[-1]) if i not in kept]
    assert outside
    assert torch.isinf(logits[:, outside]).all() and (logits[:, outside] < 0).all()


def greedy(family, method, **options):
    result = playground.generate("hello there", method=method, target=family["target"], draft=family["draft"],
                                 max_new_tokens=40, temperature=0, **options)
    return result, [t.id for t in result.tokens]


@pytest.mark.parametrize("tree_width", [1, 2], ids=["chain", "tree"])
@pytest.mark.parametrize("options", [{"draft_vocab": 8, "draft_confidence": 0},
                                     {"draft_vocab": 0, "draft_confidence": 0.5},
                                     {"draft_vocab": 12, "draft_confidence": 0.3},
                                     {"draft_vocab": 0, "draft_confidence": 0, "draft_int8": True},
                                     {"draft_vocab": 0, "draft_confidence": 0, "draft_int8": False}],
                         ids=["pruned", "confidence", "both", "int8-only", "none"])
def test_levers_keep_greedy_sd_identical_to_the_target(family, options, tree_width):
    _, reference = greedy(family, "ar")
    _, ids = greedy(family, "sd", candidates=4, tree_width=tree_width, **options)
    assert ids == reference


def pruned_kept(family) -> set[int]:
    return set(pruned_head(family["draft"].model, family["draft"].tokenizer, 8).token_ids.tolist())


def test_pruned_draft_proposes_only_kept_tokens(family):
    result, _ = greedy(family, "sd", candidates=4, draft_vocab=8, tree_width=1)
    proposed = [t.id for t in result.tokens if t.origin == "draft"]
    proposed += [candidate for t in result.tokens for candidate in t.replaced_candidates]
    assert proposed and set(proposed) <= pruned_kept(family)


def test_a_pruned_drafts_tree_holds_only_kept_tokens_beside_the_lookup_branch(family):
    """The draft's chain and siblings come from its pruned head; a tree's prompt-lookup branch
    proposes what followed the context's last tokens before, whatever the head keeps."""
    result, _ = greedy(family, "sd", candidates=4, draft_vocab=8, tree_width=2)
    context = format_prompt(family["target"].tokenizer, "hello there", True)
    for step in result.steps:
        looked_up = set(proposal(context, 4)[0])
        assert set(step.extra["tree"]["tokens"]) - pruned_kept(family) <= looked_up
        context += [t.id for t in step.tokens]
    assert any(len(step.extra["tree"]["tokens"]) > step.forwards["draft"] for step in result.steps)  # siblings too


def test_confidence_ends_blocks_early(family):
    full, _ = greedy(family, "sd", candidates=6, draft_confidence=0, tree_width=1)
    early, _ = greedy(family, "sd", candidates=6, draft_confidence=0.6, tree_width=1)
    assert set(full.stats.block_sizes) <= {6, 5, 4, 3, 2, 1} and full.stats.block_sizes[6] > 0
    assert early.stats.drafted / early.stats.steps < full.stats.drafted / full.stats.steps
    assert min(early.stats.block_sizes) >= 1  # a block always has at least one candidate


def test_confidence_ends_a_trees_chain_early(family):
    """A tree's chain (its draft forwards) ends where the draft doubts, as a chain's block does;
    and with fewer doubted tokens to branch at, the tree has fewer nodes."""
    full, _ = greedy(family, "sd", candidates=6, draft_confidence=0, tree_width=2)
    early, _ = greedy(family, "sd", candidates=6, draft_confidence=0.6, tree_width=2)
    chains = Counter(step.forwards["draft"] for step in full.steps)
    assert set(chains) <= {6, 5, 4, 3, 2, 1} and chains[6] > 0
    assert early.stats.forwards["draft"] / early.stats.steps < full.stats.forwards["draft"] / full.stats.steps
    assert early.stats.drafted / early.stats.steps < full.stats.drafted / full.stats.steps
    assert min(step.forwards["draft"] for step in early.steps) >= 1


@pytest.mark.parametrize("option, value", [("draft_vocab", -1), ("draft_vocab", 2.5),
                                           ("draft_confidence", 1.5), ("draft_confidence", -0.1),
                                           ("draft_int8", "yes")])
def test_bad_lever_values_are_one_line_errors(family, option, value):
    with pytest.raises(PlaygroundError) as error:
        greedy(family, "sd", **{option: value})
    assert option in str(error.value) and "\n" not in str(error.value)


def test_a_pass_timed_long_ago_is_not_what_the_waits_expect(family, monkeypatch):
    """The waits told in the line read the typical recent pass (ui/sharing/eta.py), not one timed minutes
    earlier while the machine did something else."""
    model, clock = family["draft"].model, [time.monotonic() + 1e6]  # every earlier pass is stale
    monkeypatch.setattr(forward_costs.time, "monotonic", lambda: clock[0])
    forward_costs.record(model, 1, 123.0)
    assert forward_costs.typical(model, 1) == 123.0, "a recent pass is used as it is"
    clock[0] += forward_costs.FRESH_SECONDS + 1
    assert forward_costs.typical(model, 1) is None
