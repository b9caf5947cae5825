"""Bad input through the CLI, the Python API and the app, counted: how often the answer is one
clear line (the project's error), and how often it is something else.

    HF_HUB_OFFLINE=1 GRADIO_ANALYTICS_ENABLED=False python -m bench.hostile_probe [--only cli,api,ui,abuse] [--verbose]

CLI: `main(argv)` in this process with file descriptors 1 and 2 captured, so library output
counts too; a refusal must exit 2 with one `error:` line on stderr, `--json` must print valid
JSON. API: `playground.generate` on tiny in-code models; a refusal must be a one-line
PlaygroundError. UI: the app in public mode on tiny models, driven over HTTP by gradio_client;
a refusal must be a status line without a Python exception name, never Gradio's opaque
"upstream app raised an exception". Some cases expect a refusal ("bad"), some a result with a
note ("note"), some a result ("ok"): a bad case that runs counts as accepted silently.

Abuse: what one visitor of a public deployment tries against the others, each case on its own
freshly launched app (its own per-visitor counts), over 127.0.0.1 only and bounded in count: a
fresh session hash per request, a fresh forged x-forwarded-for address per request (as a Space's
proxy forwards it), the page's unload event called over HTTP to reset a count, a burst of runs
to fill the shared queue, a prompt of few characters but many tokens, a share link with
seed=1e30, and markup in the text of an error toast. A case "held" or it did not.
"""

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

torch.set_num_threads(1)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

# After the environment above: huggingface_hub and gradio read it when they are imported.
import playground  # noqa: E402
from playground.cli import main  # noqa: E402
from playground.errors import PlaygroundError  # noqa: E402
from playground.models.tiny import tiny_family, tiny_llama  # noqa: E402

RAW_EXCEPTION = re.compile(r"\b[A-Z]\w*(Error|Exception)\b|Traceback|struct\.error")


