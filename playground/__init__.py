"""Speculative decoding playground: the public Python API.

    import playground
    run = playground.generate("What is 2 + 2?", method="sd", candidates=5)
    print(run.text, run.stats.acceptance_rate)
"""

from .config import RunConfig
from .engine import generate, stream
from .errors import PlaygroundError
from .methods import METHODS
from .models.loading import load_model
from .run_record import Run

__all__ = ["METHODS", "RunConfig", "PlaygroundError", "Run", "generate", "load_model", "stream"]
