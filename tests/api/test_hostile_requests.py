"""Hostile and careless requests against a real uvicorn server (issue 12, one test per numbered item):

1. hostile uploads are parsed in the isolated parse workers while another client searches, and searches answer;
2. DOCX bombs are refused by their real inflated size;
3. bodies are capped before they are read, auth comes before the body, slow bodies time out;
4. Host and Origin are checked on every route on loopback (extendable by KAYNAK_ALLOWED_HOSTS);
5. a database outage is a fast 503 with Retry-After, health says so within a second, and the server recovers;
6. bad input never yields a 5xx (NaN filters, long names, a name that is a folder of another);
7. collection names that cannot be managed or that attack a terminal are refused;
8. truthful status codes, no server paths in messages, Allow on 405, the same query cap on every face.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kaynak.config import load_settings
from kaynak.context import Context
from kaynak.server import create_app
from kaynak.vocabulary import MAX_QUERY_CHARS
from testkit.hostile.make_corpus import EN, TR, billion_laughs_docx, make_pdf, zip_bomb_docx
from testkit.hostile.uploads import fifty_parts_docx, long_run_pdf, lying_docx
from testkit.servers import running

TOKEN = "hostile-token"
WRITE = {"Authorization": f"Bearer {TOKEN}"}


def make_context(data_dir: Path, database_url: str, **overrides: Any) -> Context:
    settings = dict(
        embedder="hash",
        api_token=TOKEN,
        max_upload_mb=4,
        max_body_kb=64,
        read_timeout_s=1.0,
        parse_workers=1,
        parse_timeout_s=60,
    )
    settings.update(overrides)
    return Context(load_settings(data_dir=data_dir, database_url=database_url, **settings))


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory, database_url: str) -> Iterator[Context]:
    c = make_context(tmp_path_factory.mktemp("hostile-data"), database_url)
    yield c
    c.close()


@pytest.fixture(scope="module")
def docs(http: httpx.Client) -> str:
    """A small collection to search while the hostile files go in."""
    name = "hostile_" + os.urandom(3).hex()
    r = upload(
        http,
        name,
        [("aidat.md", f"# Aidat\n\n{TR}\n".encode(), "text/markdown"), ("river.txt", EN.encode(), "text/plain")],
        language="turkish",
    )
    assert r.status_code == 200, r.text
    return name


def upload(http: httpx.Client, collection: str, files: list[tuple[str, bytes, str]], **data: str) -> httpx.Response:
    return http.post(
        f"/v1/collections/{collection}/documents", headers=WRITE, data=data, files=[("files", f) for f in files]
    )


def problem(r: httpx.Response, status: int, *words: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers
    body = r.json()
    assert body["status"] == status and body["detail"], body
    for w in words:
        assert w in body["detail"], body
    return body


def test_1_hostile_uploads_never_stall_searches(
    http: httpx.Client, docs: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kaynak.loaders import pdf

    def parsed_here(*_: Any, **__: Any) -> Any:  # the server process must never parse an upload
        raise AssertionError("an upload was parsed in the server process")

    monkeypatch.setattr(pdf.DocumentWords, "from_lines", classmethod(parsed_here))
    hostile = [
        ("long-run.pdf", long_run_pdf(), "application/pdf"),
        ("zip-bomb.docx", zip_bomb_docx(), "application/octet-stream"),
        ("fifty-parts.docx", fifty_parts_docx(), "application/octet-stream"),
        ("lying-sizes.docx", lying_docx(), "application/octet-stream"),
        ("billion-laughs.docx", billion_laughs_docx(), "application/octet-stream"),
    ]
    latencies: list[float] = []
    statuses: list[int] = []
    stop = threading.Event()

    def searcher() -> None:
        with httpx.Client(base_url=str(http.base_url), timeout=60) as client:
            while not stop.is_set():
                t0 = time.perf_counter()
                r = client.get("/v1/search", params={"q": "kalabalık şehir", "collections": docs, "k": 3})
                latencies.append(time.perf_counter() - t0)
                statuses.append(r.status_code)
                time.sleep(0.05)

    thread = threading.Thread(target=searcher, daemon=True)
    thread.start()
    try:
        reports = {name: upload(http, unique_name, [(name, data, ctype)]) for name, data, ctype in hostile}
    finally:
        stop.set()
        thread.join(30)
    ok = reports["long-run.pdf"]
    assert ok.status_code == 200, ok.text  # parsed, in a worker, in linear time
    for name in ("zip-bomb.docx", "fifty-parts.docx", "lying-sizes.docx", "billion-laughs.docx"):
        body = problem(reports[name], 422, "no file could be stored")
        assert [f["source"] for f in body["report"]["failed"]] == [name]
    for name in ("zip-bomb.docx", "fifty-parts.docx"):
        assert "zip bomb" in reports[name].json()["report"]["failed"][0]["error"]
    assert statuses and set(statuses) == {200}, statuses
    print(
        f"\nsearches during hostile uploads: {len(latencies)}, median {statistics.median(latencies) * 1000:.0f} ms, "
        f"max {max(latencies) * 1000:.0f} ms"
    )
    assert max(latencies) < 5.0, f"a search took {max(latencies):.1f} s while hostile files were parsed"


# ---------------------------------------------------------------------------------------------- bodies
def test_3_bodies_capped_before_read_and_auth_first(http: httpx.Client, docs: str) -> None:
    big = b"x" * (200 * 1024)  # over max_body_kb = 64
    problem(
        http.post("/v1/search", content=b'{"q": "' + big + b'"}', headers={"content-type": "application/json"}),
        413,
        "KAYNAK_MAX_BODY_KB",
    )

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted while streaming
        yield b'{"q": "'
        for _ in range(100):
            yield b"y" * 4096
        yield b'"}'

    problem(http.post("/v1/search", content=chunked(), headers={"content-type": "application/json"}), 413)
    # unauthenticated garbage gets 401, whatever its size or shape
    problem(http.post("/v1/collections", content=big, headers={"content-type": "application/json"}), 401, "Bearer")
    problem(http.post("/v1/collections", content=b"{not json", headers={"content-type": "application/json"}), 401)
    problem(
        http.post(
            f"/v1/collections/{docs}/documents",
            content=b"--x\r\n",
            headers={"content-type": "multipart/form-data; boundary=x"},
        ),
        401,
    )
    problem(
        http.post(
            f"/v1/collections/{docs}/documents",
            content=b"x" * (5 << 20),
            headers={**WRITE, "content-type": "multipart/form-data; boundary=x"},
        ),
        413,
        "KAYNAK_MAX_UPLOAD_MB",
    )
    # a body of the right size is read and answered
    assert http.post("/v1/search", json={"q": "şehir", "collections": docs}).status_code == 200


def test_3_slow_bodies_time_out(base: str) -> None:
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"q": '
        )
        t0 = time.monotonic()
        reply = sock.recv(65536)
        waited = time.monotonic() - t0
    assert b" 408 " in reply.split(b"\r\n", 1)[0], reply[:200]
    assert waited < 5, waited  # read_timeout_s = 1


def test_3_slow_headers_are_cut_off(ctx: Context) -> None:
    """``kaynak serve`` runs uvicorn with a header deadline (read_timeout_s): a trickled request is dropped."""
    import uvicorn

    from kaynak.api.limits import header_deadline_protocol
    from testkit.servers import free_port

    port = free_port()
    config = uvicorn.Config(
        create_app(ctx),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        http=header_deadline_protocol(ctx.settings.read_timeout_s),
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.02)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127")
            t0 = time.monotonic()
            closed = sock.recv(1024)  # b"" when the server closes the connection
            waited = time.monotonic() - t0
        assert closed == b"" and waited < 5, (closed, waited)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:  # a prompt request is served
            sock.sendall(b"GET /v1/collections HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert sock.recv(64).startswith(b"HTTP/1.1 200")
    finally:
        server.should_exit = True
        thread.join(10)


def test_3_read_token_checked_before_the_body(data_dir: Path, database_url: str) -> None:
    """With a read token, a read that posts a body (search, the web page's highlights) is 401 before it is read."""
    ro = make_context(data_dir, database_url, read_token="reader")
    with running(create_app(ro)) as url, httpx.Client(base_url=url, timeout=30) as client:
        for path in ("/v1/search", "/v1/highlights"):
            problem(client.post(path, content=b"{garbage", headers={"content-type": "application/json"}), 401)
            problem(client.post(path, content=b"x" * (200 * 1024), headers={"content-type": "application/json"}), 401)
        ok = client.post("/v1/search", json={"q": "x", "collections": "*"}, headers={"Authorization": "Bearer reader"})
        assert ok.status_code in (200, 404), ok.text
    ro.close()


# ---------------------------------------------------------------------------------------------- hosts
def test_4_host_and_origin_checked_on_every_route(
    http: httpx.Client, docs: str, data_dir: Path, database_url: str
) -> None:
    evil = {"Host": "evil.example"}
    for path in ("/v1/search?q=şehir", "/v1/collections", "/v1/health", "/openapi.json", "/docs"):
        problem(http.get(path, headers=evil), 421, "KAYNAK_ALLOWED_HOSTS")
    problem(http.post("/v1/search", json={"q": "x"}, headers=evil), 421)
    r = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers=evil)
    assert r.status_code == 421
    problem(http.get("/v1/search", params={"q": "şehir"}, headers={"Origin": "http://evil.example"}), 403)
    for host in ("127.0.0.1", "localhost:8765", "[::1]:1"):
        assert http.get("/v1/collections", headers={"Host": host}).status_code == 200, host
    assert http.get("/v1/collections", headers={"Origin": "http://localhost:8765"}).status_code == 200
    # a reverse proxy's public name, allowed by setting
    proxied = make_context(data_dir, database_url, allowed_hosts="docs.example.org")
    with running(create_app(proxied)) as url, httpx.Client(base_url=url, timeout=30) as client:
        ok = client.get(
            "/v1/search",
            params={"q": "şehir", "collections": docs},
            headers={"Host": "docs.example.org", "Origin": "https://docs.example.org"},
        )
        assert ok.status_code == 200, ok.text
        assert client.get("/v1/collections", headers={"Host": "evil.example"}).status_code == 421
    proxied.close()
    # bound to another address (a proxy in front, tokens set), no Host check
    open_ctx = make_context(data_dir, database_url, host="0.0.0.0", read_token="r")
    with running(create_app(open_ctx)) as url:
        r = httpx.get(f"{url}/v1/collections", headers={"Host": "docs.example.org", "Authorization": "Bearer r"})
        assert r.status_code == 200, r.text
    open_ctx.close()


