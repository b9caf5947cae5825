"""Experiments, each answering one question with paired measurements (`python -m bench.<name>`;
results in bench/results/), the robustness probes of a public deployment (hostile_probe,
session_memory), and what the paired scripts share (helpers)."""