# -- fixtures on disk ------------------------------------------------------------------------------
def make_files(root: Path, tokenizer) -> dict[str, str]:
    """Tiny model folders (good and broken) and files a careless user might point at."""
    def model_dir(name, **kwargs):
        folder = root / name
        tiny_llama(len(tokenizer), **kwargs).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        return folder

    target, draft = model_dir("target", seed=1), model_dir("draft", layers=1, hidden=32, seed=2)
    corrupt = model_dir("corrupt")
    (corrupt / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not a header}" + b"\0" * 64)
    broken_config = model_dir("broken-config")
    (broken_config / "config.json").write_text("{ not json")
    unknown = model_dir("unknown-arch")
    config = json.loads((unknown / "config.json").read_text())
    (unknown / "config.json").write_text(json.dumps({**config, "model_type": "no-such-arch",
                                                     "architectures": ["NoSuchForCausalLM"]}))
    no_weights = model_dir("no-weights")
    (no_weights / "model.safetensors").unlink()
    (root / "empty").mkdir()
    (root / "garbage.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + os.urandom(40))
    (root / "garbage.json").write_text("{ nope")
    (root / "binary.txt").write_bytes(b"\xff\xfe\x00\x01" * 8)
    (root / "unreadable.json").write_text("{}")
    (root / "unreadable.json").chmod(0)
    return {"target": str(target), "draft": str(draft), "corrupt": str(corrupt), "broken_config": str(broken_config),
            "unknown": str(unknown), "no_weights": str(no_weights), "empty": str(root / "empty"),
            "gguf": str(root / "garbage.gguf"), "garbage_json": str(root / "garbage.json"),
            "binary": str(root / "binary.txt"), "unreadable": str(root / "unreadable.json"), "root": str(root)}


# -- CLI ------------------------------------------------------------------------------------------
def cli_cases(f: dict) -> list[tuple[str, list[str]]]:
    """(expectation, argv); every generate case runs on the tiny models unless it names others."""
    tiny = ["--target", f["target"], "--draft", f["draft"], "--max-new-tokens", "3"]
    gen = ["generate", "--prompt", "hi", *tiny]
    bad = [
        [*gen, "--seed", str(2**70)], [*gen, "--seed", "-1"], [*gen, "--temperature", "inf"],
        [*gen, "--temperature", "nan"], [*gen, "--tau", "nan"], [*gen, "--top-p", "0"], [*gen, "--top-k", "-1"],
        [*gen, "--candidates", "0"], [*gen, "--candidates", "10000"], [*gen, "--max-new-tokens", "0"],
        [*gen, "--max-new-tokens", "99999999"], [*gen, "--draft-vocab", "-1"], [*gen, "--draft-confidence", "2"],
        [*gen, "--random-accept", "2"], [*gen, "--lambda", "nan"], [*gen, "--divergence", "hellinger"],
        [*gen, "--draft-sampling", "best"], [*gen, "--method", "nope"], [*gen, "--candidates", "many"],
        ["generate", "--prompt", "", *tiny], ["generate", "--prompt", "\x00", *tiny],
        ["generate", "--prompt", "x" * 30_000, *tiny],
        ["generate", "--prompt", "hi", "--target", "", "--max-new-tokens", "2"],
        ["generate", "--prompt", "hi", "--draft", "", "--max-new-tokens", "2"],
        [*gen, "--method", "psd-f"],
        ["generate", "--prompt", "hi", "--target", f["corrupt"], "--method", "ar"],
        ["generate", "--prompt", "hi", "--target", f["gguf"], "--method", "ar"],
        ["generate", "--prompt", "hi", "--target", f["empty"], "--method", "ar"],
        ["generate", "--prompt", "hi", "--target", f["broken_config"], "--method", "ar"],
        ["generate", "--prompt", "hi", "--target", f["unknown"], "--method", "ar"],
        ["generate", "--prompt", "hi", "--target", f["no_weights"], "--method", "ar"],
        ["generate", "--prompt", "hi", "--target", "/no/such/dir", "--method", "ar"],
        ["generate", "--prompt", "hi", "--target", "nobody/no-such-model", "--method", "ar"],
        [*gen, "--device", "tpu"], [*gen, "--device", "cuda"], [*gen, "--device", "cuda:7"], [*gen, "--device", ""],
        [*gen, "--dtype", "int8"], [*gen, "--device-map", "bogus"],
        [*gen, "--method", "csd", "--memory", f["root"]], [*gen, "--method", "csd", "--memory", f["garbage_json"]],
        [*gen, "--method", "csd", "--memory", f["root"] + "/missing.json"],
        [*gen, "--method", "csd", "--memory", f["unreadable"]],
        ["generate", *tiny], ["generate", "--prompt"], ["generate", "--prompt", "hi", "--bogus"],
        ["calibrate", "--out", f["root"], "--target", f["target"], "--draft", f["draft"], "--limit", "1"],
        ["calibrate", "--out", "/proc/no/such.json", "--target", f["target"], "--draft", f["draft"], "--limit", "1"],
        ["calibrate", "--out", f["root"] + "/m.json", "--corpus", f["root"] + "/missing.txt"],
        ["calibrate", "--out", f["root"] + "/m.json", "--corpus", f["root"]],
        ["calibrate", "--out", f["root"] + "/m.json", "--corpus", f["binary"]],
        ["calibrate", "--out", f["root"] + "/m.json", "--target", "", "--draft", f["draft"], "--limit", "1"],
        ["calibrate", "--out", f["root"] + "/m.json", "--memory", f["garbage_json"]],
        ["calibrate", "--out", f["root"] + "/m.json", "--memory", f["root"]],
        *[["calibrate", "--out", f["root"] + "/m.json", "--target", f["target"], "--draft", f["draft"], "--limit",
           "1", flag, value] for flag, value in [("--max-new-tokens", "0"), ("--candidates", "0"),
                                                 ("--temperature", "inf"), ("--seed", str(2**70)),
                                                 ("--device", "tpu"), ("--dtype", "int8"), ("--limit", "x")]],
        ["calibrate"],
        *[["bench", "--out", f["root"] + "/bench", "--target", f["target"], "--draft", f["draft"], "--limit", "1",
           "--max-new-tokens", "2", "--methods", "sd", "--no-random-control", flag, value]
          for flag, value in [("--methods", "nope"), ("--taus", "x"), ("--candidates", "0"), ("--family", "nope"),
                              ("--prompts", f["root"] + "/missing.jsonl"), ("--repeats", "0"), ("--threads", "-1"),
                              ("--max-new-tokens", "0"), ("--temperature", "inf"), ("--device", "tpu"),
                              ("--out", f["gguf"]), ("--target", "")]],
        ["bench"],
        ["serving", "--candidates", "0"], ["serving", "--method", "nope"], ["serving", "--target", ""],
        ["serving", "--candidates", "x"],
        ["models", "--bogus"], ["methods", "extra"], [], ["nope"],
    ]
    notes = [[*gen, "--method", "sd", "--tau", "0.3"], [*gen, "--method", "ar", "--candidates", "3"]]
    ok = [[*gen, "--json"], [*gen, "--method", "fsd", "--lambda", "inf", "--json"]]
    return [("bad", a) for a in bad] + [("note", a) for a in notes] + [("ok", a) for a in ok]


def wrong_cause(text: str, memory: str | None, message: str) -> bool:
    """A refusal that blames something else: 'offline' for a local file, the embedded qualifier
    for one that was never given, 'not found' for a memory path that is a directory."""
    if "/tmp" in text and "offline" in message:
        return True
    if "psd-f" in text and "smollm2-qualifier" in message:
        return True
    return bool(memory) and os.path.isdir(memory) and "not found" in message


@contextlib.contextmanager
def captured_fds():
    """Redirect file descriptors 1 and 2 (Python, C and library output alike) to files."""
    files = {fd: tempfile.TemporaryFile(mode="w+b") for fd in (1, 2)}
    saved = {fd: os.dup(fd) for fd in files}
    sys.stdout.flush(), sys.stderr.flush()
    for fd, handle in files.items():
        os.dup2(handle.fileno(), fd)
    result = {}
    try:
        yield result
    finally:
        sys.stdout.flush(), sys.stderr.flush()
        for fd, handle in files.items():
            os.dup2(saved[fd], fd)
            os.close(saved[fd])
            handle.seek(0)
            result[fd] = handle.read().decode("utf-8", "replace")


def run_cli_case(argv: list[str]) -> tuple[int, str, str, bool]:
    with captured_fds() as out:
        escaped = False
        try:
            code = main(argv)
        except SystemExit as exit_info:
            code = exit_info.code if isinstance(exit_info.code, int) else 1
        except BaseException:  # noqa: BLE001  (what this probe counts)
            traceback.print_exc()
            code, escaped = 1, True
    return code, out[1], out[2], escaped


def classify_cli(expect: str, argv: list[str]) -> str:
    code, stdout, stderr, escaped = run_cli_case(argv)
    lines = [line for line in stderr.splitlines() if line.strip()]
    if escaped or "Traceback" in stderr:
        return "traceback"
    if "--json" in argv and code == 0:
        try:
            json.loads(stdout, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
        except ValueError:
            return "invalid JSON"
    if expect == "bad":
        if code == 0:
            return "accepted silently"
        if code != 2:
            return f"exit {code}"
        if not (len(lines) == 1 and lines[0].startswith("error:")):
            return "multi-line error"
        memory = argv[argv.index("--memory") + 1] if "--memory" in argv else None
        return "wrong cause" if wrong_cause(" ".join(argv), memory, lines[0]) else "clear"
    if code != 0:
        return "refused a good input" if expect == "ok" else "refused (expected a note)"
    if expect == "note" and not any("note" in line.lower() for line in lines):
        return "ignored silently"
    return "clear"


def broken_pipe_case(f: dict) -> str:
    """`generate --json | head -c 1`: the reader leaves early; no traceback may follow."""
    command = [sys.executable, "-m", "playground", "generate", "--prompt", "hi", "--target", f["target"],
               "--draft", f["draft"], "--max-new-tokens", "40", "--json"]
    shell = " ".join(f"'{part}'" for part in command) + " | head -c 1"
    result = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=300)
    return "traceback" if "Traceback" in result.stderr or "BrokenPipe" in result.stderr else "clear"


# -- API ------------------------------------------------------------------------------------------
API_BAD_VALUES = {
    int: [None, "3", True, 3.7, -1, 2**70, float("inf"), float("nan"), [1]],
    float: [None, "0.5", True, float("inf"), float("-inf"), float("nan"), -1.0, [0.1]],
    bool: [None, "no", "yes", 1, 0.5],
    str: [None, 3, "", "   ", "nope"],
}


# Values among API_BAD_VALUES that mean something: lambda inf disables rescue, random_accept -1 is
# "off". (A top_k or draft_vocab of 2**70 is past the options table's range: refused.)
VALID_EXTREMES = {("lambda_", float("inf")), ("random_accept", -1.0)}


def api_cases(f: dict) -> list[tuple[str, dict]]:
    from dataclasses import fields  # noqa: PLC0415

    from playground.config import RunConfig  # noqa: PLC0415

    cases = []
    for field in fields(RunConfig):
        kind = {"int": int, "float": float, "bool": bool, "str": str}.get(field.type, field.type)
        for value in API_BAD_VALUES[kind]:
            if field.name in ("memory",) and value in ("", "   "):
                continue  # empty memory means "none": a valid value
            if any(field.name == name and type(value) is type(v) and value == v for name, v in VALID_EXTREMES):
                continue
            method = "csd" if field.name in ("memory", "lambda_", "gate_tau") else \
                "psd-f" if field.name in ("tau_q", "tau_t", "draft_length", "qualifier_length") else \
                "fsd" if field.name in ("tau", "divergence", "random_accept") else "sd"
            options = {"method": method, field.name: value} if field.name != "method" else {field.name: value}
            cases.append(("bad", {"options": options}))
    for path in ("root", "garbage_json", "unreadable", "gguf"):
        cases.append(("bad", {"options": {"method": "csd", "memory": f[path]}}))
    for spec in ("corrupt", "gguf", "empty", "broken_config", "unknown", "no_weights"):
        cases.append(("bad", {"options": {"method": "ar"}, "target": f[spec]}))
    for device in ("tpu", "cuda", "cuda:7", "gpu"):
        cases.append(("bad", {"options": {"method": "ar"}, "target": f["target"], "device": device}))
    cases += [("bad", {"options": {"method": "ar"}, "target": f["target"], "dtype": "int8"}),
              ("bad", {"options": {"method": "ar"}, "target": f["target"], "device_map": "bogus"}),
              ("bad", {"options": {"method": "ar"}, "target": ""}),
              ("bad", {"options": {"method": "psd-f"}, "target": f["target"], "draft": f["draft"], "qualifier": None}),
              ("bad", {"prompt": None}), ("bad", {"prompt": 42}), ("bad", {"options": {"bogus": 1}})]
    cases += [("note", {"options": {"method": "sd", "tau": 0.3}}),
              ("note", {"options": {"method": "ar", "candidates": 2}})]
    return cases


def classify_api(expect: str, case: dict, family: dict) -> str:
    kwargs = {role: case.get(role, family[role]) for role in ("target", "draft", "qualifier")}
    kwargs.update({k: case[k] for k in ("device", "dtype", "device_map") if k in case})
    options = {"max_new_tokens": 3, **case.get("options", {})}
    try:
        run = playground.generate(case.get("prompt", "hello"), **kwargs, **options)
    except PlaygroundError as error:
        if expect != "bad":
            return "refused a good input"
        if "\n" in str(error):
            return "multi-line error"
        memory = case.get("options", {}).get("memory")
        return "wrong cause" if wrong_cause(repr(case), memory if isinstance(memory, str) else None,
                                            str(error)) else "clear"
    except Exception:  # noqa: BLE001  (what this probe counts)
        return "raw exception"
    try:
        json.dumps(run.to_dict(), allow_nan=False, default=str)
    except ValueError:
        return "invalid JSON"
    if expect == "bad":
        return "accepted silently"
    if expect == "note" and not getattr(run, "notes", None):
        return "ignored silently"
    return "clear"


# -- UI -------------------------------------------------------------------------------------------
def ui_cases(f: dict) -> list[tuple[str, str, dict]]:
    """(expectation, endpoint, overrides of the default inputs)."""
    c = [
        ("generate", {"candidates": None}), ("generate", {"seed": None}), ("generate", {"seed": 2**70}),
        ("generate", {"seed": -1}), ("generate", {"max_new_tokens": 600}), ("generate", {"max_new_tokens": "x"}),
        ("generate", {"temperature": None}), ("generate", {"candidates": 99}), ("generate", {"method": "nope"}),
        ("generate", {"method": None}), ("generate", {"prompt": None}), ("generate", {"prompt": "x" * 30_000}),
        ("generate", {"prompt": "a\x00b"}), ("generate", {"top_p": 0}), ("generate", {"show_rejected": "no"}),
        ("generate", {"method": "csd", "memory": "/etc/shadow"}), ("generate", {"method": "csd", "memory": "/etc"}),
        ("generate", {"method": "csd", "memory": "/no/such/file"}),
        ("generate", {"method": "csd", "memory": f["unreadable"]}),
        ("compare", {"method": "fsd", "sweep_values": ", ".join(["0.5"] * 300)}),
        ("compare", {"sweep_option": "max_new_tokens", "sweep_values": "2048"}),
        ("compare", {"sweep_option": "candidates", "sweep_values": "64"}),
        ("compare", {"sweep_values": "a, b"}), ("compare", {"method": "fsd", "sweep_values": "inf"}),
        ("compare", {"method": "fsd", "sweep_values": "1e309"}), ("compare", {"sweep_option": "nope"}),
        ("compare", {"mode": "methods", "methods": []}),
        ("compare", {"method": "csd", "memory": "/etc/shadow"}),
        ("load", {"target": "", "draft": "", "qualifier": ""}), ("load", {"target": "/etc/shadow"}),
        ("load", {"target": "/etc"}), ("load", {"target": "nobody/model"}), ("load", {"target": None}),
        ("step", {"position": "x"}), ("step", {"position": -1}), ("step", {"seed": 2**70}),
        ("step", {"method": "csd", "memory": "/etc/shadow"}),
    ]
    ok = [  # sweeps of integer options, and a long list of one method (run once)
        ("compare", {"sweep_option": "candidates", "sweep_values": "2, 3"}),
        ("compare", {"sweep_option": "top_k", "sweep_values": "1, 5"}),
        ("compare", {"sweep_option": "seed", "sweep_values": "1, 2"}),
        ("compare", {"sweep_option": "max_new_tokens", "sweep_values": "2, 4"}),
        ("compare", {"method": "psd-f", "sweep_option": "draft_length", "sweep_values": "1, 2"}),
        ("compare", {"mode": "methods", "methods": ["sd"] * 40}),
    ]
    return [("bad", endpoint, overrides) for endpoint, overrides in c] + [("ok", e, o) for e, o in ok]


def _ui_inputs(endpoint: str, overrides: dict) -> list:
    from playground.ui.options import all_controls  # noqa: PLC0415

    values = {c.name: c.default for c in all_controls()} | {"max_new_tokens": 3}
    values |= {k: v for k, v in overrides.items() if k in values}
    controls = [values[c.name] for c in all_controls()]
    o = {"prompt": "hello there", "method": "sd", "show_rejected": False, "mode": "sweep", "sweep_option": "tau",
         "sweep_values": "0.1", "methods": ["ar"], "position": 0,
         "target": "tiny-target", "draft": "tiny-draft", "qualifier": "tiny-qualifier"} | overrides
    return {
        "generate": [o["prompt"], o["method"], o["show_rejected"], *controls],
        "compare": [o["prompt"], o["method"], o["mode"], o["sweep_option"], o["sweep_values"], o["methods"], *controls],
        "step": [o["prompt"], o["method"], o["position"], *controls],
        "load": [o["target"], o["draft"], o["qualifier"], o["method"]],
    }[endpoint]


def probed_path(overrides: dict) -> str | None:
    path = overrides.get("memory") or overrides.get("target")
    return path if isinstance(path, str) and path.startswith("/") else None


def classify_ui(client_factory, expect: str, endpoint: str, overrides: dict, answers: dict) -> str:
    client = client_factory()
    try:
        result = client.predict(*_ui_inputs(endpoint, overrides), api_name=f"/{endpoint}")
    except Exception as error:  # noqa: BLE001  (what this probe counts)
        text = str(error)
        answers[endpoint, probed_path(overrides)] = text
        if "upstream" in text.lower() or not text.strip():
            return "opaque"
        return "raw exception text" if RAW_EXCEPTION.search(text) else "clear"
    status = result if isinstance(result, str) else result[0]
    answers[endpoint, probed_path(overrides)] = status
    if endpoint == "compare" and "compare-column" in status:
        return "clear" if expect == "ok" and status.count("compare-column") <= 8 else "accepted silently"
    if expect == "ok":
        return "refused a good input"
    if RAW_EXCEPTION.search(status):
        return "raw exception text"
    if endpoint == "load" and "status-error" not in status:
        try:
            after = client.predict(*_ui_inputs("generate", {}), api_name="/generate")[0]
        except Exception:  # noqa: BLE001
            return "session broken"
        return "session broken" if "status-error" in after or "done" not in after else "accepted silently"
    if "status-error" in status or "error" in status.lower():
        return "clear"
    return "accepted silently"


def told_apart(answers: dict) -> list[str]:
    """Per endpoint, the probed server paths whose answers differ (the path itself blanked out)."""
    differing = []
    for endpoint in {e for e, path in answers if path}:
        by_path = {path: text.replace(path, "PATH") for (e, path), text in answers.items() if e == endpoint and path}
        if len(set(by_path.values())) > 1:
            differing += [f"{endpoint} {path}" for path in by_path]
    return differing


def unexpected_tracebacks(server_log: str) -> int:
    """The server log's tracebacks but those of gradio.Error: Gradio logs the one-line refusals the
    app raises on purpose (a bad number or choice checked before the handler) with their trace."""
    tracebacks = server_log.split("Traceback (most recent call last)")[1:]
    return sum(not re.search(r"^gradio\.exceptions\.Error: ", trace, re.MULTILINE) for trace in tracebacks)


def probe_ui(family: dict, files: dict, verbose: bool) -> dict:
    from gradio_client import Client  # noqa: PLC0415

    from playground.models.loading import load_model  # noqa: PLC0415
    from playground.models.presets import Preset  # noqa: PLC0415
    from playground.ui import build_demo, launch_options  # noqa: PLC0415

    os.environ["PLAYGROUND_PUBLIC"] = "1"
    os.environ["PLAYGROUND_RUNS_PER_MINUTE"] = "0"  # its cases all come from one address; "abuse" counts runs
    by_spec = {m.spec: m for m in family.values()}
    preset = Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", "tiny test family", default_method="sd")
    demo = build_demo(loader=lambda spec: by_spec.get(spec) or load_model(spec), presets=[preset])
    _, url, _ = demo.queue().launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True,
                                    **launch_options())
    tally = {}
    try:
        answers = {}
        with captured_fds() as log:  # the server's log: Gradio prints each unexpected exception there
            for expect, endpoint, overrides in ui_cases(files):
                verdict = classify_ui(lambda: Client(url, verbose=False), expect, endpoint, overrides, answers)
                tally.setdefault(verdict, []).append(f"{endpoint} {_short(overrides)}")
        tally["file probes told apart"] = told_apart(answers)
    finally:
        demo.close()
        os.environ.pop("PLAYGROUND_PUBLIC", None)
        os.environ.pop("PLAYGROUND_RUNS_PER_MINUTE", None)
    if verbose:
        for verdict, cases in tally.items():
            print("\n".join(f"ui  {verdict:22} {case}" for case in cases), flush=True)
    return tally, unexpected_tracebacks(log[2])


