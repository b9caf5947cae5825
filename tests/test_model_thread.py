"""The app's model work runs on one thread: one OpenMP pool, whatever Gradio thread asks."""

import threading

import pytest

from playground.models.presets import Preset
from playground.ui.handlers import Handlers
from playground.ui.sharing import model_thread

from .test_ui_handlers import KEY, PROMPT, values


def test_calls_from_any_thread_run_on_one_thread_and_may_nest():
    seen = []
    def where():
        seen.append(threading.get_ident())
        return model_thread.call("", threading.get_ident)  # a nested call runs in place, no deadlock
    askers = [threading.Thread(target=lambda: seen.append(model_thread.call("", where))) for _ in range(3)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    assert len(seen) == 6 and len(set(seen)) == 1 and seen[0] != threading.get_ident()


def test_a_generators_items_and_its_close_run_on_the_model_thread():
    where = []
    def counting():
        try:
            for item in range(5):
                where.append(threading.get_ident())
                yield item
        finally:
            where.append(threading.get_ident())
    items = model_thread.iterate(counting())
    assert [next(items), next(items)] == [0, 1]
    items.close()
    assert len(where) == 3 and len(set(where)) == 1 and where[0] != threading.get_ident()
    assert list(model_thread.iterate(counting())) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("method", ["ar", "sd"])
def test_a_ui_run_loads_and_decodes_on_the_model_thread(family, monkeypatch, method):
    threads = set()
    for model in family.values():
        forward = model.model.forward
        monkeypatch.setattr(model.model, "forward",
                            lambda *a, forward=forward, **k: threads.add(threading.get_ident()) or forward(*a, **k))
    loaded = []
    by_spec = {m.spec: m for m in family.values()}
    handlers = Handlers(loader=lambda spec: loaded.append(threading.get_ident()) or by_spec[spec],
                        presets=[Preset("tiny", "tiny-target", "tiny-draft", "tiny-qualifier", "tiny test family")])
    list(handlers.generate(KEY, PROMPT, method, False, *values(draft_int8=False)))
    assert threads and loaded and threads | set(loaded) == {model_thread.call("", threading.get_ident)}
