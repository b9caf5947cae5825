"""Speculative decoding across vocabularies (seed 004): SLEM, TLI, SLRS.

Greedy runs must equal the target's own greedy output; sampled runs must follow the target's
distribution (chi-square at level ALPHA); measured acceptance rates must match Table 3."""

from types import SimpleNamespace

import pytest
import torch
from scipy.stats import chisquare
from tokenizers import Regex, Tokenizer, decoders, models, normalizers
from transformers import PreTrainedTokenizerFast

import playground
from playground.config import RunConfig
from playground.decoding.sampling import Sampler
from playground.decoding.vocabulary import intersection, token_strings, tokenize_continuation
from playground.methods import Decoding
from playground.methods.heterogeneous import same_vocabulary_note, slrs
from playground.methods.heterogeneous.slrs import StringProposer, TargetSplitter, string_rejection_sample
from playground.methods.rules import ResidualRatio
from playground.models.tiny import ALPHABET, CHAT_TEMPLATE, SPECIALS, char_tokenizer, loaded, tiny_llama

from .walk_checks import check_candidate

ALPHA = 1e-3  # a correct sampler fails a chi-square test once in a thousand
MERGES = [("t", "h"), ("th", "e"), ("e", " "), (" ", "t"), ("a", "n"), ("i", "n"), ("e", "r"),
          ("h", "e"), ("l", "l"), ("o", " ")]
NON_INJECTIVE = normalizers.Sequence([normalizers.Lowercase(), normalizers.Replace(Regex("  +"), " ")])


def bpe_tokenizer(alphabet: str, merges, normalizer=None):
    """Characters plus merged multi-character tokens; ids of the characters as in char_tokenizer."""
    tokens = SPECIALS + list(dict.fromkeys(alphabet)) + ["".join(pair) for pair in merges]
    backend = Tokenizer(models.BPE({token: i for i, token in enumerate(tokens)}, merges, unk_token="<unk>"))
    if normalizer is not None:
        backend.normalizer = normalizer
    backend.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="<eos>")
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def sliced_copy(model, vocab: int, layers: int = 2, hidden: int = 64, seed: int = 1):
    """A model over the first `vocab` ids of `model`'s vocabulary, with its weights: a drafter over
    a smaller (character) vocabulary that agrees with the target often enough to be accepted."""
    draft = tiny_llama(vocab, layers=layers, hidden=hidden, seed=seed)
    draft.load_state_dict({name: weight[:vocab] if weight.shape[0] == model.config.vocab_size else weight
                           for name, weight in model.state_dict().items()})
    return draft


@pytest.fixture(scope="module")
def pairs():
    """Target with multi-character tokens; drafter over characters only, one of the two
    non-injective (it lowercases and merges runs of spaces)."""
    built = {}
    for name, target_normalizer, draft_normalizer in (("draft-normalizes", None, NON_INJECTIVE),
                                                      ("target-normalizes", NON_INJECTIVE, None)):
        target_tokenizer = bpe_tokenizer(ALPHABET, MERGES, target_normalizer)
        draft_tokenizer = char_tokenizer(ALPHABET)
        if draft_normalizer is not None:
            draft_tokenizer.backend_tokenizer.normalizer = draft_normalizer
        target = tiny_llama(len(target_tokenizer), seed=1)
        draft = sliced_copy(target, len(draft_tokenizer))
        built[name] = (loaded("bpe-target", target, target_tokenizer), loaded("char-draft", draft, draft_tokenizer))
    return built


def generate(target, draft, method, **options):
    options = {"max_new_tokens": 30, "temperature": 0, **options}
    return playground.generate("Hello  there", target=target, draft=draft, method=method, **options)


def ids(run):
    return [token.id for token in run.tokens]


