"""The default family: the embedded SmolLM2 target, its distilled draft and qualifier (embedded.py
builds them). Its own module so that naming them does not import the builder."""

DEFAULT_TARGET, DEFAULT_DRAFT, DEFAULT_QUALIFIER = "smollm2-135m", "smollm2-draft", "smollm2-qualifier"
DEFAULT_FAMILY = {"target": DEFAULT_TARGET, "draft": DEFAULT_DRAFT, "qualifier": DEFAULT_QUALIFIER}
FEATURE_DRAFT = "feature-draft"  # the embedded target's EAGLE-3 head, beside the family (a preset uses it)
