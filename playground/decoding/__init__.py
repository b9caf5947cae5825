"""Decoding's ground floor: a model with its KV cache, sampling, divergences, token trees, the
drafting levers' tensors, detokenization and a run's counters. Imports nothing above it."""
