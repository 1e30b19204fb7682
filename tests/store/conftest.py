"""Fixtures of the store tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from testkit.migrating import new_databases


@pytest.fixture
def new_database(database_url: str) -> Iterator[Callable[[], str]]:
    """Empty databases on the session's server, dropped afterwards."""
    yield from new_databases(database_url)
