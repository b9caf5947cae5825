"""Compare's quality figures beside the target's log-likelihood, which rewards a text that
repeats itself: a repetition measure and a diff against the target-only run's text."""

import pytest

from playground.ui.tabs.quality_panel import DIFF_LABEL, diff_html, repetition, token_agreement


def test_repetition_counts_repeated_word_trigrams():
    assert repetition("a whispered promise " * 4) == pytest.approx(1 - 3 / 10)
    assert repetition("one two three four") == 0.0 and repetition("too short") is None


def test_the_diff_marks_what_the_run_changed_and_escapes_it():
    html = diff_html("the <b> cat sat", "the dog sat")
    assert html == f'<div class="diff">{DIFF_LABEL} the <del>dog</del> <ins>&lt;b&gt; cat</ins> sat</div>'
    assert diff_html("the cat  sat", "the cat sat") == f'<div class="diff">{DIFF_LABEL} the same words</div>'


def test_agreement_aligns_the_tokens_so_one_insertion_costs_one_token():
    reference = list(range(20))
    assert token_agreement(reference, reference) == 1.0
    assert token_agreement([99] + reference, reference) == 20 / 21  # position by position: 0 of 21
    assert token_agreement([7, 8, 9], [1, 2, 3]) == 0.0 and token_agreement([], []) is None
