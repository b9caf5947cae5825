"""Feature drafts (EAGLE-3): a head written here in the public format (config, `fc`, `midlayer.*`,
`norm`, `lm_head`, `d2t`, `t2d`) loads as a draft, drafts from the target's own features, and sd
with it stays lossless (greedy identical to the target alone; sampled, the target's distribution).
Bad heads are refused in one line."""

import json
from dataclasses import replace

import pytest
import torch
from safetensors.torch import save_file

import playground
from playground.decoding.int8_draft import Int8Linear
from playground.decoding.sampling import Sampler
from playground.errors import PlaygroundError
from playground.methods import METHODS, Decoding
from playground.methods.draft_levers import draft_setup
from playground.models.loading import load_model
from playground.models.tiny import tiny_llama

from .forked import counts_over_seeds
from .test_sd_lossless import ALPHA, chi_square_p_value, exact_joint

PROMPT = "the cat sat"


def write_head(folder, target, tokenizer, draft_tokens: list[int], layer_ids: list[int], seed: int = 0, width=None):
    """A random head for `target` in the public format, scoring `draft_tokens` (q = 0 elsewhere)."""
    config = target.config
    width = width or config.hidden_size
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    head_dim = width // heads
    generator = torch.Generator().manual_seed(seed)

    def weight(rows, columns, scale=0.3):
        return torch.randn(rows, columns, generator=generator) * scale / columns ** 0.5

    tensors = {"fc.weight": weight(width, 3 * config.hidden_size),
               "midlayer.input_layernorm.weight": torch.ones(width),
               "midlayer.hidden_norm.weight": torch.ones(width),
               "midlayer.post_attention_layernorm.weight": torch.ones(width),
               "midlayer.self_attn.q_proj.weight": weight(heads * head_dim, 2 * width),
               "midlayer.self_attn.k_proj.weight": weight(kv_heads * head_dim, 2 * width),
               "midlayer.self_attn.v_proj.weight": weight(kv_heads * head_dim, 2 * width),
               "midlayer.self_attn.o_proj.weight": weight(width, heads * head_dim),
               "midlayer.mlp.gate_proj.weight": weight(2 * width, width),
               "midlayer.mlp.up_proj.weight": weight(2 * width, width),
               "midlayer.mlp.down_proj.weight": weight(width, 2 * width),
               "norm.weight": torch.ones(width),
               "lm_head.weight": weight(len(draft_tokens), width, scale=8.0),
               "d2t": torch.tensor(draft_tokens) - torch.arange(len(draft_tokens)),
               "t2d": torch.isin(torch.arange(config.vocab_size), torch.tensor(draft_tokens))}
    folder.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": width,
        "intermediate_size": 2 * width, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "num_hidden_layers": 1, "rms_norm_eps": 1e-6, "vocab_size": config.vocab_size,
        "draft_vocab_size": len(draft_tokens), "target_hidden_size": config.hidden_size,
        "max_position_embeddings": 512, "eagle_config": {"eagle_aux_hidden_state_layer_ids": layer_ids}}))
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def head(family, tmp_path_factory):
    target = family["target"]
    tokens = list(range(0, len(family["target"].tokenizer), 2))  # every other token: q = 0 on the rest
    folder = write_head(tmp_path_factory.mktemp("head"), target.model, target.tokenizer, tokens, [0, 1, 1])
    return load_model(str(folder))


def test_a_published_format_head_loads_as_a_draft(head):
    assert type(head.model).__name__ == "FeatureDraft"
    assert head.model.layer_ids == [0, 1, 1]
    assert head.model.config.draft_vocab_size == len(range(0, len(head.tokenizer), 2))


@pytest.mark.parametrize("tree_width", [1, 2], ids=["chain", "tree"])
def test_greedy_sd_with_a_feature_draft_writes_the_targets_own_text(family, head, tree_width):
    alone = playground.generate(PROMPT, target=family["target"], method="ar", temperature=0, max_new_tokens=40)
    run = playground.generate(PROMPT, target=family["target"], draft=head, method="sd", temperature=0,
                              max_new_tokens=40, tree_width=tree_width, candidates=4)
    assert [t.id for t in run.tokens] == [t.id for t in alone.tokens]
    assert sum(step.drafted for step in run.steps) > 0


def test_the_int8_lever_quantizes_a_feature_drafts_output_layer_too(family, head):
    """The lever left the head's output layer (8,192 x 576, read whole at every drafted token) in
    float32: most of its step on this CPU. A draft model's is the pruned head's to quantize; a
    feature draft has none, so the lever takes its own."""
    config = playground.RunConfig(method="sd")
    assert config.draft_int8
    runner = draft_setup(config, METHODS["sd"], head, family["target"]).runner
    assert isinstance(runner.model.lm_head, Int8Linear) and isinstance(runner.model.fc, Int8Linear)
    plain = draft_setup(replace(config, draft_int8=False), METHODS["sd"], head, family["target"]).runner
    assert plain.model.lm_head is head.model.lm_head

def test_the_head_reads_the_targets_features_without_another_target_pass(family, head):
    """After the first round (which reads the prompt), one target forward per round: the head's
    features come from the verification passes themselves."""
    run = playground.generate(PROMPT, target=family["target"], draft=head, method="sd", temperature=0,
                              max_new_tokens=30)
    assert [step.forwards.get("target") for step in run.steps[1:]] == [1] * (len(run.steps) - 1)


