"""Measuring runs: the benchmark, quality figures, the outside baseline (transformers' assisted
generation), host-sync counts, students' agreement, and CSD's calibration command."""