# ---------------------------------------------------------------------------------------------- bad input
def test_6_bad_input_is_never_a_5xx(http: httpx.Client, docs: str, unique_name: str, ctx: Context) -> None:
    for bad in ("NaN", "Infinity", "-Infinity"):
        body = '{"q": "şehir", "filters": {"metadata": {"n": ' + bad + "}}}"
        r = http.post("/v1/search", content=body, headers={"content-type": "application/json"})
        assert r.status_code in (400, 422), r.text
        assert "finite" in r.text or "invalid" in r.text.lower(), r.text
    long_ascii = "x" * 300 + ".md"
    long_turkish = "ş" * 200 + ".txt"
    r = upload(
        http,
        unique_name,
        [
            (long_ascii, b"# Long\n\nA very long name.", "text/markdown"),
            (long_turkish, "Uzun adlı dosya.".encode(), "text/plain"),
            ("a.md", b"# A\n\nThe file.", "text/markdown"),
            ("a.md/b.md", b"# B\n\nInside a folder named like the file.", "text/markdown"),
        ],
    )
    assert r.status_code == 200, r.text
    added = r.json()["added"]
    assert len(added) == 4 and all(len(Path(a).name.encode()) <= 120 for a in added), added
    assert sum(a.endswith(".md") for a in added) == 3 and sum(a.endswith(".txt") for a in added) == 1, added
    assert "a.md/b.md" in added and "a-2.md" in added, added
    # the uploaded copies live under <data_dir>/uploads/<collection>/ and go with their document
    root = ctx.settings.data_dir / "uploads" / unique_name
    assert (root / "a.md" / "b.md").is_file() and (root / "a-2.md").is_file()
    doc = http.get(f"/v1/collections/{unique_name}/documents/a-2.md").json()
    assert doc.get("origin") in (None, str(root / "a-2.md"))
    assert http.delete(f"/v1/collections/{unique_name}/documents/a-2.md", headers=WRITE).status_code == 200
    assert not (root / "a-2.md").exists() and (root / "a.md" / "b.md").is_file()
    # a later upload whose folder is an earlier upload's file: 409, not a 500
    later = upload(http, unique_name, [("a.md/b.md/c.md", b"# C", "text/markdown")])
    problem(later, 409, "clashes")
    assert http.delete(f"/v1/collections/{unique_name}", headers=WRITE).status_code == 200
    assert not root.exists()