# -- abuse: one visitor against the others ----------------------------------------------------------
ABUSE_RUNS_PER_MINUTE = 5  # small, so that each case stays short
ABUSE_RUNS_AT_ONCE = 2
ABUSE_UPLOADS_PER_MINUTE = 6  # the public defaults
ABUSE_EXPORTS_PER_MINUTE = 6
FLOOD_CLIENTS = 8


@contextlib.contextmanager
def public_app(family: dict):
    """The app in public mode on the tiny models, launched on 127.0.0.1; yields its URL."""
    from playground.models.presets import Preset  # noqa: PLC0415
    from playground.ui import build_demo, launch_options  # noqa: PLC0415

    limits = {"PLAYGROUND_PUBLIC": "1", "PLAYGROUND_RUNS_PER_MINUTE": str(ABUSE_RUNS_PER_MINUTE),
              "PLAYGROUND_RUNS_AT_ONCE": str(ABUSE_RUNS_AT_ONCE)}
    os.environ.update(limits)
    by_spec = {m.spec: m for m in family.values()}
    demo = build_demo(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft",
                                                                  "tiny-qualifier")])
    _, url, _ = demo.queue().launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True,
                                    **launch_options())
    try:
        yield url
    finally:
        demo.close()
        for name in limits:
            os.environ.pop(name, None)


