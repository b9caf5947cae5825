"""The method registry: adding a method means adding a module and one line here."""

from .autoregressive import AR, DRAFT_ONLY
from .base import Decoding, Method
from .calibrated import CSD, CSD_GATE, CSD_MEMORY
from .fuzzy import FSD
from .heterogeneous import SLEM, SLRS, TLI
from .pyramid import PSD_A, PSD_F
from .standard import SD

METHODS: dict[str, Method] = {m.name: m for m in (AR, DRAFT_ONLY, SD, FSD, PSD_A, PSD_F, CSD, CSD_MEMORY, CSD_GATE,
                                                  SLEM, TLI, SLRS)}

__all__ = ["METHODS", "Decoding", "Method"]
