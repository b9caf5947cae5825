"""Share links: the query a setting becomes, what a link's query parameters are read as, and
opening one (the family loaded only when this machine has it)."""

from html import unescape
from urllib.parse import parse_qsl, urlsplit

import gradio as gr
import pytest

from playground.errors import PlaygroundError
from playground.ui.handlers import Handlers
from playground.ui.options import all_controls
from playground.ui.tabs.family_panel import Preset
from playground.ui.tabs.share import MAX_LINK_CHARS, Sharing, link_query, parse_query

KEY = "session-1"
TINY = Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", "tiny test family",
              methods={"fsd": {"tau": 0.25, "candidates": 5}})
# A second family made of the same models, with its own method and defaults: what a link names.
OTHER = Preset("other", "tiny-target", "tiny-draft", "", "the target and draft alone", default_method="ar",
               methods={"fsd": {"divergence": "kl", "tau": 1.5}})
PRESETS = [TINY, OTHER]


def values(**overrides) -> list:
    chosen = {c.name: c.default for c in all_controls()} | overrides
    return [chosen[c.name] for c in all_controls()]


def query_of(link: str) -> dict:
    return dict(parse_qsl(urlsplit(link).query))


def test_a_link_reads_back_as_the_same_setting():
    prompt = "Écris « bonjour » & ask: 2+2=?\nthen stop"
    link = link_query("other", "fsd", prompt, values(tau=0.35, seed=7, temperature=0.7, divergence="tv",
                                                    draft_sampling="greedy", candidates=6))
    setting = parse_query(query_of(link), PRESETS)
    assert setting.problems == ()
    assert (setting.family, setting.method, setting.prompt) == ("other", "fsd", prompt)
    assert setting.values["tau"] == 0.35 and setting.values["seed"] == 7 and setting.values["temperature"] == 0.7
    assert setting.values["divergence"] == "tv" and setting.values["draft_sampling"] == "greedy"
    assert setting.values["candidates"] == 6 and isinstance(setting.values["candidates"], int)


def test_a_link_carries_every_option_of_its_method_and_no_other():
    query = query_of(link_query("tiny", "sd", "hi", values()))
    assert {"seed", "temperature", "max_new_tokens", "candidates"} <= set(query)
    assert "tau" not in query and "lambda" not in query and "divergence" in query  # sd's records show a divergence
    assert "lambda" in query_of(link_query("tiny", "csd", "hi", values()))  # lambda_, as a visitor types it


def test_a_bad_setting_is_refused_before_it_becomes_a_link():
    with pytest.raises(PlaygroundError, match="tau must be between 0 and 1 under js"):
        link_query("tiny", "fsd", "hi", values(tau=3.0))


def test_each_bad_or_unknown_parameter_is_named_and_left_out():
    setting = parse_query({"family": "nope", "method": "zzz", "tau": "abc", "seed": "1.5", "divergence": "l2",
                           "colour": "red", "draft_sampling": "maybe", "temperature": "0.5"}, PRESETS)
    problems = " | ".join(setting.problems)
    for named in ("unknown family 'nope'", "unknown method 'zzz'", "tau must be a number, got 'abc'",
                  "seed must be a whole number", "divergence must be one of", "unknown parameter 'colour'",
                  "draft_sampling must be one of"):
        assert named in problems
    assert setting.family is None and setting.method is None
    assert setting.values == {"temperature": 0.5}  # the good value is kept


def test_a_threshold_is_checked_on_the_scale_of_the_links_divergence():
    assert parse_query({"method": "fsd", "divergence": "kl", "tau": "2"}, PRESETS).values["tau"] == 2.0
    assert "tau must be between 0 and 1 under js" in parse_query({"method": "fsd", "tau": "2"}, PRESETS).problems[0]
    # Without one, the family's default divergence for the method: 'other' runs fsd on KL.
    assert parse_query({"family": "other", "method": "fsd", "tau": "1.2"}, PRESETS).values["tau"] == 1.2


def test_gradios_own_parameters_are_not_ours_to_refuse():
    assert parse_query({"__theme": "dark", "seed": "3"}, PRESETS).problems == ()


def test_an_overlong_prompt_is_refused_in_a_link(monkeypatch):
    monkeypatch.setenv("PLAYGROUND_MAX_PROMPT_CHARS", "10")
    setting = parse_query({"prompt": "x" * 11}, PRESETS)
    assert setting.prompt is None and "over the limit of 10" in setting.problems[0]


@pytest.fixture
def opened(family):
    """(handlers, the specs the loader was asked for, a Sharing whose machine has `available`)."""
    by_spec = {m.spec: m for m in family.values()}
    asked = []

    def loader(spec):
        asked.append(spec)
        return by_spec[spec]

    handlers = Handlers(loader=loader, presets=PRESETS)
    return handlers, asked, lambda available: Sharing(handlers, available=lambda spec: available)