def test_7_collection_names(http: httpx.Client) -> None:
    for bad in ("a/b", "evil\x1b[31mred", "tab\tname", "..", "with space", "x" * 101):
        r = http.post("/v1/collections", json={"name": bad}, headers=WRITE)
        problem(r, 400)
        assert "\x1b" not in r.text
    ok = "Şehir_notları-2.0"
    r = http.post("/v1/collections", json={"name": ok}, headers=WRITE)
    assert r.status_code == 201, r.text
    assert http.get(f"/v1/collections/{ok}").status_code == 200
    assert http.delete(f"/v1/collections/{ok}", headers=WRITE).status_code == 200
    problem(upload(http, "a%1Bb", [("x.md", b"# x", "text/markdown")]), 400, "collection name")


# ---------------------------------------------------------------------------------------------- status codes
def test_8_truthful_status_codes(http: httpx.Client, unique_name: str, ctx: Context) -> None:
    one_bad = upload(http, unique_name, [("broken.pdf", b"%PDF-1.4 not really", "application/pdf")])
    body = problem(one_bad, 422, "broken.pdf")
    assert body["report"]["failed"][0]["source"] == "broken.pdf"
    text = one_bad.text
    for secret in (str(ctx.settings.data_dir), "/tmp/", "kaynak-upload"):
        assert secret not in text, text
    partial = upload(
        http,
        unique_name,
        [
            ("good.md", b"# Good\n\nFine text.", "text/markdown"),
            ("bad.docx", b"PK\x03\x04 broken", "application/octet-stream"),
        ],
    )
    assert partial.status_code == 207, partial.text
    assert partial.json()["added"] == ["good.md"] and partial.json()["failed"][0]["source"] == "bad.docx"
    assert str(ctx.settings.data_dir) not in partial.text
    # a failed re-upload keeps the earlier copy (the stored document's origin) and leaves no temporary files
    first = make_pdf([["First version of the report."]])
    assert upload(http, unique_name, [("report.pdf", first, "application/pdf")]).status_code == 200
    problem(upload(http, unique_name, [("report.pdf", b"%PDF-1.4 broken", "application/pdf")]), 422)
    root = ctx.settings.data_dir / "uploads" / unique_name
    assert (root / "report.pdf").read_bytes() == first
    assert sorted(p.name for p in root.iterdir()) == ["good.md", "report.pdf"]
    r = http.put("/v1/search")
    problem(r, 405)
    assert set(r.headers["allow"].split(", ")) >= {"GET", "POST"}, r.headers
    r = http.patch(f"/v1/collections/{unique_name}")
    assert r.status_code == 405 and "DELETE" in r.headers["allow"]
    problem(http.get("/v1/search", params={"q": "x" * (MAX_QUERY_CHARS + 1)}), 422)
    problem(http.post("/v1/search", json={"q": "x" * (MAX_QUERY_CHARS + 1)}), 422)
    with pytest.raises(Exception, match="at most"):
        ctx.search.search("x" * (MAX_QUERY_CHARS + 1), collections=unique_name)
    http.delete(f"/v1/collections/{unique_name}", headers=WRITE)


