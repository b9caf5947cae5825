import math

import playground


def run(family, method, **options):
    options.setdefault("max_new_tokens", 40)
    options.setdefault("temperature", 0)
    return playground.generate("hello there", target=family["target"], draft=family["draft"],
                               qualifier=family["qualifier"], method=method, **options)


def ids(result):
    return [t.id for t in result.tokens]


def test_greedy_sd_matches_target_greedy(family):
    reference = run(family, "ar")
    assert len(reference.tokens) == 40
    for k in (1, 3, 7):
        assert ids(run(family, "sd", candidates=k)) == ids(reference)


def test_greedy_fsd_threshold_zero_accepts_nothing_and_matches_target(family):
    result = run(family, "fsd", tau=0.0, candidates=4)
    assert ids(result) == ids(run(family, "ar"))
    assert result.stats.accepted == 0
    assert {t.origin for t in result.tokens} == {"target"}


def test_fsd_threshold_above_maximum_accepts_every_candidate(family):
    for divergence, tau in (("js", math.log(2) + 1e-3), ("tv", 1.001)):
        result = run(family, "fsd", tau=tau, divergence=divergence, candidates=4)
        stats = result.stats.to_dict()
        assert stats["acceptance_rate"] == 1.0
        bonus = [t for t in result.tokens if t.origin == "target"]
        assert all(t.diagnostics.get("bonus") for t in bonus)


def test_fsd_random_acceptance_control_accepts_about_its_rate(family):
    result = run(family, "fsd", random_accept=0.5, candidates=4, max_new_tokens=200, seed=3)
    assert 0.3 < result.stats.acceptance_rate < 0.7


def test_max_new_tokens_is_exact_including_bonus_tokens(family):
    for limit in (1, 2, 5, 13):
        result = run(family, "fsd", tau=1.0, candidates=4, max_new_tokens=limit)
        assert len(result.tokens) == limit


def test_stats_counts_add_up(family):
    result = run(family, "sd", candidates=3, temperature=1.0, max_new_tokens=60)
    stats = result.stats.to_dict()
    assert stats["drafted"] == stats["accepted"] + stats["rejected"]
    assert stats["tokens"] == sum(len(step.tokens) for step in result.steps) == len(result.tokens)
    assert sum(stats["origin_counts"].values()) == stats["tokens"]
    assert stats["forwards"]["target"] == stats["steps"]
    # one histogram entry per drafted block; a last step with room for one token drafts nothing
    assert sum(stats["acceptance_length_histogram"].values()) == sum(1 for s in result.steps if s.drafted)
    assert result.text == "".join(t.text for t in result.tokens)