def page_event(url: str, event: str) -> int:
    """The fn_index of the page's `event` (load, unload), from the config any client can read."""
    import httpx  # noqa: PLC0415

    config = httpx.get(url + "config", timeout=10).json()
    return next(d["id"] for d in config["dependencies"] if any(t[1] == event for t in d["targets"]))


def call_over_http(url: str, fn_index: int, data: list, session_hash: str, query: str = "") -> dict:
    """Join the queue as the page does (its own address's query included) and read the event's
    completion: {"success": ..., "output": ...}."""
    import httpx  # noqa: PLC0415

    body = {"data": data, "fn_index": fn_index, "session_hash": session_hash, "event_data": None,
            "trigger_id": None}
    httpx.post(f"{url}gradio_api/queue/join?{query}", json=body, timeout=10).raise_for_status()
    with httpx.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session_hash},
                      timeout=30) as stream:
        for line in stream.iter_lines():
            message = json.loads(line[5:]) if line.startswith("data:") else {}
            if message.get("msg") == "process_completed":
                return message
    return {"success": False, "output": {"error": "no completion"}}


def generate_status(client, **overrides) -> str:
    return client.predict(*_ui_inputs("generate", {"method": "ar", **overrides}), api_name="/generate")[0]


def runs_from_fresh_clients(url: str, headers=lambda n: None) -> tuple[str, str]:
    """ABUSE_RUNS_PER_MINUTE + 3 runs, each from a new client (a new session hash) sending
    `headers(n)`: held if no more than the limit ran."""
    from gradio_client import Client  # noqa: PLC0415

    tries = ABUSE_RUNS_PER_MINUTE + 3
    ran = sum("done" in generate_status(Client(url, verbose=False, headers=headers(n))) for n in range(tries))
    return ("held" if ran <= ABUSE_RUNS_PER_MINUTE else "flooded"), f"{ran} of {tries} runs ran"