def outputs(opened_list: list) -> dict:
    names = ["preset", "target", "draft", "qualifier", "family", "method", "prompt", "status", "show_rejected"]
    *controls, about = opened_list[len(names):]
    return dict(zip(names, opened_list)) | {"controls": dict(zip((c.name for c in all_controls()), controls)),
                                            "about": about}


def test_opening_a_link_sets_the_method_prompt_and_options(opened):
    handlers, asked, sharing = opened
    shown = outputs(sharing(True).open(KEY, {"method": "fsd", "tau": "0.4", "seed": "9", "prompt": "why?"}, "sd"))
    assert shown["method"] == "fsd" and shown["prompt"] == "why?"
    assert shown["controls"]["tau"]["value"] == 0.4 and shown["controls"]["tau"]["visible"]
    assert shown["controls"]["seed"]["value"] == 9
    assert shown["controls"]["candidates"]["value"] == 5  # not in the link: the preset's default
    assert "opened a shared setting" in shown["status"] and asked == []  # the default family: nothing to load
    # The link's values count as the family's defaults: a method change, and back, keeps them.
    *controls, _ = handlers.method_changed(KEY, "fsd")
    assert dict(zip((c.name for c in all_controls()), controls))["tau"]["value"] == 0.4


def test_a_link_with_bad_values_says_so_in_one_line_and_keeps_the_defaults(opened):
    _, _, sharing = opened
    shown = outputs(sharing(True).open(KEY, {"method": "fsd", "tau": "lots", "seed": "3"}, "sd"))
    assert "status-error" in shown["status"] and "tau must be a number, got 'lots'" in unescape(shown["status"])
    assert shown["status"].count("<div") == 1 and "\n" not in shown["status"]
    assert shown["controls"]["tau"]["value"] == 0.25 and shown["controls"]["seed"]["value"] == 3


def test_no_link_leaves_the_page_as_it_was(opened):
    _, _, sharing = opened
    shown = outputs(sharing(True).open(KEY, {}, "sd"))
    assert all(shown[name] == gr.skip() for name in ("preset", "method", "prompt", "status"))
    assert shown["controls"]["candidates"]["visible"] and not shown["controls"]["tau"]["visible"]


def test_a_family_this_machine_has_is_loaded_with_the_links_method(opened):
    handlers, asked, sharing = opened
    shown = outputs(sharing(True).open(KEY, {"family": "other", "method": "fsd"}, "sd"))
    assert asked == ["tiny-target", "tiny-draft"] and handlers.sessions.get(KEY).preset is OTHER
    assert shown["method"].value == "fsd"  # the link's, not the family's own (ar)
    assert shown["controls"]["divergence"]["value"] == "kl" and shown["controls"]["tau"]["value"] == 1.5
    assert "loaded other" in shown["status"]


def test_a_method_the_linked_family_cannot_run_gives_way_to_the_familys_own(opened):
    _, _, sharing = opened
    shown = outputs(sharing(True).open(KEY, {"family": "other", "method": "psd-f"}, "sd"))  # other has no qualifier
    assert shown["method"].value == "ar" and "other cannot run psd-f" in shown["status"]


def test_a_link_that_breaks_opening_leaves_a_usable_page_and_says_so(opened):
    handlers, _, _ = opened

    def broken(spec):
        raise RuntimeError("disk on fire")

    shown = outputs(Sharing(handlers, available=broken).open(KEY, {"family": "other"}, "sd"))
    assert "status-error" in shown["status"] and "could not be opened (disk on fire)" in shown["status"]
    assert shown["controls"]["candidates"]["visible"]  # the page's method still gets its controls


def test_a_family_this_machine_lacks_is_named_not_fetched(opened):
    handlers, asked, sharing = opened
    shown = outputs(sharing(False).open(KEY, {"family": "other", "method": "fsd"}, "sd"))
    assert asked == [] and handlers.sessions.get(KEY).specs == {}
    assert (shown["preset"], shown["target"], shown["qualifier"]) == ("other", "tiny-target", "")
    assert "not on this machine" in shown["status"] and "press Load" in shown["status"]


def test_a_method_switch_names_a_links_values_as_the_links(opened):
    """An fsd link carries fsd's drafting (draft_vocab 0, tree_width 1, draft_confidence 0); choosing
    sd then keeps them, and said it had set "the shared defaults" where the page had started sd with
    8192 / 2 / 0.6."""
    handlers, _, sharing = opened
    sharing(True).open(KEY, {"method": "fsd", "draft_vocab": "0", "tree_width": "1", "draft_confidence": "0"}, "sd")
    *_, about = handlers.method_changed(KEY, "sd")
    assert "Choosing sd set" in about and "(the values of the link this page opened)" in about
    assert "the shared defaults" not in about
    *_, about = Handlers(loader=handlers.family.loader, presets=PRESETS).method_changed(KEY, "sd")
    assert "set draft_confidence = 0.6, draft_vocab = 8192, tree_width = 2 (the shared defaults)" in about, "no link"


