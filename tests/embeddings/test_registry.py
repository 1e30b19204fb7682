"""The generic name registry behind register_embedder / register_reranker (kaynak.embeddings.registry)."""

from __future__ import annotations

import threading
import time

import pytest

from kaynak.embeddings.registry import Registry


class Unknown(Exception):
    pass


def _registry() -> Registry[object, int]:
    return Registry(lambda name: Unknown(name))


def test_exact_names_win_then_the_longest_prefix() -> None:
    reg = _registry()
    reg.register("a", lambda arg, o: ("exact", arg))
    reg.register("a:", lambda arg, o: ("short", arg))
    reg.register("a:b:", lambda arg, o: ("long", arg))
    assert reg.get(" A ", 0) == ("exact", "")
    assert reg.get("a:Xy", 0) == ("short", "Xy")  # the arg keeps its case
    assert reg.get("A:B:c", 0) == ("long", "c")
    with pytest.raises(Unknown):
        reg.get("b", 0)
    assert "A" in reg and "zz" not in reg
    del reg["a:b:"]
    assert reg.get("a:b:c", 0) == ("short", "b:c")


def test_one_instance_per_key_even_under_concurrency() -> None:
    reg = _registry()
    built: list[str] = []

    def slow(arg: str, options: int) -> object:
        built.append(arg)
        time.sleep(0.05)
        return object()

    reg.register("m:", slow)
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(reg.get("m:x", 1))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(g) for g in got}) == 1 and built == ["x"]
    assert reg.get("m:x", 2) is not got[0]  # another options value is another key by default


def test_listing_and_suggestions() -> None:
    reg = _registry()
    reg.register("e5-small", lambda arg, o: 1, info=384)
    reg.register("st:", lambda arg, o: 2, shown="st:<model>")
    listed = [(e.name, e.shown, e.info) for e in reg.entries()]
    assert listed == [("e5-small", "e5-small", 384), ("st:", "st:<model>", None)]
    assert reg.close_match("e5-smal") == "e5-small" and reg.close_match("zzz") is None
    with pytest.raises(ValueError):
        reg.register("  ", lambda arg, o: 3)