def fresh_hash_per_request(url: str) -> tuple[str, str]:
    verdict, ran = runs_from_fresh_clients(url)
    return verdict, ran + " (a new hash each)"


def forged_forwarded_address(url: str) -> tuple[str, str]:
    """The app as on a Space, each request as the Space's proxy forwards it: a fresh address the
    sender wrote in x-forwarded-for, then the sender's own, which the proxy appended."""
    os.environ["SYSTEM"] = "spaces"
    try:
        verdict, ran = runs_from_fresh_clients(url, lambda n: {"x-forwarded-for": f"192.0.2.{n}, 203.0.113.5"})
    finally:
        os.environ.pop("SYSTEM", None)
    return verdict, ran + " (a new hash and a new forged address each)"


def unload_resets_the_count(url: str) -> tuple[str, str]:
    from gradio_client import Client  # noqa: PLC0415

    client = Client(url, verbose=False)
    ran = sum("done" in generate_status(client) for _ in range(ABUSE_RUNS_PER_MINUTE))
    unloaded = call_over_http(url, page_event(url, "unload"), [], client.session_hash)
    after = generate_status(client)
    verdict = "held" if "done" not in after else "flooded"
    return verdict, f"{ran} runs, unload {'ran' if unloaded.get('success') else 'failed'}, then: {_short(after)}"


