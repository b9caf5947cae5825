import math
from dataclasses import fields

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon
from scipy.stats import entropy

from playground.config import RunConfig
from playground.decoding.divergence import MAXIMUM, SCALES, divergence, js, kl, tv
from playground.ui.options import threshold_scale

weights = st.lists(st.floats(0, 10, allow_nan=False), min_size=2, max_size=12).filter(lambda w: sum(w) > 1e-3)
# Zero or at least 1e-6: float32 divides tinier weights past its range where float64 does not.
weight_pairs = st.integers(2, 12).flatmap(lambda n: st.tuples(*[st.lists(
    st.one_of(st.just(0.0), st.floats(1e-6, 10)), min_size=n, max_size=n).filter(lambda w: sum(w) > 1e-3)] * 2))


def distribution(w):
    t = torch.tensor(w, dtype=torch.float32)
    return t / t.sum()


@settings(max_examples=200, deadline=None)
@given(weight_pairs)
def test_every_divergence_matches_scipy_in_float64(pair):
    """An independent computation, never clamped: the clamps in divergence.py keep rounding in
    range, so checking only the range could not see a wrong formula."""
    p, q = distribution(pair[0]), distribution(pair[1])
    p64, q64 = p.double().numpy(), q.double().numpy()
    m = (p64 + q64) / 2
    expected = {"js": jensenshannon(p64, q64) ** 2, "tv": abs(p64 - q64).sum() / 2, "kl": entropy(p64, q64),
                "kl-draft": entropy(q64, p64), "fsd-js": (entropy(m, p64) + entropy(m, q64)) / 2}
    assert set(expected) == set(SCALES)
    for name, value in expected.items():
        assert float(divergence(name, p, q)) == pytest.approx(value, rel=1e-4, abs=1e-5), name


@settings(max_examples=100, deadline=None)
@given(weights)
def test_every_divergence_is_zero_on_identical_inputs(a):
    p = distribution(a)
    for name in MAXIMUM:
        assert float(divergence(name, p, p)) < 1e-6


def test_disjoint_supports_reach_the_maximum():
    p, q = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    assert math.isclose(float(js(p, q)), math.log(2), rel_tol=1e-6)
    assert float(tv(p, q)) == 1.0
    assert math.isinf(float(kl(p, q)))


def test_kl_directions_are_labelled_and_differ():
    p, q = torch.tensor([0.9, 0.1]), torch.tensor([0.5, 0.5])
    assert torch.isclose(divergence("kl", p, q), kl(p, q))
    assert torch.isclose(divergence("kl-draft", p, q), kl(q, p))
    assert not torch.isclose(kl(p, q), kl(q, p))


def test_the_fsd_authors_js_div_is_half_kl_from_the_midpoint_and_unbounded():
    # fsd_utils.py: 0.5 * kl_div(log p, m) + 0.5 * kl_div(log q, m), with torch's kl_div(input, target)
    # = sum target * (log target - input): by hand for p = [0.9, 0.1], q = [0.5, 0.5], m = [0.7, 0.3]
    p, q = torch.tensor([0.9, 0.1]), torch.tensor([0.5, 0.5])
    by_hand = 0.5 * (0.7 * math.log(0.7 / 0.9) + 0.3 * math.log(0.3 / 0.1)) \
        + 0.5 * (0.7 * math.log(0.7 / 0.5) + 0.3 * math.log(0.3 / 0.5))
    assert math.isclose(float(divergence("fsd-js", p, q)), by_hand, rel_tol=1e-5)
    torch_code = 0.5 * (torch.nn.functional.kl_div(p.log(), (p + q) / 2, reduction="sum")
                        + torch.nn.functional.kl_div(q.log(), (p + q) / 2, reduction="sum"))
    assert math.isclose(float(divergence("fsd-js", p, q)), float(torch_code), rel_tol=1e-5)
    assert float(divergence("fsd-js", p, q)) > float(divergence("js", p, q))
    nearly_disjoint = torch.tensor([1 - 1e-6, 1e-6]), torch.tensor([1e-6, 1 - 1e-6])
    assert float(divergence("fsd-js", *nearly_disjoint)) > 2 * math.log(2)  # past JS's bound
    assert math.isinf(SCALES["fsd-js"].bound) and SCALES["js"].bound == math.log(2)


def test_every_scale_states_its_bound_and_log_base():
    for name, scale in SCALES.items():
        bounded = math.isfinite(scale.bound)
        assert ("unbounded" not in scale.range_text) == bounded, name
        assert scale.slider_max > scale.bound if bounded else scale.slider_max > 0  # the limit is in range
        if name != "tv":  # TV takes no log
            assert "natural log" in scale.range_text
    assert "ln 2 = 0.693" in SCALES["js"].range_text


def test_help_texts_name_each_kl_direction_as_computed():
    # By hand, p the verifier, q the proposer: KL(p || q) = 0.9 ln 1.8 + 0.1 ln 0.2 = 0.368064,
    # KL(q || p) = 0.5 ln(0.5/0.9) + 0.5 ln 5 = 0.510826.
    p, q = torch.tensor([0.9, 0.1]), torch.tensor([0.5, 0.5])
    assert math.isclose(float(divergence("kl", p, q)), 0.368064, rel_tol=1e-5)
    assert math.isclose(float(divergence("kl-draft", p, q)), 0.510826, rel_tol=1e-5)
    assert SCALES["kl"].label("target", "draft") == "KL(target || draft)"
    assert SCALES["kl-draft"].label("target", "draft") == "KL(draft || target)"
    help_text = next(f for f in fields(RunConfig) if f.name == "divergence").metadata["help"]
    assert "kl = KL(verifier || proposer)" in help_text and "kl-draft = KL(proposer || verifier)" in help_text
    assert "fsd-js = 1/2 KL(M || verifier) + 1/2 KL(M || proposer)" in help_text
    # each threshold slider names its own verifier and proposer: fsd, psd stage 1, psd stage 2
    assert "KL(target || draft) < tau" in threshold_scale("tau", "kl")[1]
    assert "KL(qualifier || draft) <= tau_q" in threshold_scale("tau_q", "kl")[1]
    assert "KL(qualifier || target) <= tau_t" in threshold_scale("tau_t", "kl-draft")[1]


def test_vectorized_over_positions():
    p = torch.softmax(torch.randn(5, 7), -1)
    q = torch.softmax(torch.randn(5, 7), -1)
    assert divergence("js", p, q).shape == (5,)
    assert torch.allclose(divergence("js", p, q), torch.stack([js(p[i], q[i]) for i in range(5)]))