@pytest.mark.parametrize("pair", ["draft-normalizes", "target-normalizes"])
def test_greedy_slem_reproduces_target_greedy_across_non_injective_tokenizers(pairs, pair):
    target, draft = pairs[pair]
    reference = generate(target, draft, "ar")
    for k in (1, 4):
        run = generate(target, draft, "slem", candidates=k)
        assert ids(run) == ids(reference)
        assert run.stats.accepted > 0
        for token in run.tokens:
            if token.origin == "draft":
                assert token.diagnostics["draft_tokens"] and token.diagnostics["draft_text"]


def test_look_behind_realigns_a_token_that_straddles_the_boundary():
    tokenizer = bpe_tokenizer(ALPHABET, MERGES)
    committed = tokenizer("at", add_special_tokens=False).input_ids  # 'a', 't'
    continuation = tokenize_continuation(tokenizer, committed, "he end")  # 't'+'he' would merge to 'the'
    assert continuation.realigned
    assert tokenizer.decode(committed + continuation.tokens) == "athe end"
    clean = tokenize_continuation(tokenizer, committed, " end")
    assert tokenizer.decode(committed + clean.tokens) == "at end"


@pytest.mark.parametrize("pair", ["draft-normalizes", "target-normalizes"])
def test_greedy_tli_and_slrs_reproduce_target_greedy(pairs, pair):
    target, draft = pairs[pair]
    reference = ids(generate(target, draft, "ar"))
    assert ids(generate(target, draft, "tli", candidates=3)) == reference
    assert ids(generate(target, draft, "slrs")) == reference


@pytest.mark.parametrize("method", ["slem", "tli", "slrs"])
def test_same_vocabulary_pair_still_works(family, method):
    reference = generate(family["target"], family["draft"], "ar")
    run = generate(family["target"], family["draft"], method, candidates=3)
    assert ids(run) == ids(reference)
    assert "sd" in same_vocabulary_note(run)


def test_tli_reports_the_intersection(pairs):
    target, draft = pairs["draft-normalizes"]
    run = generate(target, draft, "tli", max_new_tokens=3)
    assert run.pair.intersection == len(ALPHABET)
    assert run.pair.share_of_draft == pytest.approx(len(ALPHABET) / (len(ALPHABET) + 2))
    assert run.pair.share_of_target == pytest.approx(len(ALPHABET) / (len(ALPHABET) + 2 + len(MERGES)))
    assert not run.pair.same_vocabulary and same_vocabulary_note(run) is None
    assert all(step.pair is None for step in run.steps[1:])  # figures of the run, given once


def test_slrs_refuses_a_drafter_with_long_tokens(pairs):
    target, _ = pairs["draft-normalizes"]
    long_tokens = bpe_tokenizer(ALPHABET, MERGES + [("the", " "), ("the ", "e")])
    drafter = loaded("long", tiny_llama(len(long_tokens), layers=1, hidden=32), long_tokens)
    with pytest.raises(playground.PlaygroundError, match="slrs"):
        generate(target, drafter, "slrs")


# ---- losslessness ------------------------------------------------------------------------------

def chi_square_passes(counts: dict[int, int], probabilities: torch.Tensor) -> bool:
    """Pearson's test on the tokens with expected count >= 5 (the rest pooled into one cell)."""
    total = sum(counts.values())
    expected, observed, pooled_expected, pooled_observed = [], [], 0.0, 0
    probabilities = probabilities.double() / probabilities.double().sum()
    for token, probability in enumerate(probabilities.tolist()):
        if probability * total >= 5:
            expected.append(probability * total)
            observed.append(counts.get(token, 0))
        else:
            pooled_expected += probability * total
            pooled_observed += counts.get(token, 0)
    if pooled_expected > 0:
        expected.append(pooled_expected)
        observed.append(pooled_observed)
    return chisquare(observed, expected).pvalue > ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("levers", [{}, {"draft_vocab": 4}], ids=["defaults", "pruned-head"])