def queue_flood(url: str) -> tuple[str, str]:
    """FLOOD_CLIENTS runs at once from one address, each with its own session."""
    from gradio_client import Client  # noqa: PLC0415

    def one(_):
        try:
            return "done" if "done" in generate_status(Client(url, verbose=False), max_new_tokens=200) else "other"
        except Exception as error:  # noqa: BLE001  (the refusal arrives as an HTTP error)
            detail = getattr(getattr(error, "response", None), "text", "") or str(error)
            return "refused" if "at once" in detail and "\n" not in detail.strip() else f"error: {detail[:80]}"

    with ThreadPoolExecutor(FLOOD_CLIENTS) as pool:
        outcomes = list(pool.map(one, range(FLOOD_CLIENTS)))
    counts = {outcome: outcomes.count(outcome) for outcome in set(outcomes)}
    return ("held" if counts.get("refused", 0) and counts.get("done", 0) >= 1 else "flooded"), str(counts)


def token_heavy_prompt(url: str) -> tuple[str, str]:
    from gradio_client import Client  # noqa: PLC0415

    started = time.perf_counter()
    status = generate_status(Client(url, verbose=False), prompt="\U000E0041" * 20_000)
    seconds = time.perf_counter() - started
    held = "status-error" in status and "tokens" in status and seconds < 5
    return ("held" if held else "stalled"), f"{seconds:.2f} s: {_short(status)}"


def seed_link(url: str) -> tuple[str, str]:
    answer = call_over_http(url, page_event(url, "load"), ["sd"], uuid.uuid4().hex, query="seed=1e30")
    outputs = answer.get("output", {}).get("data", [])
    status = next((o for o in outputs if isinstance(o, str) and "status" in o), "")
    huge = any(isinstance(o, dict) and isinstance(o.get("value"), (int, float)) and abs(o["value"]) > 2**63
               for o in outputs)
    held = answer.get("success") and "seed" in status and not huge
    return ("held" if held else "broken"), _short(status)


def markup_in_toasts(family: dict, root: Path) -> tuple[str, str]:
    from playground.models.presets import Preset  # noqa: PLC0415
    from playground.ui.handlers import Handlers  # noqa: PLC0415

    os.environ["PLAYGROUND_PUBLIC"] = "1"
    path = root / "markup-memory.json"
    markup = "<img src=x onerror=alert(1)>"
    path.write_text(json.dumps({"format": "csd-correction-memory", "version": 1, "target": markup,
                                "draft": "tiny-draft", "rejections": 1, "pairs": [[1, 2, 1]]}))
    by_spec = {m.spec: m for m in family.values()}
    handlers = Handlers(loader=by_spec.__getitem__, presets=[Preset("tiny", "tiny-target", "tiny-draft", "")])
    try:
        with warnings.catch_warnings(record=True) as toasts:  # gr.Warning outside a request warns
            warnings.simplefilter("always")
            handlers.upload_memory("k", str(path))
    finally:
        os.environ.pop("PLAYGROUND_PUBLIC", None)
    texts = [str(toast.message) for toast in toasts]
    return ("held" if texts and not any("<img" in text for text in texts) else "markup"), _short(texts)


