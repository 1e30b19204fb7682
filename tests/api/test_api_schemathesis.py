"""Property-based run over the REST API's OpenAPI schema (schemathesis): 0 server errors, 0 conformance failures.

Every operation gets a bounded number of generated requests (``KAYNAK_SCHEMATHESIS_EXAMPLES``, default 12, for
valid and again for invalid data), with the write token, against the ASGI app on the test database; every answer must be
documented in the schema (status code, content type, headers, body) and none may be a 5xx. Counts are printed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is in the test extra: pip install -e '.[test]'")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis import checks as st_checks  # noqa: E402

from kaynak.config import load_settings  # noqa: E402
from kaynak.context import Context  # noqa: E402
from kaynak.server import create_app  # noqa: E402

TOKEN = "schema-token"
EXAMPLES = int(os.environ.get("KAYNAK_SCHEMATHESIS_EXAMPLES", "12"))
CHECKS = [
    st_checks.not_a_server_error,
    st_checks.status_code_conformance,
    st_checks.content_type_conformance,
    st_checks.response_headers_conformance,
    st_checks.response_schema_conformance,
]


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory, database_url: str) -> Iterator[Any]:
    data_dir: Path = tmp_path_factory.mktemp("schemathesis")
    ctx = Context(
        load_settings(
            data_dir=data_dir,
            database_url=database_url,
            embedder="hash",
            api_token=TOKEN,
            max_upload_mb=1,
            parse_workers=1,
            parse_timeout_s=30,
        )
    )
    docs = data_dir / "docs"
    docs.mkdir()
    (docs / "sayfa.html").write_text("<html><body><h1>Başlık</h1><p>Kat malikleri kurulu.</p></body></html>")
    (docs / "not.md").write_text("# Not\n\nAidat her ay ödenir.\n")
    ctx.ingest.ingest([docs], "sema", language="turkish")  # documents with originals for /v1/documents/{id}/file
    yield create_app(ctx)
    ctx.close()


def _runner(operation: Any, mode: Any, counts: dict[str, int], failures: list[str]) -> Any:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None
    )
    def run(case: Any) -> None:
        counts["requests"] += 1
        try:
            case.call_and_validate(headers={"Authorization": f"Bearer {TOKEN}"}, checks=CHECKS)
        except Exception as err:  # collect them all, then fail once with the list
            text = str(err)
            counts["server_errors" if "Server error" in text else "failures"] += 1
            failures.append(f"{operation.label} ({mode.value}): {text[:600]}")
            raise

    return run


def test_openapi_conformance(app: Any) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    counts = {"operations": 0, "requests": 0, "server_errors": 0, "failures": 0}
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        counts["operations"] += 1

        for mode in schemathesis.GenerationMode:  # valid requests, then invalid ones
            run = _runner(operation, mode, counts, failures)
            try:
                run()
            except Unsatisfiable:  # nothing invalid to send (an operation without parameters)
                continue
            except Exception as err:  # recorded in failures; hypothesis re-raises the shrunk one
                if not failures:
                    raise AssertionError(f"{operation.label}: {err}") from err
    print(f"\nschemathesis: {counts}")
    assert counts["operations"] >= 10 and counts["requests"] >= 10 * EXAMPLES, counts
    assert not failures, "\n\n".join(failures[:10])