def test_the_links_values_stop_counting_once_another_family_is_loaded(opened):
    handlers, _, sharing = opened
    sharing(True).open(KEY, {"method": "fsd", "tau": "0.4"}, "sd")
    handlers.load(KEY, "tiny-target", "tiny-draft", "")  # the family 'other', not the link's
    *controls, _ = handlers.method_changed(KEY, "fsd")
    assert dict(zip((c.name for c in all_controls()), controls))["tau"]["value"] == 1.5  # other's own default


def test_a_link_carries_whether_the_page_shows_the_rejected_drafts(opened):
    handlers, _, sharing = opened
    link, _ = sharing(True).link(KEY, "http://host/", "why?", "sd", *[c.default for c in all_controls()],
                                 show_rejected=True)
    query = dict(parse_qsl(urlsplit(link["value"]).query))
    assert query["show_rejected"] == "true"
    assert outputs(sharing(True).open(KEY, query, "sd"))["show_rejected"] is True
    refused = outputs(sharing(True).open(KEY, {**query, "show_rejected": "maybe"}, "sd"))
    assert "show_rejected must be true or false, got 'maybe'" in unescape(refused["status"])
    assert refused["show_rejected"] == gr.skip()


def test_back_on_the_links_family_its_values_are_not_set_again(opened):
    """The issue: a link opened with max_new_tokens 16; the visitor chose 8, switched presets and
    back, and the page put 16 back, unannounced."""
    handlers, _, sharing = opened
    sharing(True).open(KEY, {"method": "fsd", "tau": "0.4", "max_new_tokens": "16"}, "sd")
    handlers.load(KEY, "tiny-target", "tiny-draft", "")  # another family
    handlers.load(KEY, *PRESETS[0].specs().values())  # the link's family again
    *controls, about = handlers.method_changed(KEY, "fsd")
    set_now = dict(zip((c.name for c in all_controls()), controls))
    assert "value" not in set_now["max_new_tokens"] and set_now["tau"]["value"] != 0.4
    assert "the link" not in about


def test_the_share_button_links_the_current_controls(opened):
    handlers, _, sharing = opened
    box, status = sharing(True).link(KEY, "http://host/app/", "hi", "fsd", *values(tau=0.3))
    assert box["value"].startswith("http://host/app/?family=tiny&method=fsd&prompt=hi")
    assert query_of(box["value"])["tau"] == "0.3" and box["visible"]
    box, status = sharing(True).link(KEY, "http://host/app/", "hi", "fsd", *values(tau=9.0))
    assert box == gr.skip() and "status-error" in status and "tau must be between" in status


def test_a_value_a_run_would_refuse_is_named_and_left_out_of_the_link():
    setting = parse_query({"method": "sd", "seed": "1e30", "temperature": "0.5"}, PRESETS)
    assert setting.values == {"temperature": 0.5}  # never sent to the page (past 64 bits it breaks the stream)
    assert len(setting.problems) == 1 and "seed must be between 0 and 2**64 - 1" in setting.problems[0]
    assert str(int(1e30)) in setting.problems[0]


def test_opening_a_link_with_a_seed_past_64_bits_keeps_the_pages_seed(opened):
    _, _, sharing = opened
    shown = outputs(sharing(True).open(KEY, {"method": "sd", "seed": "1e30"}, "sd"))
    assert "status-error" in shown["status"] and "seed must be between" in shown["status"]
    assert "value" not in shown["controls"]["seed"] and shown["method"] == "sd"  # the page's seed stays


def test_the_share_button_refuses_a_seed_a_run_would_refuse(opened):
    _, _, sharing = opened
    box, status = sharing(True).link(KEY, "http://host/app/", "hi", "sd", *values(seed=1e30))
    assert box == gr.skip() and "seed must be between" in status


def test_a_link_too_long_for_a_server_leaves_the_prompt_out_and_says_so(opened):
    _, _, sharing = opened
    prompt = "中文" * 4000  # 8,000 characters, within the prompt limit; nine characters each in a link
    box, status = sharing(True).link(KEY, "http://host/app/", prompt, "sd", *values(seed=4))
    assert len(box["value"]) <= MAX_LINK_CHARS and "prompt" not in query_of(box["value"])
    assert query_of(box["value"])["seed"] == "4" and query_of(box["value"])["method"] == "sd"
    assert "the prompt is left out" in status and "\n" not in status
    assert parse_query(query_of(box["value"]), PRESETS).problems == ()
    box, status = sharing(True).link(KEY, "http://host/app/", "中文" * 1000, "sd", *values())
    assert query_of(box["value"])["prompt"] == "中文" * 1000 and "left out" not in status


def test_a_family_switch_names_the_settings_its_preset_sets(opened):
    """A review saw candidates go 4 -> 2 -> 8 -> 4 across presets, with only draft_vocab named."""
    handlers, _, _ = opened
    handlers.load(KEY, "tiny-target", "tiny-draft", "")  # the family 'other'
    *_, about = handlers.method_changed(KEY, "fsd")
    assert "Preset `other` set divergence = kl, tau = 1.5 for fsd." in about
    *_, about = handlers.method_changed(KEY, "sd")
    assert "Preset `other` set" not in about, "it sets nothing for sd"