@contextlib.contextmanager
def addresses():
    """Each client's address is the x-forwarded-for it sends, as behind a Space's proxy; yields
    client_for(url, address)."""
    from .client_views import client_for  # noqa: PLC0415

    os.environ["PLAYGROUND_TRUSTED_PROXIES"] = "1"
    try:
        yield client_for
    finally:
        os.environ.pop("PLAYGROUND_TRUSTED_PROXIES", None)


def rest_route(url: str) -> tuple[str, str]:
    """The side door: Gradio's REST route runs an event past the queue and every cap."""
    import httpx  # noqa: PLC0415

    answer = httpx.post(url + "gradio_api/run/generate", json={"data": _ui_inputs("generate", {"method": "ar"})},
                        timeout=30)
    return ("held" if answer.status_code == 404 else "open"), f"POST /gradio_api/run/generate: {answer.status_code}"


def _refused_at_join(error: Exception) -> bool:
    detail = getattr(getattr(error, "response", None), "text", "") or str(error)
    return "at once" in detail and "\n" not in detail.strip()


def cheap_event_flood(url: str) -> tuple[str, str]:
    """60 chart events at once from one address, then a Generate from another address."""
    with addresses() as client:
        flooder = client(url, "192.0.2.66")

        def one(_):
            try:
                flooder.predict(api_name="/charts")
                return "ran"
            except Exception as error:  # noqa: BLE001  (the refusal arrives as an HTTP error)
                return "refused" if _refused_at_join(error) else "error"

        with ThreadPoolExecutor(30) as pool:
            outcomes = list(pool.map(one, range(60)))
        other = generate_status(client(url, "192.0.2.77"))
    counts = {outcome: outcomes.count(outcome) for outcome in set(outcomes)}
    held = "done" in other and not counts.get("error")
    return ("held" if held else "flooded"), f"{counts}; another address then: {_short(other)}"


def compare_beside_a_stream(url: str) -> tuple[str, str]:
    """One address's Compare (ar and sd, 200 tokens) while another address's Generate streams:
    the stream's longest pause between updates."""
    from .client_views import Visit, follow  # noqa: PLC0415

    with addresses() as client:
        comparer, streamer = client(url, "192.0.2.10"), client(url, "192.0.2.11")
        compare = comparer.submit(*_ui_inputs("compare", {"mode": "methods", "methods": ["ar", "sd"],
                                                          "max_new_tokens": 200}), api_name="/compare")
        time.sleep(1)
        visit, started = Visit("stream"), time.monotonic()
        follow(visit, streamer.submit(*_ui_inputs("generate", {"max_new_tokens": 200, "seed": 3}),
                                      api_name="/generate"), started)
        compare.result()
    pauses = [later - earlier for earlier, later in zip(visit.updates, visit.updates[1:])]
    longest = max(pauses, default=0.0)
    return ("held" if visit.outcome == "done" and longest <= 5 else "starved"), \
        f"stream {visit.outcome}, longest pause {longest:.2f} s over {len(visit.updates)} updates"


def identical_runs(url: str) -> tuple[str, str]:
    """Six addresses press Generate on the same settings at once: computed once, replayed five times."""
    from .client_views import Visit, follow  # noqa: PLC0415

    with addresses() as client:
        clients = [client(url, f"192.0.2.{20 + n}") for n in range(6)]
        visits, started = [Visit(str(n)) for n in range(6)], time.monotonic()
        jobs = [c.submit(*_ui_inputs("generate", {"max_new_tokens": 40, "seed": 7}), api_name="/generate")
                for c in clients]
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda pair: follow(pair[0], pair[1], started), zip(visits, jobs)))
    outcomes = [visit.outcome for visit in visits]
    held = outcomes.count("replayed") == 5 and outcomes.count("done") == 1
    return ("held" if held else "recomputed"), str({o: outcomes.count(o) for o in set(outcomes)})


def upload_flood(url: str) -> tuple[str, str]:
    """One address posts 20 uploads of 1 MiB to Gradio's upload route (no event uses them)."""
    import httpx  # noqa: PLC0415

    with addresses():
        codes = [httpx.post(url + "gradio_api/upload", files={"files": ("m.json", b"x" * 2**20)},
                            headers={"x-forwarded-for": "192.0.2.30"}, timeout=30) for _ in range(20)]
    stored = sum(answer.status_code == 200 for answer in codes)
    refusals = [answer.text for answer in codes if answer.status_code != 200]
    held = stored <= ABUSE_UPLOADS_PER_MINUTE and refusals and all(
        "uploads per minute" in text and "\n" not in text.strip() for text in refusals)
    return ("held" if held else "stored"), f"{stored} of 20 stored; then: {_short(refusals[:1])}"


def export_flood(url: str) -> tuple[str, str]:
    """One address asks for its run's charts 20 times."""
    with addresses() as client:
        visitor = client(url, "192.0.2.40")
        generate_status(visitor)
        answers = []
        for _ in range(20):
            _, status = visitor.predict(api_name="/export_charts")  # a refused download's box is hidden
            answers.append(status if "status-error" in str(status) else "offered")
    offered = answers.count("offered")
    refused = [a for a in answers if a != "offered"]
    held = offered <= ABUSE_EXPORTS_PER_MINUTE and refused and all("downloads" in a and "per minute" in a
                                                                    for a in refused)
    return ("held" if held else "stored"), f"{offered} of 20 offered; then: {_short(refused[:1])}"


