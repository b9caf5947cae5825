"""The draft model as a run drafts with it: the drafting levers applied, and which of them ran.

The levers belong to the draft, not to one method: every method that drafts with a model offers
them (`Method.levers`), so that comparing methods compares rules, not drafts.
- `draft_int8`: the draft's linear layers in int8 (int8_draft.py); only a float32 model on an x86 CPU.
- `draft_vocab`: a pruned output layer (draft_vocab.py), q = 0 outside the N most frequent
  tokens. A rule that compares q in a divergence compares the pruned draft's q, the
  distribution the candidates were drawn from; JS, TV and KL(q || p) stay finite on it, but
  KL(p || q) and the FSD authors' js_div are infinite wherever the pruned head gives 0, so with
  those two the head is not pruned.
- `draft_confidence`: a block ends after a token the draft doubts (methods/base.py).
- `tree_width`: a token tree, with siblings beside the tokens the draft doubts and a prompt
  lookup's branch, verified by every method's one walk (methods/drafting.py, methods/walk.py).

A feature draft (EAGLE-3, models/feature_draft.py) takes the same levers but `draft_vocab` (it
scores a vocabulary of its own already, so `draft_int8` quantizes that output layer too, as it does
a draft model's pruned one); it reads the target's features, so its runner comes with the target's,
which keeps them (decoding/feature_runner.py).

A lever that cannot run is recorded as off in the run's config and named once in its notes.
"""

from dataclasses import dataclass, field, replace

from ..config import RunConfig
from ..decoding import int8_draft
from ..decoding.cache import KVRunner
from ..decoding.divergence import SCALES
from ..decoding.draft_vocab import pruned_head
from ..decoding.feature_runner import FeatureRunner
from ..errors import PlaygroundError
from ..models.feature_draft import FeatureDraft, check_target
from ..models.loading import LoadedModel

OFF = {"draft_int8": False, "draft_vocab": 0, "draft_confidence": 0.0, "tree_width": 1}


@dataclass
class DraftSetup:
    config: RunConfig  # the run's config with every lever that did not run switched off
    notes: list[str] = field(default_factory=list)  # why a lever that was asked for did not run
    runner: KVRunner | FeatureRunner | None = None
    target_runner: KVRunner | None = None  # a feature draft's target: it keeps the features the draft reads


def lever_blocker(config: RunConfig, method, draft: LoadedModel | None, lever: str) -> str | None:
    """Why `lever`, switched on in `config`, cannot run for this method and draft (None: it runs)."""
    if lever not in method.levers:
        return f"{method.name} does not offer it"
    if draft is None:
        return "the draft is a prompt lookup, not a model"
    if lever == "draft_int8" and not int8_draft.applies(draft.model):
        return "the draft is not a float32 model on an x86 CPU"
    if lever == "draft_vocab":
        if is_feature_draft(draft):
            return f"a feature draft scores its own {draft.model.config.draft_vocab_size} tokens already"
        return _pruning_blocker(config, method, draft)
    return None


def is_feature_draft(draft: LoadedModel | str | None) -> bool:
    """Whether the draft is a feature draft (not a draft model, a prompt lookup or none)."""
    return isinstance(getattr(draft, "model", None), FeatureDraft)


def _pruning_blocker(config: RunConfig, method, draft: LoadedModel) -> str | None:
    vocab_size = draft.model.config.get_text_config().vocab_size
    if config.draft_vocab >= vocab_size:
        return f"the draft has only {vocab_size} tokens"
    scale = SCALES[config.divergence]
    if method.divergence_on_draft and scale.needs_proposer_support:
        return f"{scale.label()} is infinite where a pruned head gives q = 0"
    return None


def draft_setup(config: RunConfig, method, draft: LoadedModel | None, target: LoadedModel | None = None) -> DraftSetup:
    """The levers that run for this method and draft, the config that records them, and the
    draft runner that applies them (None without a draft); for a feature draft, the `target`'s
    runner too."""
    setup, blocked = DraftSetup(config), {}
    for lever, off in OFF.items():
        if getattr(config, lever) == off:
            continue
        blocker = lever_blocker(config, method, draft, lever)
        if blocker is not None:
            setup.config = replace(setup.config, **{lever: off})
            if lever in method.levers:
                blocked.setdefault(blocker, []).append(lever)
    setup.notes = [f"{', '.join(levers)} off: {blocker}" for blocker, levers in blocked.items()]
    if is_feature_draft(draft):
        setup.target_runner, setup.runner = feature_runners(setup.config, method, draft, target)
    elif draft is not None:
        setup.runner = draft_runner(setup.config, draft)
    return setup


def feature_runners(config: RunConfig, method, draft: LoadedModel, target: LoadedModel | None):
    """(the target's runner, keeping the head's layers' inputs; the head's runner reading them)."""
    if not method.drafts_by_features or target is None:
        takes = ", ".join(m.name for m in _methods() if m.drafts_by_features)
        raise PlaygroundError(f"{method.name} cannot draft with a feature draft ({draft.spec!r} reads the target's "
                              f"own features as the target reads the context): use one of {takes}, or a draft model")
    check_target(draft.model, draft.spec, target.model.config)
    target_runner = KVRunner(target.model, name="target", tokens=len(target.tokenizer),
                             feature_layers=draft.model.layer_ids)
    head = int8_draft.int8_twin(draft.model, with_output_layer=True) if config.draft_int8 else draft.model
    return target_runner, FeatureRunner(head, target_runner, target.model.get_input_embeddings())


def _methods():
    from . import METHODS  # noqa: PLC0415  (the registry imports every method, this module among them)

    return METHODS.values()


def describe(config: RunConfig) -> str:
    """The draft as a run drafted with it, in words, for step mode ("" when no lever ran)."""
    parts = []
    if config.draft_int8:
        parts.append("int8 linear layers")
    if config.draft_vocab:
        parts.append(f"output layer pruned to its {config.draft_vocab} most frequent tokens (q = 0 for every other "
                     "token; the rule's q and any divergence are this draft's)")
    if config.draft_confidence:
        parts.append(f"a block ends after a token it gives less than {config.draft_confidence:g}")
    if config.tree_width > 1:
        parts.append(f"a token tree: up to {config.tree_width - 1} more candidates beside each token it doubts, and "
                     "the prompt lookup's proposal as one more branch where the context repeats an earlier part")
    return f"The draft as it ran: {'; '.join(parts)}." if parts else ""


def draft_runner(config: RunConfig, draft: LoadedModel) -> KVRunner:
    """A new runner (its own KV cache) of the draft with `config`'s levers, which must apply."""
    model = int8_draft.int8_twin(draft.model) if config.draft_int8 else draft.model
    runner = KVRunner(model, name="draft", tokens=len(draft.tokenizer))
    if config.draft_vocab:
        runner.head = pruned_head(draft.model, draft.tokenizer, config.draft_vocab, int8=config.draft_int8)
    return runner
