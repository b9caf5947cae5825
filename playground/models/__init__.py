"""Which models exist and how they load: model specs and the process-wide model cache, what a
public deployment may load, the embedded family and its students, presets, the tiny family."""