@pytest.mark.parametrize("method", ["tli", "slem", "slrs"])
def test_first_token_follows_the_target_distribution_with_the_drafting_levers(method, levers):
    """Each lossless heterogeneous method with the levers it ships with (an int8 draft,
    confidence-ended blocks where it drafts blocks) and a pruned draft head."""
    target_tokenizer = char_tokenizer("abcd")
    draft_tokenizer = bpe_tokenizer("abcd", [("a", "b"), ("c", "d")])  # 'ab', 'cd' are not target tokens
    target = tiny_llama(len(target_tokenizer), layers=1, hidden=32, seed=5)
    draft = tiny_llama(len(draft_tokenizer), layers=1, hidden=32, seed=6)
    for model in (target, draft):
        model.lm_head.weight.data.mul_(0.1)
    target, draft = loaded("t", target, target_tokenizer), loaded("d", draft, draft_tokenizer)
    with torch.no_grad():
        prompt = target_tokenizer("abc").input_ids
        exact = torch.softmax(target.model(torch.tensor([prompt])).logits[0, -1], -1)
    counts, accepted = {}, 0
    for seed in range(600):
        run = playground.generate("abc", target=target, draft=draft, method=method, candidates=2, max_new_tokens=2,
                                  temperature=1.0, chat_template=False, seed=seed, **levers)
        counts[run.tokens[0].id] = counts.get(run.tokens[0].id, 0) + 1
        accepted += run.steps[0].accepted
    assert chi_square_passes(counts, exact)
    assert accepted > 0


# ---- synthetic distributions: SLRS losslessness and Table 3 ------------------------------------

TARGET_MERGES = [("a", "b"), ("ab", "c"), ("b", "a")]  # T = {a, b, c, ab, abc, ba}
DRAFT_MERGES = [("a", "a"), ("c", "a"), ("b", "c")]  # D = {a, b, c, aa, ca, bc}


@pytest.fixture(scope="module")
def synthetic():
    """A target tokenizer and distribution p, a drafter with a fixed Markov distribution q over
    draft-token paths, sharing the characters a, b, c but not the longer tokens."""
    target_tokenizer = bpe_tokenizer("abc", TARGET_MERGES)
    draft_tokenizer = bpe_tokenizer("abc", DRAFT_MERGES)
    # over <unk>, <eos>, a, b, c, ab, abc, ba: p(a) above q(a), so renormalizing q matters
    p = torch.tensor([0.0, 0.0, 0.4, 0.2, 0.1, 0.15, 0.05, 0.1])
    draft_strings = token_strings(draft_tokenizer)

    def draft_q(path):
        seed = 1 + sum((i + 1) * 7 ** n for n, i in enumerate(path))
        logits = torch.randn(len(draft_tokenizer), generator=torch.Generator().manual_seed(seed))
        logits[[i for i, s in enumerate(draft_strings) if s is None]] = -torch.inf
        return torch.softmax(logits, -1)

    return SimpleNamespace(target_tokenizer=target_tokenizer, draft_tokenizer=draft_tokenizer, p=p,
                           draft_q=draft_q, draft_strings=draft_strings)


def proposer(synthetic, cap=256):
    split = TargetSplitter(synthetic.target_tokenizer)
    return StringProposer(synthetic.draft_q, synthetic.draft_strings, split, split.strings, lookahead=4, cap=cap)


@pytest.mark.slow
@pytest.mark.parametrize("cap", [256, 3])
def test_slrs_is_lossless_even_when_the_enumeration_cap_is_hit(synthetic, cap):
    sampler, source = Sampler(temperature=1.0, seed=0), proposer(synthetic, cap)
    counts = {}
    for _ in range(6000):
        token = string_rejection_sample(synthetic.p, source, sampler).token
        counts[token] = counts.get(token, 0) + 1
    assert chi_square_passes(counts, synthetic.p)
    assert (source.cap_hits > 0) == (cap == 3)


