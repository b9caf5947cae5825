"""A Load that changes the family empties the views of the old family's answer (it stayed on screen
under the new family's name); a Load of the same family leaves them."""

import gradio as gr

from playground.models.tiny import foreign_draft
from playground.ui.handlers import Handlers
from playground.ui.options import all_controls
from playground.ui.tabs.family_panel import Preset

KEY = "session-1"


def test_a_load_of_another_family_clears_the_old_answer(family):
    by_spec = {m.spec: m for m in [*family.values(), foreign_draft()]}
    handlers = Handlers(loader=by_spec.__getitem__,
                        presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", "tiny")])
    values = [{"max_new_tokens": 8}.get(c.name, c.default) for c in all_controls()]
    handlers.load(KEY, "tiny-target", "tiny-draft", "tiny-qualifier")
    assert handlers.family.cleared_views(KEY, 3) == [gr.skip()] * 3  # the first preset's family: no change
    list(handlers.generate(KEY, "hello", "sd", False, *values))
    handlers.load(KEY, "tiny-target", "tiny-draft", "tiny-qualifier")
    assert handlers.family.cleared_views(KEY, 3) == [gr.skip()] * 3 and handlers.sessions.get(KEY).run is not None
    status = handlers.load(KEY, "tiny-target", "tiny-foreign-draft", "")[0]
    assert "the last run&#x27;s answer went with the models it ran on" in status, "a vanished answer is said"
    assert handlers.family.cleared_views(KEY, 3) == [None] * 3
    assert handlers.sessions.get(KEY).run is None, "its charts and export were the old family's"
    assert handlers.family.cleared_views(KEY, 3) == [gr.skip()] * 3  # once
    status = handlers.load(KEY, "tiny-target", "tiny-draft", "tiny-qualifier")[0]
    assert "answer" not in status, "no answer was on screen"


def test_a_box_the_chosen_preset_filled_is_not_an_edit(family):
    """Choosing a preset fills the boxes, then loads: its fill does not ask for Load (under load the
    page showed 'press Load' after 'loaded ...'); the same name typed under another preset does."""
    by_spec = {m.spec: m for m in [*family.values(), foreign_draft()]}
    handlers = Handlers(loader=by_spec.__getitem__,
                        presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", "tiny"),
                                 Preset("tiny-foreign", "tiny-target", "tiny-foreign-draft", "", "foreign")])
    handlers.load(KEY, "tiny-target", "tiny-draft", "tiny-qualifier")
    assert handlers.family.edited(KEY, "tiny-foreign-draft", "tiny-foreign", role="draft") == gr.skip()
    assert not handlers.sessions.get(KEY).specs_edited
    assert "press Load" in handlers.family.edited(KEY, "tiny-foreign-draft", "tiny", role="draft")
    assert handlers.sessions.get(KEY).specs_edited


def test_a_load_that_changes_the_method_says_so_in_its_status(family):
    """A reviewer saw the method go from psd-a to slem to sd over preset switches with no word: the
    Load's status names the method the page now runs and why; a Load that keeps it names none."""
    by_spec = {m.spec: m for m in [*family.values(), foreign_draft()]}
    handlers = Handlers(loader=by_spec.__getitem__,
                        presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", "tiny")])
    status, _, methods = handlers.load(KEY, "tiny-target", "tiny-draft", "tiny-qualifier", "sd")
    assert "method" not in status and methods == gr.skip()  # already loaded: the page keeps its method
    status, _, methods = handlers.load(KEY, "tiny-target", "tiny-foreign-draft", "", "psd-a")
    assert f"; method {methods.value} now (psd-a does not run on this family)" in status


def test_a_pick_fired_twice_leaves_the_panel_naming_the_loaded_models(family):
    """The preset list can fire one pick twice; the second, answered while the first one loads, shows
    the preset's description, and its Load finds the family loaded. A browser test's panel then read
    only "tiny test family" after a run on those models."""
    by_spec = {m.spec: m for m in [*family.values(), foreign_draft()]}
    tiny = Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", "tiny test family")
    handlers = Handlers(loader=by_spec.__getitem__,
                        presets=[tiny, Preset("tiny-foreign", "tiny-target", "tiny-foreign-draft", "", "foreign")])
    panel = handlers.family
    handlers.load(KEY, *Preset("x", "tiny-target", "tiny-foreign-draft", "").specs().values())
    first, second = panel.picked(KEY, "tiny"), panel.picked(KEY, "tiny")  # both before the first one's Load
    assert first[-1] == second[-1] == "tiny test family"
    status, described, _ = panel.load_picked(KEY, "tiny", *tiny.specs().values(), "slem")
    assert status.count("loaded tiny-target, tiny-draft, tiny-qualifier") == 1 and "tiny-draft" in described
    status, described, _ = panel.load_picked(KEY, "tiny", *tiny.specs().values(), "sd")
    assert "nothing to load" in status and "tiny-draft" in described and "tiny-foreign" not in described
    handlers.unload(KEY)
    assert panel.load_picked(KEY, "tiny", *tiny.specs().values(), "sd")[1] == gr.skip(), "the Unload's panel stays"
