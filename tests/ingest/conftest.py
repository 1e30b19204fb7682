"""Fixtures of the ingest tests: an ``IngestService`` on the test database, closed after the test (a module
defines ``settings`` and ``factory``: its chunk size, parse workers and counting embedders)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kaynak.config import Settings
from kaynak.embeddings.base import Embedder
from kaynak.ingest import IngestService
from kaynak.store import Store


@pytest.fixture
def service(store: Store, settings: Settings, factory: Callable[[str], Embedder]) -> Iterator[IngestService]:
    svc = IngestService(store, settings, factory)
    yield svc
    svc.close()
