import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from playground.divergence import MAXIMUM, divergence, js, kl, tv

weights = st.lists(st.floats(0, 10, allow_nan=False), min_size=2, max_size=12).filter(lambda w: sum(w) > 1e-3)
weight_pairs = st.integers(2, 12).flatmap(lambda n: st.tuples(
    *[st.lists(st.floats(0, 10, allow_nan=False), min_size=n, max_size=n).filter(lambda w: sum(w) > 1e-3)] * 2))


def distribution(w):
    t = torch.tensor(w, dtype=torch.float32)
    return t / t.sum()


@settings(max_examples=200, deadline=None)
@given(weight_pairs)
def test_js_and_tv_are_symmetric_and_bounded(pair):
    p, q = distribution(pair[0]), distribution(pair[1])
    assert 0 <= js(p, q) <= math.log(2) + 1e-6
    assert 0 <= tv(p, q) <= 1 + 1e-6
    assert torch.isclose(js(p, q), js(q, p), atol=1e-6)
    assert torch.isclose(tv(p, q), tv(q, p), atol=1e-6)
    assert kl(p, q) >= 0


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


def test_vectorized_over_positions():
    p = torch.softmax(torch.randn(5, 7), -1)
    q = torch.softmax(torch.randn(5, 7), -1)
    assert divergence("js", p, q).shape == (5,)
    assert torch.allclose(divergence("js", p, q), torch.stack([js(p[i], q[i]) for i in range(5)]))
