"""Each class of bad input that once escaped as a traceback, a raw exception, invalid JSON or a
silent default: now one clear line (the project's error) naming the true cause, or a note."""

import json
import math
import os
import stat
import subprocess
import sys

import pytest
import torch

import playground
from playground.cli import main
from playground.errors import PlaygroundError
from playground.measure.calibrate import check_writable
from playground.methods.correction_memory import CorrectionMemory, load_memory
from playground.models.loading import load_model
from playground.models.tiny import tiny_llama


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory, tokenizer):
    """A good tiny target and draft on disk, and the broken folders and files users point at."""
    root = tmp_path_factory.mktemp("models")

    def save(name, **kwargs):
        folder = root / name
        tiny_llama(len(tokenizer), **kwargs).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        return folder

    save("target", seed=1)
    save("draft", layers=1, hidden=32, seed=2)
    (save("corrupt") / "model.safetensors").write_bytes(b"\x10" + b"\0" * 7 + b"{broken header}" + b"\0" * 64)
    (save("no-weights") / "model.safetensors").unlink()
    (save("broken-config") / "config.json").write_text("{ not json")
    unknown = save("unknown-arch")
    config = json.loads((unknown / "config.json").read_text())
    (unknown / "config.json").write_text(json.dumps({**config, "model_type": "no-such-arch"}))
    (root / "empty").mkdir()
    (root / "garbage.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(range(40)))
    return {path.name: str(path) for path in root.iterdir()}


def one_line(error) -> str:
    message = str(error.value if hasattr(error, "value") else error)
    assert message and "\n" not in message and "Traceback" not in message, message
    return message


@pytest.mark.parametrize("options, needle", [
    ({"seed": 2**64}, "seed"), ({"seed": -1}, "seed"), ({"seed": None}, "seed must be a whole number"),
    ({"candidates": None}, "candidates must be a whole number"), ({"max_new_tokens": 3.7}, "max_new_tokens"),
    ({"max_new_tokens": True}, "max_new_tokens"), ({"chat_template": "no"}, "chat_template must be true or false"),
    ({"temperature": math.inf}, "finite"), ({"tau": -math.inf}, "finite"), ({"top_p": "0.5"}, "top_p"),
    ({"memory": 3}, "memory must be text"), ({"gate_tau": 10**400}, "finite"),
])
def test_wrong_types_and_non_finite_values_are_refused_by_name(family, options, needle):
    with pytest.raises(PlaygroundError) as error:
        playground.generate("hi", **family, **{"method": "csd", "max_new_tokens": 2, **options})
    assert needle in one_line(error)


def test_lambda_infinity_means_never_rescue_and_the_json_stays_valid(family):
    run = playground.generate("hi", **family, method="csd", max_new_tokens=3, lambda_=math.inf)
    parsed = json.loads(run.to_json(), parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert parsed["config"]["lambda_"] is None


def test_cli_json_with_infinity_is_valid_json(model_dirs, capfd):
    assert main(["generate", "--prompt", "hi", "--target", model_dirs["target"], "--draft", model_dirs["draft"],
                 "--method", "csd", "--lambda", "inf", "--max-new-tokens", "2", "--json"]) == 0
    json.loads(capfd.readouterr().out, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))


@pytest.mark.parametrize("folder, cause", [
    ("corrupt", "does not load"), ("no-weights", "does not load"), ("broken-config", "does not load"),
    ("unknown-arch", "does not load"), ("empty", "no config.json"), ("garbage.gguf", "not a readable GGUF"),
])
def test_a_broken_local_model_names_what_is_wrong_not_the_network(model_dirs, folder, cause, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(PlaygroundError) as error:
        load_model(model_dirs[folder])
    message = one_line(error)
    assert cause in message and "offline" not in message


@pytest.mark.parametrize("device", ["tpu", "cuda:99", "cpu:1", ""]
                         + ([] if torch.cuda.is_available() else ["cuda"]))
def test_a_device_that_does_not_exist_here_is_refused(model_dirs, device):
    with pytest.raises(PlaygroundError) as error:
        load_model(model_dirs["target"], device=device)
    assert "device" in one_line(error)


def test_an_empty_model_name_is_an_error_not_the_embedded_model():
    with pytest.raises(PlaygroundError, match="empty target model"):
        playground.generate("hi", target="", method="ar")


def test_a_missing_role_names_itself(family):
    with pytest.raises(PlaygroundError) as error:
        playground.generate("hi", target=family["target"], draft=family["draft"], method="psd-f")
    assert "needs a qualifier" in one_line(error) and "smollm2" not in str(error.value)


def test_options_the_method_does_not_read_are_noted_once(family, model_dirs, capfd):
    run = playground.generate("hi", **family, method="sd", max_new_tokens=2, tau=0.3, tau_q=0.1)
    small_head = "draft_vocab off: the draft has only 35 tokens"  # a lever sd offers that cannot run here
    assert run.notes == [small_head, "sd does not read tau, tau_q: ignored"]
    assert json.loads(run.to_json())["stats"]["notes"] == run.notes
    # fsd drafts with the full head by default (its divergence is over the draft's whole q): nothing to note
    assert playground.generate("hi", **family, method="fsd", max_new_tokens=2, tau=0.3).notes == []
    main(["generate", "--prompt", "hi", "--target", model_dirs["target"], "--draft", model_dirs["draft"],
          "--method", "ar", "--candidates", "3", "--max-new-tokens", "2"])
    assert capfd.readouterr().err.count("note: ar does not read candidates") == 1


def test_a_memory_path_that_is_a_directory_says_so(tmp_path):
    with pytest.raises(PlaygroundError, match="is a directory"):
        load_memory(tmp_path)


def test_calibrate_refuses_a_bad_out_before_loading_anything(tmp_path, capfd, monkeypatch):
    monkeypatch.setattr("playground.models.loading.load_model", lambda *a, **k: pytest.fail("loaded a model"))
    for out in (tmp_path, "/proc/no-such-dir/memory.json"):
        assert main(["calibrate", "--out", str(out), "--limit", "1"]) == 2
        err = capfd.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--out" in err[0]
    check_writable(tmp_path / "new" / "memory.json")  # a folder that can be created is fine


def test_an_interrupted_save_leaves_no_temporary_file_and_a_save_keeps_the_mode(tmp_path, monkeypatch):
    memory = CorrectionMemory("t", "d", {(1, 2): 3})
    kept = tmp_path / "kept.json"
    kept.write_text("{}")
    kept.chmod(0o640)
    memory.save(kept)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    umask = os.umask(0o022)
    try:
        assert stat.S_IMODE(memory.save(tmp_path / "new.json").stat().st_mode) == 0o644
    finally:
        os.umask(umask)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("playground.methods.correction_memory.json.dump", interrupted)
    with pytest.raises(KeyboardInterrupt):
        memory.save(tmp_path / "interrupted.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.json", "new.json"]


@pytest.mark.slow
def test_json_into_a_closed_pipe_is_no_traceback(model_dirs):
    """`--json | head -c 1`, with the reader gone before the first write (no race)."""
    command = [sys.executable, "-m", "playground", "generate", "--prompt", "hi", "--target", model_dirs["target"],
               "--draft", model_dirs["draft"], "--max-new-tokens", "4", "--json"]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(command, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300,
                                env={**os.environ, "HF_HUB_OFFLINE": "1"})
    finally:
        os.close(write_end)
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr
