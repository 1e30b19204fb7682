"""Shared fixtures: one embedded PostgreSQL server for the whole test session, in a temporary data folder."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kaynak.store import Store
from kaynak.store.server import embedded_uri, stop_embedded

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

#: Variables of the person running the tests that the suite keeps: they steer the suite, not kaynak (everything
#: else named KAYNAK_* is removed).
KEPT = {
    "KAYNAK_TEST_DATABASE_URL",
    "KAYNAK_SLOW_TESTS",
    "KAYNAK_TEST_ARTIFACTS",
    "KAYNAK_SCHEMATHESIS_EXAMPLES",
    "KAYNAK_CHROMIUM",
    "KAYNAK_CHROMEDRIVER",
}


def _isolate_environment() -> None:
    """The suite runs the same whatever the person's shell or config files say: every ``KAYNAK_*`` variable is
    removed (tests set what they need), ``KAYNAK_CONFIG`` names an empty file (no ``./kaynak.toml`` is read) and
    the user config folder is an empty temporary one. Done at import, so session fixtures and the processes tests
    start see the same."""
    for key in [k for k in os.environ if k.startswith("KAYNAK_") and k not in KEPT]:
        del os.environ[key]
    home = Path(tempfile.mkdtemp(prefix="kaynak-test-config-"))
    (home / "empty.toml").write_text("", encoding="utf-8")
    os.environ["KAYNAK_CONFIG"] = str(home / "empty.toml")
    os.environ["XDG_CONFIG_HOME"] = str(home)


_isolate_environment()


@pytest.fixture(scope="session")
def data_dir() -> Iterator[Path]:
    """A kaynak data folder whose embedded server is stopped and removed when the session ends.

    It lives outside pytest's numbered temporary folders, which a concurrent pytest session may prune while the
    server still runs. ``KAYNAK_TEST_DATABASE_URL`` runs the suite against another server instead.
    """
    path = Path(tempfile.mkdtemp(prefix="kaynak-test-"))
    yield path
    stop_embedded(path)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def database_url(data_dir: Path) -> str:
    return os.environ.get("KAYNAK_TEST_DATABASE_URL") or embedded_uri(data_dir)


@pytest.fixture(scope="session")
def store(database_url: str) -> Iterator[Store]:
    s = Store(database_url, pool_size=4)
    yield s
    s.close()


@pytest.fixture
def unique_name() -> str:
    return "t_" + uuid.uuid4().hex[:10]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, data_dir: Path, database_url: str) -> dict[str, str]:
    """Environment for kaynak processes and settings in tests: the session's server, the hash embedder."""
    values = {
        "KAYNAK_DATA_DIR": str(data_dir),
        "KAYNAK_DATABASE_URL": database_url,
        "KAYNAK_EMBEDDER": "hash",
    }
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("KAYNAK_CONFIG", raising=False)
    return values
