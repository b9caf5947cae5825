"""One candidate checked by a rule through the walk, as the worked examples of docs/rules.md
state them (a test helper: the product always verifies a whole drafted tree)."""

import torch

from playground.methods.drafting import chain
from playground.methods.walk import Walk, decide


def check_candidate(ctx, rule, token: int, p: torch.Tensor, q: torch.Tensor) -> Walk:
    """One candidate drawn from `q` checked against the verifier's `p` (raw rows the same): its
    record says whether it was kept, or what replaced it."""
    rows = torch.stack([p, p])  # the root's row decides; the leaf's would give a bonus
    return decide(ctx, chain([token], q[None], q[None]), rule, rows, rows)
