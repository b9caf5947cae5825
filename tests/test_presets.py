"""presets/*.toml: every family parses, says where it fits, flags gated models, and recommends
settings that the methods accept and that follow the papers' advice."""

from dataclasses import fields

import pytest

from playground.config import RunConfig
from playground.decoding.divergence import SCALES
from playground.errors import PlaygroundError
from playground.methods import METHODS
from playground.models.default_family import DEFAULT_FAMILY
from playground.models.embedded import EMBEDDED_MODELS
from playground.models.presets import DEFAULT_PRESET, FITS, load_presets

PRESETS = load_presets()
GATED_ORGS = ("meta-llama/", "google/")
CONFIG_FIELDS = {f.name for f in fields(RunConfig)}


def models_of(preset):
    return [m for m in (preset.target, preset.qualifier, preset.draft) if m]


def expected_fits(memory_gb: float) -> str:
    return "cpu" if memory_gb <= 8 else "gpu-24gb" if memory_gb <= 20 else "multi-gpu"


def test_the_default_is_the_offline_embedded_family():
    preset = PRESETS[DEFAULT_PRESET]
    assert preset.specs() == DEFAULT_FAMILY, "presets/embedded.toml names the family embedded.py defines"
    assert all(model in EMBEDDED_MODELS for model in models_of(preset))
    assert preset.fits == "cpu" and not preset.gated and preset.qualifier


def test_the_requested_families_are_present():
    wanted = ["HuggingFaceTB/SmolLM2-1.7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct",
              "meta-llama/Llama-3.2-1B-Instruct", "google/gemma-2-27b-it", "meta-llama/Meta-Llama-3-70B-Instruct",
              "Qwen/Qwen2.5-32B-Instruct", "double7/vicuna-68m", "byte-draft"]
    listed = {model for preset in PRESETS.values() for model in models_of(preset)}
    assert not set(wanted) - listed


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_is_complete_and_consistent(name):
    preset = PRESETS[name]
    assert preset.description and preset.target and preset.draft
    assert preset.fits in FITS and preset.fits == expected_fits(preset.approx_memory_gb)
    assert preset.memory_bytes == int(preset.approx_memory_gb * 1e9) > 0
    assert preset.gated == any(model.startswith(GATED_ORGS) for model in models_of(preset))
    assert preset.default_method in preset.methods
    for method, settings in preset.methods.items():
        assert method in METHODS, f"{name}: unknown method {method}"
        assert set(settings) <= CONFIG_FIELDS, f"{name}.{method}: {set(settings) - CONFIG_FIELDS}"
        RunConfig(method=method, **settings)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_recommended_settings_follow_the_papers(name):
    methods = PRESETS[name].methods
    if "psd-f" in methods:
        psd = methods["psd-f"]
        assert psd["tau_q"] <= psd["tau_t"]  # PyramidSD: the qualifier's gate is the stricter one
        assert psd["qualifier_length"] / 3 <= psd["draft_length"] <= psd["qualifier_length"] / 2
    if "psd-f" in methods or "psd-a" in methods:
        assert PRESETS[name].qualifier, "pyramid methods need a qualifier"
    if "fsd" in methods:
        fsd = methods["fsd"]
        assert 0 < fsd["tau"] <= SCALES[fsd["divergence"]].bound, "a threshold past the bound accepts everything"
    if "csd" in methods:
        assert (methods["csd"]["candidates"], methods["csd"]["lambda_"], methods["csd"]["gate_tau"]) == (6, 6, 0.01)


# Seed 000, Table 3: one threshold per pair, on the authors' js_div scale (fsd_utils.py).
FSD_TABLE_3 = {"qwen2.5-32b": 0.4, "llama3.1-70b": 0.3, "gemma2-27b": 0.7}


@pytest.mark.parametrize("name", sorted(FSD_TABLE_3))
def test_the_fsd_papers_pairs_use_table_3_on_the_authors_scale(name):
    fsd = PRESETS[name].methods["fsd"]
    assert (fsd["divergence"], fsd["tau"]) == ("fsd-js", FSD_TABLE_3[name])
    assert "Table 3" in PRESETS[name].sources["fsd"] and f"T = {FSD_TABLE_3[name]}" in PRESETS[name].sources["fsd"]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_recommended_threshold_quotes_its_source_on_its_scale(name):
    preset = PRESETS[name]
    for method, settings in preset.methods.items():
        if not {"tau", "tau_q", "tau_t", "gate_tau"} & set(settings):
            continue
        assert method in preset.sources, f"{name}.{method}: say where its thresholds come from"
        if "divergence" in settings:
            scale = "fsd-js" if settings["divergence"] == "fsd-js" else "JS"
            assert scale in preset.sources[method], f"{name}.{method}: name the scale of {settings}"
        for key in ("tau", "tau_q", "tau_t"):
            if key in settings and method != "fsd":
                assert f"{key} = {settings[key]}" in preset.sources[method]
        if method == "fsd":
            assert f"{settings['tau']}" in preset.sources[method]


def test_gated_presets_say_so():
    gated = {name for name, preset in PRESETS.items() if preset.gated}
    assert {"llama3", "llama3.1-70b", "llama3-70b-csd", "gemma2", "gemma2-27b"} <= gated
    assert not gated & {"embedded", "embedded-byte", "smollm2", "qwen2.5"}


def test_a_broken_preset_file_names_the_missing_keys(tmp_path):
    (tmp_path / "bad.toml").write_text('[half]\ndescription = "no models"\n')
    with pytest.raises(PlaygroundError, match="lacks target, draft") as error:
        load_presets(tmp_path)
    assert "\n" not in str(error.value)
