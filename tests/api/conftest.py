"""Fixtures of the REST tests: the app of the module's ``ctx`` served by a real uvicorn on a free port, and an HTTP
client on it (a module defines ``ctx``: its settings, tokens and limits)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from kaynak.context import Context
from kaynak.server import create_app
from testkit.servers import running


@pytest.fixture(scope="module")
def base(ctx: Context) -> Iterator[str]:
    with running(create_app(ctx)) as url:
        yield url


@pytest.fixture(scope="module")
def http(base: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base, timeout=60) as client:
        yield client
