"""The models a run needs: the ones given, else the embedded family's; loaded, and refused where
their vocabularies do not suit the method."""

from .decoding.ngram import NGRAM
from .errors import PlaygroundError
from .methods import METHODS
from .models.default_family import DEFAULT_FAMILY
from .models.loading import LoadedModel, load_model, refuse_empty, vocabulary_relation


def load_family(method, given: dict, load_options: dict) -> dict[str, LoadedModel]:
    """The method's models; a prompt-lookup draft (NGRAM) is none, for the methods that take one."""
    if given["draft"] == NGRAM and not method.drafts_by_lookup:
        takes = ", ".join(m.name for m in METHODS.values() if m.drafts_by_lookup)
        raise PlaygroundError(f"{method.name} cannot draft by prompt lookup (draft {NGRAM!r}): use one of {takes}, "
                              "or a draft model")
    models = {}
    for role in ("target", "draft", "qualifier"):
        if role in method.roles and not (role == "draft" and given[role] == NGRAM):
            spec = _family_spec(method, role, given)
            models[role] = spec if isinstance(spec, LoadedModel) else load_model(spec, **load_options)
    return models


def _family_spec(method, role: str, given: dict):
    """The given model for `role`; an omitted one is the embedded family's, but only beside the
    embedded target (another target with the embedded draft or qualifier is a mix-up)."""
    spec = given[role]
    refuse_empty(role, spec)
    if spec is not None:
        return spec
    target = getattr(given["target"], "spec", given["target"])
    if role != "target" and target not in (None, DEFAULT_FAMILY["target"]):
        raise PlaygroundError(f"{method.name} needs a {role} model: pass one for target {target!r} (--{role})")
    return DEFAULT_FAMILY[role]


def check_vocabularies(method, models: dict[str, LoadedModel]) -> None:
    if method.vocabulary != "same" or "target" not in models:
        return
    for role in ("draft", "qualifier"):
        if role in models and vocabulary_relation(models["target"].tokenizer, models[role].tokenizer) != "same":
            raise PlaygroundError(
                f"{method.name} needs a {role} that shares the target's vocabulary, but "
                f"{models[role].spec!r} and {models['target'].spec!r} tokenize differently: "
                "use a heterogeneous method (slem, tli or slrs) or a same-family draft")
