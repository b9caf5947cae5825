"""Speculative decoding across different vocabularies (Timor et al., ICML 2025; seed 004):
SLEM (string-level exact match), TLI (token-level intersection), SLRS (string-level rejection
sampling). The target's token sequence is ctx.ids; the drafter keeps its own (DraftContext)."""

from .common import same_vocabulary_note, string_summary
from .slem import SLEM
from .slrs import SLRS
from .tli import TLI

__all__ = ["SLEM", "SLRS", "TLI", "same_vocabulary_note", "string_summary"]
