"""Context: made once per object, even when the first requests arrive together."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kaynak import context as context_module
from kaynak.context import Context


def test_concurrent_first_use_opens_one_store_and_one_service(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kaynak.store import Store

    opened: list[Any] = []
    real_open = Store.open

    def slow_open(*args: Any, **kwargs: Any) -> Store:
        time.sleep(0.2)  # a first connection takes time: every other thread arrives meanwhile
        store = real_open(*args, **kwargs)
        opened.append(store)
        return store

    monkeypatch.setattr(Store, "open", staticmethod(slow_open))
    ctx = Context()
    start = threading.Barrier(8)
    got: list[tuple[int, int]] = []

    def first_request() -> None:
        start.wait()
        got.append((id(ctx.search), id(ctx.store)))

    threads = [threading.Thread(target=first_request) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    try:
        assert len(got) == 8 and len(set(got)) == 1
        assert len(opened) == 1, f"{len(opened)} stores opened"
    finally:
        ctx.close()
    assert "store" not in ctx.__dict__


def test_a_stand_in_put_in_the_cache_is_used(env: dict[str, str]) -> None:
    ctx = Context()
    ctx.__dict__["ingest"] = marker = object()
    assert ctx.ingest is marker
    del ctx.__dict__["ingest"]
    ctx.close()


def test_the_descriptor_on_the_class() -> None:
    with pytest.raises(AttributeError):
        Context.store  # noqa: B018
    assert isinstance(Context.__dict__["store"], context_module._once)


def test_close_without_use_opens_nothing(tmp_path: Path) -> None:
    ctx = Context(data_dir=tmp_path, embedder="hash")
    ctx.close()
    assert "store" not in ctx.__dict__ and "ingest" not in ctx.__dict__
