"""Loaders registered at run time reach the parse worker processes (kaynak.loaders.register)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kaynak import loaders
from kaynak.context import Context
from kaynak.types import LoadedDocument
from testkit.plugins.shout_loader import load_shout


@pytest.fixture
def shout() -> Iterator[None]:
    loaders.register([".shout"], load_shout)
    try:
        yield
    finally:
        loaders._REGISTRY.pop(".shout", None)
        loaders._ADDED.pop(".shout", None)
        loaders.SUPPORTED_EXTENSIONS = frozenset(loaders._REGISTRY)


def test_a_loader_registered_at_run_time_is_used_by_the_parse_workers(
    shout: None, env: dict[str, str], unique_name: str, tmp_path: Path
) -> None:
    (tmp_path / "a.shout").write_text("the boiler pressure is two bar", encoding="utf-8")
    assert loaders.added_loaders() == ((".shout", "testkit.plugins.shout_loader:load_shout"),)
    with Context() as ctx:
        report = ctx.ingest.ingest([tmp_path], unique_name)
        assert report.ok and report.added == ["a.shout"], report
        hits = ctx.search.search("boiler pressure", unique_name, mode="keyword", k=1)
        assert hits and hits[0].text == "THE BOILER PRESSURE IS TWO BAR"
        ctx.store.delete_collection(unique_name)


def test_a_worker_registers_what_the_submitting_process_added(shout: None) -> None:
    ref = loaders.added_loaders()
    loaders._REGISTRY.pop(".shout")
    loaders._ADDED.clear()
    loaders.use_added(ref)  # what a worker does with ParseTask.loaders
    assert loaders.loader_for("x.SHOUT") is load_shout


def test_only_importable_functions_can_be_registered() -> None:
    def local(path: Path, data: bytes, options: loaders.LoadOptions) -> LoadedDocument:
        raise AssertionError

    for func in (local, lambda p, d, o: LoadedDocument("", [])):
        with pytest.raises(ValueError, match="worker processes"):
            loaders.register([".nope"], func)
    assert ".nope" not in loaders.SUPPORTED_EXTENSIONS
