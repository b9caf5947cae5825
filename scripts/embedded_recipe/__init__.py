"""The embedded family's recipe, one module per step (scripts/build_embedded.py runs them)."""