def test_8_openapi_describes_problem_answers(http: httpx.Client) -> None:
    schema = http.get("/openapi.json").json()
    assert "Problem" in schema["components"]["schemas"]
    post = schema["paths"]["/v1/collections/{name}/documents"]["post"]["responses"]
    for status in ("207", "401", "403", "409", "413", "422", "503"):
        assert status in post, status
    search = schema["paths"]["/v1/search"]["get"]["responses"]
    assert {"401", "413", "422", "503"} <= set(search)
    assert "application/problem+json" in search["422"]["content"]


# ---------------------------------------------------------------------------------------------- outage
@pytest.mark.slow
def test_5_database_outage_is_a_fast_503_then_recovers() -> None:
    from kaynak.store.server import stop_embedded

    data = Path(tempfile.mkdtemp(prefix="kaynak-api-outage-"))  # its own embedded server: this test kills it
    c = Context(load_settings(data_dir=data, database_url=None, embedder="hash", api_token=TOKEN, pool_size=4))
    try:
        with running(create_app(c)) as url, httpx.Client(base_url=url, timeout=60) as client:
            assert upload(client, "kesinti", [("a.md", f"# A\n\n{TR}".encode(), "text/markdown")]).status_code == 200
            timings = measure_outage(client, data / "postgres", "kesinti")
        print("\noutage: " + json.dumps(timings))
        assert timings["first_503_s"] < 2.0, timings
        assert timings["worst_request_during_outage_s"] < 1.5, timings
        assert timings["health_during_outage_s"] < 1.5, timings
        assert timings["recovered_s"] < 40, timings
        assert timings["errors_after_recovery"] == 0, timings
        assert timings["other_statuses"] == [], timings
    finally:
        c.close()
        stop_embedded(data)
        shutil.rmtree(data, ignore_errors=True)


