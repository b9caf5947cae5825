"""The papers' limits with DEFAULT settings (every drafting lever as it ships), through the API,
the CLI and the app's handlers: csd at lambda = inf is sd token for token when sampling (seed 003),
fsd at tau 0 and psd-f at tau_T 0 are the target alone (seeds 000, 002), and fsd's random control
accepts at its rate."""

import json
import math

import pytest

import playground
from playground.cli import main
from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.options import all_controls

PROMPT = "hello there"


def api(family, method, **options):
    return playground.generate(PROMPT, method=method, max_new_tokens=40, **family, **options)


def ids(run):
    return [t.id for t in run.tokens]


@pytest.mark.parametrize("seed", [0, 5])
def test_api_csd_at_lambda_infinity_is_sd_when_sampling(family, seed):
    calibrated = api(family, "csd", lambda_=math.inf, temperature=1.0, seed=seed)
    standard = api(family, "sd", temperature=1.0, seed=seed)
    assert ids(calibrated) == ids(standard)
    levers = ("draft_int8", "draft_vocab", "draft_confidence", "tree_width", "candidates")
    assert {k: calibrated.recorded_config()[k] for k in levers} == {k: standard.recorded_config()[k] for k in levers}
    assert standard.recorded_config()["tree_width"] > 1  # as it ships, both draft a token tree


@pytest.mark.parametrize("tree_width", [None, 2], ids=["defaults", "tree"])
@pytest.mark.parametrize(("method", "threshold"), [("fsd", "tau"), ("psd-f", "tau_t")])
def test_api_a_zero_threshold_is_the_target_alone(family, method, threshold, tree_width):
    shape = {} if tree_width is None else {"tree_width": tree_width}
    run = api(family, method, **{threshold: 0.0}, **shape)
    assert ids(run) == ids(api(family, "ar"))
    assert {t.origin for t in run.tokens} == {"target"}


@pytest.mark.parametrize("confidence", [None, 0.6], ids=["fsd-defaults", "confidence-ended-blocks"])
def test_api_fsd_random_control_accepts_at_its_rate(family, confidence):
    levers = {} if confidence is None else {"draft_confidence": confidence}
    runs = [playground.generate(PROMPT, method="fsd", random_accept=0.5, temperature=1.0, seed=seed,
                                max_new_tokens=120, **family, **levers) for seed in range(3)]
    # per candidate checked (not those after a rejection, nor a tree's siblings after a kept one)
    checks = [check for r in runs for step in r.steps for check in step.evidence]
    drafted = len(checks)
    rate = sum(check.verdict == "accepted" for check in checks) / drafted
    assert runs[0].config.draft_confidence == (confidence or 0.0)  # fsd drafts full blocks unless asked
    # a binomial with p = 0.5 over `drafted` trials: 4 standard deviations either side
    assert abs(rate - 0.5) < 4 * math.sqrt(0.25 / drafted)


@pytest.fixture(scope="module")
def saved_family(tmp_path_factory, family):
    root = tmp_path_factory.mktemp("family")
    for role in ("target", "draft", "qualifier"):
        family[role].model.save_pretrained(root / role)
        family[role].tokenizer.save_pretrained(root / role)
    return {role: str(root / role) for role in ("target", "draft", "qualifier")}


def cli(saved_family, capsys, *args) -> dict:
    models = [item for role, path in saved_family.items() for item in (f"--{role}", path)]
    assert main(["generate", "--prompt", PROMPT, "--max-new-tokens", "30", "--json", *models, *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_limits_hold_with_default_settings(saved_family, capsys):
    calibrated = cli(saved_family, capsys, "--method", "csd", "--lambda", "inf", "--temperature", "1", "--seed", "3")
    standard = cli(saved_family, capsys, "--method", "sd", "--temperature", "1", "--seed", "3")
    assert [t["id"] for t in calibrated["tokens"]] == [t["id"] for t in standard["tokens"]]
    assert calibrated["config"]["tree_width"] == standard["config"]["tree_width"] > 1
    assert calibrated["config"]["lambda_"] is None  # inf, written as JSON's null
    target_alone = [t["id"] for t in cli(saved_family, capsys, "--method", "ar")["tokens"]]
    for method, threshold in (("fsd", "--tau"), ("psd-f", "--tau-t")):
        tokens = cli(saved_family, capsys, "--method", method, threshold, "0")["tokens"]
        assert [t["id"] for t in tokens] == target_alone


def test_app_limits_hold_with_the_controls_defaults(family):
    by_spec = {m.spec: m for m in family.values()}
    handlers = Handlers(loader=lambda spec: by_spec[spec],
                        presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier")])
    handlers.load("k", "tiny-target", "tiny-draft", "tiny-qualifier")

    def ran(method, **overrides):
        chosen = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 30} | overrides
        list(handlers.generate("k", PROMPT, method, False, *[chosen[c.name] for c in all_controls()]))
        return ids(handlers.sessions.get("k").run)

    # the lambda box takes a number: 1e9 is never reached by a count, as inf
    calibrated = ran("csd", lambda_=1e9, temperature=1.0, seed=4)
    assert handlers.sessions.get("k").run.config.tree_width > 1  # the controls' default: a token tree
    assert calibrated == ran("sd", temperature=1.0, seed=4)
    assert ran("fsd", tau=0.0) == ran("ar") == ran("psd-f", tau_t=0.0)


def test_divergence_rules_draft_full_blocks_by_default_everywhere(family):
    """fsd and psd-f default to full blocks with the full head (a divergence test ignores the
    draft's doubt, and is defined on its whole q); sd keeps its levers; a value the caller names
    wins; the app's controls follow the chosen method."""
    for method in ("fsd", "psd-f"):
        config = api(family, method).config
        assert (config.draft_confidence, config.draft_vocab, config.draft_int8) == (0.0, 0, True)
    assert api(family, "sd").config.draft_confidence == 0.6
    assert api(family, "fsd", draft_confidence=0.3).config.draft_confidence == 0.3
    by_spec = {m.spec: m for m in family.values()}
    handlers = Handlers(loader=lambda spec: by_spec[spec], presets=[Preset("tiny", "tiny-target", "tiny-draft")])
    names = [c.name for c in all_controls()]
    for method, expected in (("fsd", 0.0), ("sd", 0.6)):
        update = handlers.method_changed("k", method)[names.index("draft_confidence")]
        assert update["value"] == expected
