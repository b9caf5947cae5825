"""A draft with its own vocabulary: the screen says why its drafts rarely pass, with the run's
numbers (a byte draft failed on screen without a word), and its rejected candidates stay small
marks above the text, so the answer reads as text with "show rejected drafts" on."""

import re

from playground.engine import generate
from playground.models.tiny import foreign_draft
from playground.ui.views import render


def test_a_foreign_vocabulary_run_says_why_few_drafts_pass_with_its_numbers(family):
    draft = foreign_draft()
    run = generate("hello there", method="slem", max_new_tokens=24, target=family["target"], draft=draft,
                   temperature=1.0, seed=3)
    target_size, draft_size = len(family["target"].tokenizer), len(draft.tokenizer)
    assert (run.pair.target_vocabulary, run.pair.draft_vocabulary) == (target_size, draft_size)
    note = render.vocabulary_html(run)
    assert f"the draft writes from {draft_size:,} tokens, the target from {target_size:,}" in note
    assert f"Here {run.stats.accepted} of {run.stats.drafted} drafted tokens passed" in note
    assert re.search(r"target tokens average [\d.]+ characters", note) and "spells the target's next token" in note
    same = generate("hello there", method="sd", max_new_tokens=8, target=family["target"], draft=family["draft"])
    assert render.vocabulary_html(same) == ""


def test_tlis_note_states_its_own_rule_the_sd_rule_on_the_shared_vocabulary(family):
    """The walkthrough's tli note gave slem's rule (a draft passes only when its text spells the
    target's next token); tli is speculative decoding on the vocabularies' intersection."""
    run = generate("hello there", method="tli", max_new_tokens=24, target=family["target"], draft=foreign_draft(),
                   temperature=1.0, seed=3)
    note = render.vocabulary_html(run)
    assert "spells the target" not in note
    assert f"tli drafts only from the {run.pair.intersection:,} token strings both vocabularies share" in note
    assert "min(1, p/q), over that shared vocabulary" in note
    assert f"Here {run.stats.accepted} of {run.stats.drafted} drafted tokens passed" in note


def test_rejected_candidates_are_marks_that_never_break_the_line(family):
    run = generate("hello there", method="slem", max_new_tokens=24, target=family["target"], draft=foreign_draft(),
                   temperature=1.0, seed=3)
    decode = lambda token_id: "\n\n" if token_id == run.tokens[0].replaced_candidates[0] else "x"  # noqa: E731
    spans = render.token_spans(run.tokens, decode, show_rejected=True)
    assert spans.count('class="tok tok-rejected"') == sum(len(t.replaced_candidates) for t in run.tokens) > 0
    assert re.search(r'<s class="tok tok-rejected" title="rejected draft candidate [^"]*\(id \d+, '
                     r'the draft&#x27;s own token\): [^"]*in its place at candidate position \d+ of its block '
                     r'the target wrote '
                     r'[^"]*">↵↵</s>', spans), \
        "the mark shows the newlines, and its title the candidate, its source, its own check and what replaced it"
    assert render.rejected_text("") == "∅" and render.rejected_text(" Paris") == " Paris"


def test_the_stats_count_a_foreign_drafts_candidates_as_the_target_tokens_its_text_spelled(family):
    """A byte draft showed '3.50 candidates verified per target forward' beside 0 accepted, with no
    word that its candidates are its text cut into the target's tokens."""
    from playground.ui.handlers import Handlers  # noqa: PLC0415
    from playground.ui.options import all_controls  # noqa: PLC0415

    by_spec = {m.spec: m for m in (*family.values(), foreign_draft())}
    handlers = Handlers(loader=by_spec.__getitem__)
    handlers.load("k", "tiny-target", "tiny-foreign-draft", "")
    values = [{"max_new_tokens": 16, "temperature": 1.0}.get(c.name, c.default) for c in all_controls()]
    *_, (_, _, stats) = handlers.generate("k", "hello there", "slem", False, *values)
    assert "candidates verified per target forward (the draft&#x27;s text cut into target tokens)" in stats
    *_, (_, _, same) = handlers.generate("k", "hello there", "ar", False, *values)
    assert "cut into target tokens" not in same
