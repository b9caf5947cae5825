"""A setting found here, taken to a serving engine: the vLLM and SGLang launch commands for the
lossless draft-model setting (a target, a draft, K), with each engine's own option names.

Only `sd` has an equivalent: both engines run Leviathan/Chen speculative sampling with a separate
draft model, and vLLM drafts by prompt lookup too (`draft="ngram"`). Our token tree is not theirs:
the commands draft a chain (SGLang's own tree, `--speculative-eagle-topk`, branches at every
step and ranks its nodes by the draft's scores). The lossy rules (fsd, psd, csd) and the
heterogeneous-vocabulary algorithms (slem, tli, slrs) exist in neither. Of our CPU levers, neither
engine takes `draft_confidence` for a draft model, and SGLang's pruned draft vocabulary
(`--speculative-token-map`) is for EAGLE heads.
"""

import argparse
import json
import shlex

from .config import RunConfig
from .decoding.ngram import MAX_NGRAM, NGRAM
from .errors import PlaygroundError
from .methods import METHODS
from .models.default_family import DEFAULT_FAMILY
from .models.loading import refuse_empty

SERVABLE = ("sd",)


def engine_model_id(spec: str) -> str:
    """What a serving engine loads: the Hub id for the embedded target, a directory for the rest."""
    from .models import embedded  # noqa: PLC0415

    if spec == embedded.DEFAULT_TARGET:
        return embedded.HUB_TARGET
    if spec in embedded.EMBEDDED_MODELS:
        return str(embedded.cache_dir() / spec)
    return spec


def serving_commands(method: str, target: str, draft: str, candidates: int) -> dict[str, str]:
    """{engine: shell command}; empty when the method has no serving-engine equivalent."""
    if method not in METHODS:
        raise PlaygroundError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
    if candidates < 1:
        raise PlaygroundError(f"candidates (K) must be at least 1, got {candidates}")
    refuse_empty("target", target)
    refuse_empty("draft", draft)
    if method not in SERVABLE:
        return {}
    if draft == NGRAM:
        lookup = json.dumps({"method": "ngram", "num_speculative_tokens": candidates, "prompt_lookup_max": MAX_NGRAM})
        return {"vLLM": f"vllm serve {shlex.quote(engine_model_id(target))} --speculative-config {shlex.quote(lookup)}"}
    target, draft = engine_model_id(target), engine_model_id(draft)
    vllm_config = json.dumps({"model": draft, "num_speculative_tokens": candidates})
    return {
        "vLLM": f"vllm serve {shlex.quote(target)} --speculative-config {shlex.quote(vllm_config)}",
        "SGLang": (f"python -m sglang.launch_server --model-path {shlex.quote(target)} "
                   f"--speculative-algorithm STANDALONE --speculative-draft-model-path {shlex.quote(draft)} "
                   f"--speculative-num-steps {candidates} --speculative-eagle-topk 1 "
                   f"--speculative-num-draft-tokens {candidates + 1}"),
    }


def describe(method: str, target: str, draft: str, candidates: int, tree_width: int = 1) -> str:
    commands = serving_commands(method, target, draft, candidates)
    if not commands:
        return (f"{method} has no serving-engine equivalent: vLLM and SGLang implement only lossless "
                "speculative decoding with a draft model (method sd).")
    tree = (f"# This run drafted a token tree (tree width {tree_width}); these commands draft a chain of "
            f"{candidates}.\n" if tree_width > 1 and draft != NGRAM else "")
    return tree + "\n".join(f"# {engine}\n{command}" for engine, command in commands.items())


def register(subparsers) -> None:
    parser = subparsers.add_parser("serving", help="print the vLLM / SGLang command for a setting")
    parser.add_argument("--method", default=RunConfig.method)
    parser.add_argument("--target", default=DEFAULT_FAMILY["target"])
    parser.add_argument("--draft", default=DEFAULT_FAMILY["draft"])
    parser.add_argument("--candidates", type=int, default=RunConfig.candidates)
    parser.add_argument("--tree", dest="tree_width", type=int, default=1, help="the run's tree width (notes it)")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    print(describe(args.method, args.target, args.draft, args.candidates, args.tree_width))
    return 0
