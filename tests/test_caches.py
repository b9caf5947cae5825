"""What the playground keeps between runs (playground/caches.py), and that clearing lets it go."""

import playground
from playground import caches
from playground.decoding import int8_draft, vocabulary
from playground.decoding.speed import forward_costs
from playground.models import loading


def test_clearing_the_caches_lets_go_of_everything_kept_between_runs(family):
    playground.generate("hi", method="tli", target=family["target"], draft=family["draft"], max_new_tokens=4)
    int8_draft.int8_twin(family["draft"].model)
    assert forward_costs._seconds and int8_draft._twins and vocabulary.intersection.cache_info().currsize
    caches.clear()
    assert not (forward_costs._seconds or int8_draft._twins or loading._loaded)
    assert vocabulary.intersection.cache_info().currsize == vocabulary.token_strings.cache_info().currsize == 0