def sampled_pairs(family, head, settings, samples, tree_width):
    target = family["target"]
    config = playground.RunConfig(method="sd", candidates=2, max_new_tokens=2, tree_width=tree_width, **settings)
    prompt = target.tokenizer("ab").input_ids

    def count(seeds: range) -> dict:
        counts = {}
        for seed in seeds:
            setup = draft_setup(config, METHODS["sd"], head, target)
            ctx = Decoding(setup.config, Sampler(seed=seed, **settings), setup.target_runner, list(prompt),
                           len(prompt), draft=setup.runner, target_tokenizer=target.tokenizer,
                           draft_tokenizer=head.tokenizer)
            emitted = []
            for step in METHODS["sd"].run(ctx):
                emitted += [t.id for t in step.tokens]
                ctx.ids += [t.id for t in step.tokens]
                if len(emitted) >= 2:
                    break
            counts[tuple(emitted[:2])] = counts.get(tuple(emitted[:2]), 0) + 1
        return counts
    return counts_over_seeds(count, samples)


@pytest.mark.slow
@pytest.mark.parametrize("tree_width", [1, 2], ids=["chain", "tree"])
def test_sampled_sd_with_a_feature_draft_follows_the_targets_distribution(family, head, tree_width):
    settings, samples = {"temperature": 1.0}, 5000
    counts = sampled_pairs(family, head, settings, samples, tree_width)
    joint = exact_joint(family["target"], settings, "ab")
    assert chi_square_p_value(counts, joint, samples) > ALPHA


def test_a_head_for_another_target_is_refused_in_one_line(family, tmp_path):
    target = family["target"]
    wider = tiny_llama(len(target.tokenizer), layers=2, hidden=96, seed=5)
    folder = write_head(tmp_path / "wide", wider, target.tokenizer, [0, 1, 2], [0, 1, 1])
    with pytest.raises(PlaygroundError) as refused:
        playground.generate(PROMPT, target=target, draft=load_model(str(folder)), method="sd", max_new_tokens=4)
    message = str(refused.value)
    assert "\n" not in message and "96" in message and str(target.model.config.hidden_size) in message


def test_a_method_that_cannot_take_a_feature_draft_says_which_can(family, head):
    with pytest.raises(PlaygroundError, match="cannot draft with a feature draft.*use one of sd"):
        playground.generate(PROMPT, target=family["target"], draft=head, qualifier=family["qualifier"],
                            method="psd-f", max_new_tokens=4)


def test_a_head_without_its_targets_tokenizer_says_what_to_copy(family, tmp_path):
    target = family["target"]
    folder = write_head(tmp_path / "bare", target.model, target.tokenizer, [0, 1, 2], [0, 1, 1])
    for file in folder.glob("*token*"):
        file.unlink()
    with pytest.raises(PlaygroundError, match="has no tokenizer: copy its target's tokenizer files"):
        load_model(str(folder))


def test_a_family_with_a_feature_draft_offers_the_methods_that_take_one(family, head):
    from playground.ui.tabs.family_panel import runnable_methods  # noqa: PLC0415

    offered = [name for _, name in runnable_methods({"target": family["target"], "draft": head})]
    assert {"ar", "sd", "fsd", "csd"} <= set(offered)
    assert not {"draft-only", "tli", "slem", "slrs", "psd-f"} & set(offered)


def test_the_runner_drafts_what_the_head_gives_reading_the_targets_features_in_one_pass(family, head):
    """Round by round through the runners, the head's next-token scores equal those of one pass of
    the head over the target's features of the whole text (as the recipe trains and measures it)."""
    from playground.decoding.cache import KVRunner  # noqa: PLC0415
    from playground.decoding.feature_runner import FeatureRunner  # noqa: PLC0415

    target, model = family["target"].model, head.model
    ids = family["target"].tokenizer("the cat sat on the mat").input_ids
    with torch.no_grad():
        states = target(torch.tensor([ids]), output_hidden_states=True).hidden_states
        features = model.fuse(torch.cat([states[i] for i in model.layer_ids], dim=-1))[:, :-1]
        output, _, _ = model(features, target.get_input_embeddings()(torch.tensor([ids[1:]])),
                             torch.arange(len(ids) - 1)[None])
        whole = model.logits(output[0])
    runner = KVRunner(target, "target", feature_layers=model.layer_ids)
    drafts = FeatureRunner(model, runner, target.get_input_embeddings())
    for length in range(3, len(ids) + 1):
        runner.next_logits(ids[:length])  # the target has read the text, as after a round
        scores = drafts.next_logits(ids[:length])[0][model.target_ids(torch.arange(model.config.draft_vocab_size))]
        assert torch.allclose(scores, whole[length - 2], atol=1e-4), length


def test_a_head_reading_the_targets_normed_output_drafts_and_one_past_it_is_refused(family, tmp_path):
    """Id L (the target's layer count) is the last layer's normed output, what the target's own
    head reads; L + 1 names nothing."""
    target = family["target"]
    count = target.model.config.num_hidden_layers
    output = load_model(str(write_head(tmp_path / "top", target.model, target.tokenizer, [0, 2, 4], [0, 1, count])))
    alone = playground.generate(PROMPT, target=target, method="ar", temperature=0, max_new_tokens=24)
    run = playground.generate(PROMPT, target=target, draft=output, method="sd", temperature=0, max_new_tokens=24)
    assert [t.id for t in run.tokens] == [t.id for t in alone.tokens]
    past = load_model(str(write_head(tmp_path / "past", target.model, target.tokenizer, [0, 2, 4], [0, 1, count + 1])))
    with pytest.raises(PlaygroundError, match=f"reads target layers \\[0, 1, {count + 1}\\]; this target has {count}"):
        playground.generate(PROMPT, target=target, draft=past, method="sd", max_new_tokens=4)
