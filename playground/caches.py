"""What the playground keeps between runs, in one place, and how to let it go.

- models/loading.py: each loaded model, by spec, device, dtype and placement, shared by every run and
  every visitor (loading takes seconds to minutes);
- forward_costs.py: each model's recent forward times by number of new tokens (the waits' pace);
- int8_draft.py: a float32 draft's int8 copy, built once per model;
- vocabulary.py: each tokenizer's token strings and each pair's intersection (tli, slrs, slem).

The last three are keyed by their model or tokenizer (weakly, or a few at most), so they go with
it. `clear()` drops them all: the UI's Unload, and whoever needs a cold start.
"""

from .decoding import int8_draft, vocabulary
from .decoding.speed import forward_costs
from .models import loading


def clear() -> None:
    loading.unload_all()
    forward_costs.clear()
    int8_draft.clear()
    vocabulary.token_strings.cache_clear()
    vocabulary.intersection.cache_clear()
