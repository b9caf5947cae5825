"""A run's rounds replayed on other costs: the rounds as the run drafted and verified them, the
run's own costs as a profile (its speed account's, `SpeedAccount.profile`), and the profiles
recorded from measurements of other machines and pairs (assets/cost_profiles.json, each naming
its source and what its passes count)."""

import functools
import json
import pathlib

from .cost_model import CostProfile

PROFILES_FILE = pathlib.Path(__file__).resolve().parents[3] / "assets" / "cost_profiles.json"
THIS_RUN = "this run, as measured"


@functools.cache
def recorded_profiles() -> tuple[CostProfile, ...]:
    """The profiles of assets/cost_profiles.json, read once (the what-if asks at each event)."""
    return tuple(CostProfile(p["name"], p["source"], p["cost_ratio"], tuple(map(tuple, p["verify_curve"])))
                 for p in json.loads(PROFILES_FILE.read_text(encoding="utf-8")))


def pass_cost_sentence(tokens: int = 5) -> str:
    """What a target pass over `tokens` new tokens costs in T(1) on each recorded profile."""
    costs = "; ".join(f"{p.pass_cost(tokens):.2f} on {p.name}" for p in recorded_profiles())
    return f"a pass over {tokens} new tokens costs, in target steps, {costs}"