def measure_outage(client: httpx.Client, pgdata: Path, collection: str) -> dict[str, Any]:
    """Kill the embedded postmaster while 4 clients search; time to the first 503 and to the first 200 after."""
    pid = int((pgdata / "postmaster.pid").read_text().split()[0])
    results: list[tuple[float, int, float, str | None]] = []  # (sent at, status, took, Retry-After)
    stop = threading.Event()
    lock = threading.Lock()

    def load() -> None:
        with httpx.Client(base_url=str(client.base_url), timeout=60) as c:
            while not stop.is_set():
                t0 = time.monotonic()
                r = c.get("/v1/search", params={"q": "şehir", "collections": collection, "mode": "keyword"})
                with lock:
                    results.append((t0, r.status_code, time.monotonic() - t0, r.headers.get("retry-after")))
                time.sleep(0.02)

    threads = [threading.Thread(target=load, daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.3)
    t0 = time.monotonic()
    health = client.get("/v1/health")
    health_s = time.monotonic() - t0
    health_body = health.json()
    deadline = killed + 60
    recovered = None
    while time.monotonic() < deadline:
        with lock:
            after = [r for r in results if r[0] > killed]
        if any(s == 503 for _, s, _, _ in after):
            ok = [t for t, s, _, _ in after if s == 200 and t > min(t for t, s, _, _ in after if s == 503)]
            if ok:
                recovered = min(ok)
                break
        time.sleep(0.1)
    time.sleep(1.0)
    stop.set()
    for t in threads:
        t.join(30)
    after = [r for r in results if r[0] > killed]
    failures = [r for r in after if r[1] == 503]
    assert failures, "no request saw the outage"
    first_503 = min(r[0] + r[2] for r in failures) - killed
    during = [r for r in after if recovered is None or r[0] < recovered]
    settling = [r for r in after if recovered is not None and recovered <= r[0] < recovered + 1.0]
    later = [r for r in after if recovered is not None and r[0] >= recovered + 1.0]
    assert all(r[3] for r in failures), "a 503 without Retry-After"
    assert health.status_code == 503 and health_body["database"]["ok"] is False, health_body
    assert str(pgdata.parent) not in health.text and health.headers.get("retry-after"), health.text
    return {
        "requests": len(results),
        "first_503_s": round(first_503, 3),
        "worst_request_during_outage_s": round(max(r[2] for r in during), 3),
        "health_during_outage_s": round(health_s, 3),
        "health_error": health_body["database"].get("error"),
        "recovered_s": round((recovered or deadline) - killed, 2),
        "errors_in_first_second_after_recovery": sum(1 for r in settling if r[1] != 200),
        "errors_after_recovery": sum(1 for r in later if r[1] != 200),  # from 1 s after the first success on
        "other_statuses": sorted({r[1] for r in after} - {200, 503}),
    }


# ---------------------------------------------------------------------------------------------- the rules
def test_rules_in_one_place() -> None:
    from kaynak.errors import InvalidQuery, UsageError
    from kaynak.rules import (
        check_collection_name,
        check_filter_value,
        parse_collections,
        safe_relpath,
        upload_paths,
    )

    for ok in ("hukuk", "Şehir_notları-2.0", "İĞÜŞÖÇ", "a.b", "x" * 100):
        assert check_collection_name(ok) == ok
    for bad in ("", "a/b", "a b", "a\x1b[31m", "..", ".", "x" * 101, "a\\b", "a\u0301"):
        with pytest.raises(UsageError):
            check_collection_name(bad)
    assert parse_collections("a, b,,a") == ["a", "b"] and parse_collections(["*"]) == "*"
    assert parse_collections(" , ") is None and parse_collections(None) is None
    for bad_value in (float("nan"), float("inf"), {"x": [1, float("-inf")]}):
        with pytest.raises(InvalidQuery):
            check_filter_value({"n": bad_value})
    assert check_filter_value({"n": 1.5, "s": "x", "l": [1, True, None]})
    long = safe_relpath("d/" + "ğ" * 300 + ".docx")
    assert long.endswith(".docx") and len(long.split("/")[-1].encode()) <= 120
    assert safe_relpath("*?.md") == "upload.md" and safe_relpath("a/<b>|c.pdf") == "a/bc.pdf"
    assert upload_paths(["x.md", "x.md/y.md", "X?.md", "x.md/z.md"]) == ["x-2.md", "x.md/y.md", "X.md", "x.md/z.md"]
    with pytest.raises(UsageError, match="both named"):
        upload_paths(["same.md", "same.md"])


# ---------------------------------------------------------------------------------------------- /docs (issue 53)
def test_docs_come_from_this_machine_under_the_pages_csp(http: httpx.Client) -> None:
    """/docs loaded Swagger UI from a CDN (floating version, no integrity) into the origin that holds the page's
    token, with no CSP or frame options. Now every file is served here, under the web page's policy."""
    import re

    from kaynak.web.routes import PAGE_CSP

    r = http.get("/docs")
    assert r.status_code == 200 and r.headers["content-security-policy"] == PAGE_CSP
    assert r.headers["x-frame-options"] == "DENY" and r.headers["x-content-type-options"] == "nosniff"
    refs = re.findall(r'(?:src|href)="([^"]+)"', r.text)
    assert len(refs) == 3 and all(ref.startswith("/docs/") for ref in refs), refs
    assert "<script>" not in r.text  # no inline script: the CSP allows none
    for ref in refs:
        asset = http.get(ref)
        assert asset.status_code == 200 and len(asset.content) > 100, ref
        assert asset.headers["x-content-type-options"] == "nosniff"
    assert "SwaggerUIBundle" in http.get("/docs/swagger-ui-bundle.js").text
    assert http.get("/redoc").status_code == 404  # ReDoc, a CDN page too, is off
    assert http.get("/openapi.json").status_code == 200
