"""`python -m playground ...`: generate, models, methods, and the subcommands other modules add.

Every subcommand is a module function `register(subparsers)` that adds a parser whose `run`
default takes the parsed args and returns an exit code. Bad input: one line on stderr, exit 2.
"""

import argparse
import math
import os
import signal
import sys
import threading
from dataclasses import fields

from .config import RunConfig
from .errors import PlaygroundError


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per RunConfig field, named --field-name (or its `flag` metadata)."""
    for f in fields(RunConfig):
        flag = f.metadata.get("flag", "--" + f.name.replace("_", "-"))
        kwargs = {"dest": f.name, "help": f.metadata["help"], "default": argparse.SUPPRESS}
        if f.type is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = _parse_float if f.type is float else f.type
        if "choices" in f.metadata:
            kwargs["choices"] = f.metadata["choices"]
        parser.add_argument(flag, **kwargs)


def _parse_float(text: str) -> float:
    return math.inf if text.strip().lower() in ("inf", "infinity") else float(text)


def _add_model_flags(parser: argparse.ArgumentParser) -> None:
    for role in ("target", "draft", "qualifier"):
        parser.add_argument(f"--{role}", help=f"{role} model: embedded name, local directory, .gguf file or hub id")
    parser.add_argument("--device", help="cpu, cuda, mps (default: best available)")
    parser.add_argument("--dtype", help="float32, bfloat16, float16 (default: by device)")
    parser.add_argument("--device-map", help="'auto': spread a model too big for one device (accelerate)")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="run code shipped with a hub model (off unless you trust its author)")


def register_generate(subparsers) -> None:
    parser = subparsers.add_parser("generate", help="generate text with one method, print the run")
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--json", action="store_true", help="print the run as one JSON object")
    _add_model_flags(parser)
    _add_config_flags(parser)
    parser.set_defaults(run=_generate)


def _generate(args) -> int:
    from .engine import generate  # noqa: PLC0415  (keeps `--help` fast)
    from .methods.heterogeneous import same_vocabulary_note  # noqa: PLC0415

    options = {f.name: getattr(args, f.name) for f in fields(RunConfig) if hasattr(args, f.name)}
    run = generate(args.prompt, target=args.target, draft=args.draft, qualifier=args.qualifier,
                   device=args.device, dtype=args.dtype, device_map=args.device_map,
                   trust_remote_code=args.trust_remote_code, **options)
    if args.json:
        print(run.to_json())
    else:
        stats = run.stats
        print(run.text)
        print(f"\n[{run.method}] {stats.tokens} tokens, {stats.tokens_per_second:.1f} tok/s, "
              f"acceptance {stats.acceptance_rate}", file=sys.stderr)
    for note in [*(f"note: {note}" for note in run.notes), same_vocabulary_note(run)]:
        if note:
            print(note, file=sys.stderr)
    return 0


def register_methods(subparsers) -> None:
    parser = subparsers.add_parser("methods", help="list the decoding methods")
    parser.set_defaults(run=_list_methods)


def _list_methods(args) -> int:
    from .methods import METHODS  # noqa: PLC0415

    for method in METHODS.values():
        kind = "lossless" if method.lossless else "lossy"
        print(f"{method.name:12} {kind:8} {method.summary}")
    return 0


def _commands():
    from . import serving  # noqa: PLC0415
    from .measure import benchmark, calibrate  # noqa: PLC0415
    from .models import catalog  # noqa: PLC0415

    return [register_generate, register_methods, catalog.register, calibrate.register, benchmark.register,
            serving.register]


def _quiet_library_output() -> None:
    """transformers draws a progress bar per model load and warns on stderr; the CLI's stderr is
    for errors (which name their cause) and notes."""
    from transformers.utils import logging  # noqa: PLC0415

    logging.disable_progress_bar()
    logging.set_verbosity_error()


class _OneLineErrors(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the fix, not the whole usage block."""

    def error(self, message):
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def main(argv=None) -> int:
    parser = _OneLineErrors(prog="python -m playground", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for register in _commands():
        register(subparsers)
    args = parser.parse_args(argv)
    _quiet_library_output()
    if threading.current_thread() is threading.main_thread():  # so that cleanups (temporary files) run
        signal.signal(signal.SIGTERM, _exit_on_terminate)
    try:
        return args.run(args)
    except PlaygroundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: out of memory: choose smaller models or fewer tokens", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`--json | head`): nothing more to say to it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail
        return 1


def _exit_on_terminate(signum, frame):
    raise SystemExit(128 + signum)