class KnownPsi:
    """A proposer whose psi is given: p = [0.5, 0.3, 0.2] against psi = [0.5, 0.1, 0.1] leaves the
    residual max(0, p - psi) = [0, 0.2, 0.1], normalized [0, 2/3, 1/3] by hand."""

    def psi(self, token):
        return [0.5, 0.1, 0.1][token]


@pytest.mark.slow
@pytest.mark.parametrize("tries", [0, 1, 1000])
def test_slrs_residual_draw_is_exact_however_many_tries_fail(monkeypatch, tries):
    monkeypatch.setattr(slrs, "MAX_RESIDUAL_DRAWS", tries)
    sampler, p = Sampler(temperature=1.0, seed=3), torch.tensor([0.5, 0.3, 0.2])
    counts = {}
    for _ in range(3000):
        token, _ = slrs.residual_draw(p, KnownPsi(), sampler)
        counts[token] = counts.get(token, 0) + 1
    assert counts.get(0, 0) == 0  # p(0) = psi(0): no residual mass, never drawn
    assert chi_square_passes(counts, torch.tensor([0.0, 2 / 3, 1 / 3]))


@pytest.mark.slow
def test_psi_is_the_distribution_of_the_proposal(synthetic):
    source, sampler = proposer(synthetic), Sampler(temperature=1.0, seed=1)
    psi = torch.tensor([source.psi(t) for t in range(len(synthetic.p))])
    counts = {}
    for _ in range(6000):
        proposal = source.sample(sampler.draw)[2]
        counts[proposal] = counts.get(proposal, 0) + 1
    assert psi.sum() == pytest.approx(1.0)  # every drafted string here starts with some target token
    assert chi_square_passes(counts, psi)


def measured_rate(trial, n=6000) -> float:
    return sum(trial() for _ in range(n)) / n


@pytest.mark.slow
def test_table_3_acceptance_rates_and_theorem_4_1(synthetic):
    """Measured next-token acceptance of each rule against seed 004's Table 3 formula."""
    p, sampler, source = synthetic.p, Sampler(temperature=1.0, seed=2), proposer(synthetic)
    psi = torch.tensor([source.psi(t) for t in range(len(p))])
    shared = intersection(synthetic.target_tokenizer, synthetic.draft_tokenizer)
    q = synthetic.draft_q(())
    q_shared = torch.softmax(shared.draft_logits_on_target(q.log(), len(p)), -1)  # TLI's q'
    q_union = torch.zeros(len(p))  # Algorithm 1: q itself, shared tokens at their target ids
    q_union[shared.target_ids] = q[shared.draft_ids]
    ctx = Decoding(RunConfig(temperature=1.0), sampler, None, [], 0)

    def sd_accepts(token, q_row):
        return bool(check_candidate(ctx, ResidualRatio(), token, p, q_row).path)

    def union_trial():
        drafted = sampler.draw(q)
        on_target = (shared.draft_ids == drafted).nonzero()
        return bool(len(on_target)) and sd_accepts(int(shared.target_ids[on_target[0, 0]]), q_union)

    measured = {
        "union": measured_rate(union_trial),
        "tli": measured_rate(lambda: sd_accepts(sampler.draw(q_shared), q_shared)),
        "slem": measured_rate(lambda: source.sample(sampler.draw)[2] == sampler.draw(p)),
        "slrs": measured_rate(lambda: string_rejection_sample(p, source, sampler).accepted),
    }
    expected = {
        "union": float(torch.minimum(p, q_union).sum()),
        "tli": float(torch.minimum(p, q_shared).sum()),
        "slem": float((p * psi).sum()),
        "slrs": float(torch.minimum(p, psi).sum()),
    }
    for rule, rate in measured.items():
        assert rate == pytest.approx(expected[rule], abs=0.025), rule  # > 3.5 standard errors at n = 6000
    assert expected["tli"] >= expected["union"] and measured["tli"] > measured["union"]
    assert expected["slrs"] >= expected["slem"]
