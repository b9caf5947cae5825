"""A run's rounds replayed on other costs: the rounds as the run drafted and verified them, the
run's own costs as a profile (`measured_profile`), and the profiles recorded from measurements of
other machines and pairs (assets/cost_profiles.json, each naming its source)."""

import json
import pathlib
from collections import defaultdict

from .cost_model import CostProfile, Round

PROFILES_FILE = pathlib.Path(__file__).resolve().parents[2] / "assets" / "cost_profiles.json"
THIS_RUN = "this run, as measured"


def rounds_of(steps, target_role: str = "target", draft_role: str = "draft") -> list[Round]:
    """Each round's draft forwards, the size of its target pass, and its tokens."""
    return [Round(step.forwards.get(draft_role, 0), step.drafted + 1, len(step.tokens))
            for step in steps if step.forwards.get(target_role)]


def measured_profile(steps, single_step_seconds: float, clock_seconds: float, target_role: str = "target",
                     draft_role: str = "draft") -> CostProfile | None:
    """The run's own costs in its T(1): c from all its draft forwards, a pass's cost by its size
    (the mean of the run's passes of that size), and the host's time per round: the rest of the
    decoder's clock (checks, the walk, what it did between passes). Replayed on this profile, the
    rounds take the run's own time, and project its own speedup over tokens x T(1)."""
    verified = [step for step in steps if step.forwards.get(target_role)]
    if not verified or not single_step_seconds:
        return None
    rounds = rounds_of(verified, target_role, draft_role)
    passes = defaultdict(list)
    for round_, step in zip(rounds, verified):
        passes[round_.pass_tokens].append(step.verify_seconds - step.extra.get("check_seconds", 0.0))
    curve = tuple((size, sum(seconds) / len(seconds) / single_step_seconds) for size, seconds in sorted(passes.items()))
    forwards = sum(r.draft_forwards for r in rounds)
    draft_seconds = sum(step.draft_seconds for step in steps)
    host = clock_seconds - draft_seconds - sum(sum(seconds) for seconds in passes.values())
    return CostProfile(THIS_RUN, "this run's draft forwards, target passes and host time, over its T(1)",
                       draft_seconds / forwards / single_step_seconds if forwards else 0.0, curve,
                       host / len(rounds) / single_step_seconds)


def recorded_profiles() -> list[CostProfile]:
    return [CostProfile(p["name"], p["source"], p["cost_ratio"], tuple(map(tuple, p["verify_curve"])))
            for p in json.loads(PROFILES_FILE.read_text(encoding="utf-8"))]