def full_disk(url: str) -> tuple[str, str]:
    """The app's files past the disk cap: an upload and a download are refused in one line."""
    import httpx  # noqa: PLC0415

    from playground.ui.sharing import disk  # noqa: PLC0415

    os.environ["PLAYGROUND_DISK_MB"] = "1"
    filler = Path(disk.folders()[0]) / "probe-filler.bin"
    filler.parent.mkdir(parents=True, exist_ok=True)
    filler.write_bytes(b"\0" * 2**21)
    time.sleep(disk.MEASURED_FOR)
    try:
        upload = httpx.post(url + "gradio_api/upload", files={"files": ("m.json", b"{}")}, timeout=30)
        with addresses() as client:
            visitor = client(url, "192.0.2.50")
            generate_status(visitor)
            _, status = visitor.predict(api_name="/export_json")
    finally:
        filler.unlink()
        os.environ.pop("PLAYGROUND_DISK_MB", None)
    held = upload.status_code == 507 and "status-error" in status and "is full" in status
    return ("held" if held else "stored"), (f"upload {upload.status_code}: {_short(upload.text)}; "
                                            f"download: {_short(status)}")


def long_link(url: str) -> tuple[str, str]:
    import http.client  # noqa: PLC0415
    from urllib.parse import urlsplit  # noqa: PLC0415

    server = urlsplit(url)
    connection = http.client.HTTPConnection(server.hostname, server.port, timeout=30)
    connection.request("GET", "/?prompt=" + "a" * 70_000)
    answer = connection.getresponse()
    line = answer.read().decode()
    held = answer.status == 414 and "\n" not in line.strip()
    return ("held" if held else "bare"), f"{answer.status}: {_short(line)}"


def probe_abuse(family: dict, files: dict, verbose: bool) -> dict:
    tally = {}
    cases = {"fresh hash per request": fresh_hash_per_request, "forged forwarded address": forged_forwarded_address,
             "unload resets the count": unload_resets_the_count,
             "queue flood": queue_flood, "token-heavy prompt": token_heavy_prompt, "seed=1e30 link": seed_link,
             "REST route past the queue": rest_route, "cheap-event flood": cheap_event_flood,
             "a Compare beside a stream": compare_beside_a_stream, "identical runs": identical_runs,
             "upload flood": upload_flood, "export flood": export_flood, "full disk": full_disk,
             "long link": long_link}
    for name, case in cases.items():
        with public_app(family) as url:
            verdict, detail = case(url)
        tally.setdefault(verdict, []).append(f"{name}: {detail}")
    verdict, detail = markup_in_toasts(family, Path(files["root"]))
    tally.setdefault(verdict, []).append(f"markup in toasts: {detail}")
    if verbose:
        for verdict, cases_ in tally.items():
            print("\n".join(f"abuse {verdict:8} {case}" for case in cases_), flush=True)
    return tally


def _short(value) -> str:
    text = repr(value)
    return text if len(text) < 90 else text[:87] + "..."


def summarize(name: str, tally: dict) -> str:
    total = sum(len(v) for k, v in tally.items() if k != "file probes told apart")
    counts = ", ".join(f"{k} {len(v)}" for k, v in sorted(tally.items(), key=lambda kv: -len(kv[1])))
    return f"{name}: {total} tried: {counts}"


def run(parts: set, verbose: bool) -> list[str]:
    family = tiny_family()
    tokenizer = family["target"].tokenizer
    lines = []
    with tempfile.TemporaryDirectory() as root:
        files = make_files(Path(root), tokenizer)
        if "cli" in parts:
            tally = {}
            for expect, argv in cli_cases(files):
                verdict = classify_cli(expect, argv)
                tally.setdefault(verdict, []).append(" ".join(argv)[-110:])
                if verbose:
                    print(f"cli {verdict:22} {_short(argv[:1] + argv[-4:])}", flush=True)
            tally.setdefault(broken_pipe_case(files), []).append("generate --json | head -c 1")
            lines.append(summarize("CLI", tally))
        if "api" in parts:
            tally = {}
            for expect, case in api_cases(files):
                verdict = classify_api(expect, case, family)
                tally.setdefault(verdict, []).append(_short(case))
                if verbose:
                    print(f"api {verdict:22} {_short(case)}", flush=True)
            lines.append(summarize("API", tally))
        if "ui" in parts:
            tally, tracebacks = probe_ui(family, files, verbose)
            lines.append(summarize("UI", tally) + f"; {tracebacks} unexpected tracebacks in the server log (a "
                         "gradio.Error's, one of the app's own refusals, is expected)")
        if "abuse" in parts:
            lines.append(summarize("Abuse", probe_abuse(family, files, verbose)))
        Path(files["unreadable"]).chmod(0o600)
    return lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="cli,api,ui,abuse", help="comma-separated: cli, api, ui, abuse")
    parser.add_argument("--verbose", action="store_true", help="print every case and its verdict")
    args = parser.parse_args()
    for line in run(set(args.only.split(",")), args.verbose):
        print(line)
