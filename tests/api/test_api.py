"""The REST API: httpx against a uvicorn server on a loopback port — search, browse, auth, uploads, problem+json
errors, ingest off the event loop, and a hypothesis sweep over the endpoints' parameters asserting no 5xx."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kaynak.api import safe_relpath
from kaynak.context import Context
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.errors import UsageError
from kaynak.server import create_app
from kaynak.store import Store
from kaynak.types import Chunk, Collection, Page
from testkit.webapp import hash_context

TOKEN = "s3cret-token"
READ_TOKEN = "read-only-token"
WRITE = {"Authorization": f"Bearer {TOKEN}"}
LIMIT_MB = 0.05  # 52 KB per upload request in these tests

TURKISH = (
    "# Aidat\n\nKat malikleri kurulu her yıl ocak ayında toplanır ve aidat miktarını belirler.\n\n"
    "## Gecikme\n\nAidatını geciktiren kat maliki aylık yüzde beş gecikme tazminatı öder.\n"
)
ENGLISH = "The boiler is serviced every autumn by a licensed technician.\n\nResidents report leaks to the manager.\n"


@pytest.fixture(scope="module")
def ctx(data_dir: Path, database_url: str) -> Iterator[Context]:
    c = hash_context(data_dir, database_url, api_token=TOKEN, max_upload_mb=LIMIT_MB)
    yield c
    c.close()


@pytest.fixture(scope="module")
def seeded(store: Store) -> Iterator[str]:
    """A collection written straight through the store with the hash embedder (independent of loaders)."""
    name = "api_" + os.urandom(4).hex()
    col = store.create_collection(name, "turkish", "hash", 64)
    emb = HashEmbedder()
    docs = {
        "hukuk/aidat.md": ["Kat malikleri kurulu her yıl ocak ayında toplanır.", "Aidat her ay ödenir."],
        "notes/boiler.txt": ["The boiler is serviced every autumn by a licensed technician."],
    }
    for source, texts in docs.items():
        pages = [Page(i + 1, t) for i, t in enumerate(texts)]
        chunks = [Chunk(i, p.number, None, 0, len(p.text), p.text) for i, p in enumerate(pages)]
        store.replace_document(
            col,
            source,
            hashlib.sha256(source.encode()).hexdigest(),
            source,
            {"kind": "test"},
            pages,
            chunks,
            emb.embed_passages([c.text for c in chunks]),
        )
    yield name
    store.delete_collection(name)


def assert_problem(r: httpx.Response, status: int, *words: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json"), r.headers["content-type"]
    body = r.json()
    assert body["status"] == status and body["title"] and body["detail"]
    for w in words:
        assert w in body["detail"], body
    return body


# ---------------------------------------------------------------------------------------------- reads
def test_openapi_docs_and_health(http: httpx.Client) -> None:
    schema = http.get("/openapi.json").json()
    for path in (
        "/v1/search",
        "/v1/collections",
        "/v1/collections/{name}/documents",
        "/v1/chunks/{chunk_id}",
        "/v1/health",
        "/v1/collections/{name}/documents/{source}",
    ):
        assert path in schema["paths"], path
    assert http.get("/docs").status_code == 200
    health = http.get("/v1/health")
    assert health.status_code == 200, health.text
    body = health.json()
    assert body["status"] == "ok" and body["database"]["ok"] and body["database"]["pgvector"]
    assert body["model"] == {"name": "hash", "ok": True, "dim": 64, "reranker": None}


def test_openapi_describes_each_answer_with_a_typed_model(http: httpx.Client) -> None:
    """Clients generated from the OpenAPI document get types: a hit, a collection, a document, an ingest report."""
    schema = http.get("/openapi.json").json()
    schemas = schema["components"]["schemas"]
    for name in ("Hit", "Quote", "Match", "Collection", "Document", "Chunk", "IngestReport", "Access", "PageImage"):
        assert name in schemas, name
    assert {"chunk_id", "quote", "score", "match", "document_id", "stale"} <= set(schemas["Hit"]["properties"])

    def answer(path: str, method: str) -> str:
        responses = schema["paths"][path][method]["responses"]
        ok = responses.get("200") or responses["201"]
        return str(ok["content"]["application/json"]["schema"]["$ref"]).rsplit("/", 1)[-1]

    assert answer("/v1/search", "get") == "SearchResponse"
    assert answer("/v1/collections", "get") == "CollectionList"
    assert answer("/v1/collections", "post") == "Collection"
    assert answer("/v1/collections/{name}/documents", "post") == "IngestReport"
    assert answer("/v1/collections/{name}/documents/{source}", "get") == "Document"
    assert answer("/v1/chunks/{chunk_id}", "get") == "ChunkContext"
    assert answer("/v1/access", "get") == "Access"
    assert answer("/v1/health", "get") == "Health"
    assert schema["paths"]["/v1/health"]["get"]["responses"]["503"]["content"]["application/json"]["schema"][
        "$ref"
    ].endswith("/Health")
    assert answer("/v1/documents/{document_id}/pages/{number}/image", "get") == "PageImage"


def test_typed_answers_are_the_services_dicts_byte_for_byte(http: httpx.Client, ctx: Context, seeded: str) -> None:
    """The response models only describe: each body is the JSON of what the service returns, same keys, same order,
    same numbers (no int turned float, no field added as null)."""

    def same(path: str, expected: Any, **params: Any) -> None:
        r = http.get(path, params=params)
        assert r.status_code == 200, r.text
        assert r.content == json.dumps(expected, ensure_ascii=False, separators=(",", ":")).encode(), path

    search = ctx.search
    langs = search.document_languages([seeded]).get(seeded, [])
    same(f"/v1/collections/{seeded}", {**search.get_collection(seeded).to_dict(), "document_languages": langs})
    docs = [d.to_dict() for d in search.list_documents(seeded)]
    same(f"/v1/collections/{seeded}/documents", {"documents": docs, "total": len(docs), "next_offset": None})
    same(f"/v1/collections/{seeded}/documents/hukuk/aidat.md", search.get_document(seeded, "hukuk/aidat.md").to_dict())
    text = search.page_text(seeded, "hukuk/aidat.md", 2)
    same(
        f"/v1/collections/{seeded}/page",
        {"collection": seeded, "source": "hukuk/aidat.md", "page": 2, "text": text, "offset": 0}
        | {"total_chars": len(text), "next_offset": None},
        source="hukuk/aidat.md",
        number=2,
    )
    chunk_id = http.get("/v1/search", params={"q": "aidat", "collections": seeded}).json()["hits"][0]["chunk_id"]
    chunks = search.chunk_context(chunk_id, 1, 1)
    hit = next(c for c in chunks if c.id == chunk_id)
    same(f"/v1/chunks/{chunk_id}", {"chunk": hit.to_dict(), "context": [c.to_dict() for c in chunks]})


def test_search_get_and_post(http: httpx.Client, seeded: str) -> None:
    r = http.get("/v1/search", params={"q": "kat malikleri ne zaman toplanır", "collections": seeded, "k": 3})
    assert r.status_code == 200, r.text
    hits = r.json()["hits"]
    assert hits and hits[0]["source"] == "hukuk/aidat.md" and hits[0]["page"] == 1
    assert hits[0]["quote"]["text"] in "Kat malikleri kurulu her yıl ocak ayında toplanır."
    for key in ("chunk_id", "collection", "title", "section", "score", "scores", "char_start", "char_end", "text"):
        assert key in hits[0]
    assert r.json()["no_good_match"] is False and hits[0]["match"]["label"] in ("strong", "partial")
    assert 0 <= hits[0]["match"]["probability"] <= 1
    grouped = http.get("/v1/search", params={"q": "kat malikleri", "collections": seeded, "group_by": "document"})
    assert grouped.status_code == 200, grouped.text
    sources = [h["source"] for h in grouped.json()["hits"]]
    assert len(sources) == len(set(sources))
    assert_problem(http.get("/v1/search", params={"q": "kat", "group_by": "page"}), 422, "group_by")
    p = http.post("/v1/search", json={"q": "kat malikleri ne zaman toplanır", "collections": [seeded], "k": 3})
    assert p.status_code == 200, p.text
    assert [h["chunk_id"] for h in p.json()["hits"]] == [h["chunk_id"] for h in hits]
    q = http.post(
        "/v1/search",
        json={"query": "boiler autumn", "collections": "*", "mode": "keyword", "filters": {"source_prefix": "notes/"}},
    )
    assert q.status_code == 200, q.text
    assert q.json()["hits"] and {h["source"] for h in q.json()["hits"]} == {"notes/boiler.txt"}
    for ranking in ("bm25", "ts_rank_cd"):
        g = http.get(
            "/v1/search",
            params={"q": "boiler", "collections": seeded, "mode": "keyword", "ranking": ranking, "meta": "kind=test"},
        )
        assert g.status_code == 200 and g.json()["hits"][0]["source"] == "notes/boiler.txt", g.text
    none = http.get("/v1/search", params={"q": "boiler", "collections": seeded, "meta": "kind=other"})
    assert none.status_code == 200 and none.json()["hits"] == [] and none.json()["no_good_match"] is True
    assert_problem(http.get("/v1/search", params={"q": "boiler", "meta": "novalue"}), 400, "KEY=VALUE")


def test_browse(http: httpx.Client, seeded: str) -> None:
    cols = http.get("/v1/collections").json()["collections"]
    mine = next(c for c in cols if c["name"] == seeded)
    assert (mine["document_count"], mine["chunk_count"], mine["language"]) == (2, 3, "turkish")
    assert http.get(f"/v1/collections/{seeded}").json()["name"] == seeded
    # the languages its documents are written in, whatever its search configuration (issue 27)
    assert isinstance(mine["document_languages"], list), mine  # these documents are too short to tell
    assert http.get(f"/v1/collections/{seeded}").json()["document_languages"] == mine["document_languages"]
    docs = http.get(f"/v1/collections/{seeded}/documents", params={"prefix": "hukuk/"}).json()["documents"]
    assert [d["source"] for d in docs] == ["hukuk/aidat.md"]
    doc = http.get(f"/v1/collections/{seeded}/documents/hukuk/aidat.md").json()
    assert doc["page_count"] == 2 and doc["metadata"] == {"kind": "test"}
    page = http.get(f"/v1/collections/{seeded}/page", params={"source": "hukuk/aidat.md", "number": 2}).json()
    assert page["text"] == "Aidat her ay ödenir."
    hit = http.get("/v1/search", params={"q": "aidat her ay", "collections": seeded}).json()["hits"][0]
    ctx = http.get(f"/v1/chunks/{hit['chunk_id']}", params={"before": 1, "after": 1}).json()
    assert ctx["chunk"]["id"] == hit["chunk_id"] and len(ctx["context"]) == 2


def test_errors_are_problem_json(http: httpx.Client, seeded: str) -> None:
    assert_problem(http.get("/v1/search", params={"q": "x", "collections": "nope_nope"}), 404, "nope_nope")
    assert_problem(http.get("/v1/search", params={"q": "x", "k": 0}), 422, "k")
    assert_problem(http.get("/v1/search", params={"q": "x", "mode": "psychic"}), 422, "mode")
    assert_problem(http.get("/v1/search"), 422, "q")
    assert_problem(http.get("/v1/search", params={"q": ""}), 422)
    assert_problem(http.post("/v1/search", content=b"{not json", headers={"content-type": "application/json"}), 422)
    assert_problem(http.post("/v1/search", json={"q": "x", "surprise": 1}), 422, "surprise")
    assert_problem(http.get("/v1/chunks/" + "0" * 20), 404, "0" * 20)
    assert_problem(http.get(f"/v1/collections/{seeded}/documents/missing.pdf"), 404, "missing.pdf")
    assert_problem(http.get(f"/v1/collections/{seeded}/page", params={"source": "hukuk/aidat.md", "number": 9}), 404)
    assert_problem(http.get("/v2/whatever"), 404, "/docs")
    assert_problem(http.put("/v1/search"), 405)
    # NUL characters cannot reach PostgreSQL: 400/422, never 500
    for params in ({"q": "a\x00b"}, {"q": "x", "collections": "\x00"}, {"q": "x", "source_glob": "\x00"}):
        assert http.get("/v1/search", params=params).status_code == 400
    assert_problem(http.get("/v1/chunks/%00"), 400, "NUL")
    assert_problem(http.get(f"/v1/collections/{seeded}/documents/a%00b"), 400, "source")
    assert_problem(http.post("/v1/search", json={"q": "x", "filters": {"metadata": {"k": "\x00"}}}), 422, "NUL")


# ---------------------------------------------------------------------------------------------- auth
def test_writes_need_the_token(http: httpx.Client, unique_name: str) -> None:
    body = {"name": unique_name, "language": "english"}
    r = assert_problem(http.post("/v1/collections", json=body), 401, "Bearer")
    assert r["title"] == "not authorised"
    assert http.post("/v1/collections", json=body).headers["www-authenticate"].startswith("Bearer")
    assert_problem(http.post("/v1/collections", json=body, headers={"Authorization": "Bearer wrong"}), 403, "wrong")
    assert_problem(http.post("/v1/collections", json=body, headers={"Authorization": f"Basic {TOKEN}"}), 401)
    created = http.post("/v1/collections", json=body, headers=WRITE)
    assert created.status_code == 201, created.text
    assert created.json()["embedder"] == "hash" and created.json()["language"] == "english"
    # the Collection model only describes the service's to_dict: same keys in the same order, none added
    assert list(created.json()) == [f.name for f in dataclasses.fields(Collection)], created.text
    assert_problem(http.post("/v1/collections", json=body, headers=WRITE), 409, unique_name)
    assert_problem(http.delete(f"/v1/collections/{unique_name}"), 401)
    assert http.delete(f"/v1/collections/{unique_name}", headers=WRITE).json() == {"deleted": unique_name}
    assert_problem(http.get(f"/v1/collections/{unique_name}"), 404)


def test_without_api_token_writes_are_off(data_dir: Path, database_url: str, seeded: str) -> None:
    ctx = hash_context(data_dir, database_url, api_token=None)
    with TestClient(create_app(ctx)) as client:
        r = client.post("/v1/collections", json={"name": "x"}, headers=WRITE)
        assert r.status_code == 403 and "KAYNAK_API_TOKEN" in r.json()["detail"]
        files = {"files": ("a.md", b"# A\n\nText.", "text/markdown")}
        assert client.post(f"/v1/collections/{seeded}/documents", files=files).status_code == 403
        assert client.delete(f"/v1/collections/{seeded}/documents/hukuk/aidat.md").status_code == 403
        assert client.get("/v1/collections").status_code == 200  # reads stay open
    ctx.close()


def test_read_token(data_dir: Path, database_url: str, seeded: str) -> None:
    ctx = hash_context(data_dir, database_url, api_token=TOKEN, read_token=READ_TOKEN)
    with TestClient(create_app(ctx)) as client:
        assert client.get("/v1/collections").status_code == 401
        assert client.get("/v1/search", params={"q": "aidat"}).status_code == 401
        assert client.get("/v1/collections", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert client.get("/v1/collections", headers={"Authorization": f"Bearer {READ_TOKEN}"}).status_code == 200
        assert client.get("/v1/collections", headers=WRITE).status_code == 200
        assert client.get("/v1/health").status_code == 200
        assert client.get("/openapi.json").status_code == 200
        mcp = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert mcp.status_code == 401
        # the read token does not grant writes
        r = client.post("/v1/collections", json={"name": "x"}, headers={"Authorization": f"Bearer {READ_TOKEN}"})
        assert r.status_code == 403
    ctx.close()


# ---------------------------------------------------------------------------------------------- uploads
def upload(http: httpx.Client, collection: str, files: list[tuple[str, bytes, str]], **data: str) -> httpx.Response:
    return http.post(
        f"/v1/collections/{collection}/documents", headers=WRITE, data=data, files=[("files", f) for f in files]
    )


def test_upload_then_search(http: httpx.Client, unique_name: str) -> None:
    r = upload(
        http,
        unique_name,
        [("aidat.md", TURKISH.encode(), "text/markdown"), ("boiler.txt", ENGLISH.encode(), "text/plain")],
        language="turkish",
    )
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["ok"] is True and sorted(report["added"]) == ["aidat.md", "boiler.txt"]
    hits = http.get("/v1/search", params={"q": "gecikme tazminatı ne kadar", "collections": unique_name}).json()
    top = hits["hits"][0]
    assert top["source"] == "aidat.md" and "gecikme" in top["quote"]["text"]
    docs = http.get(f"/v1/collections/{unique_name}/documents").json()["documents"]
    assert sorted(d["source"] for d in docs) == ["aidat.md", "boiler.txt"]
    # the same upload again changes nothing; a document can be deleted
    again = upload(http, unique_name, [("aidat.md", TURKISH.encode(), "text/markdown")])
    assert again.status_code == 200 and again.json()["added"] == []
    assert http.delete(f"/v1/collections/{unique_name}/documents/boiler.txt", headers=WRITE).status_code == 200
    assert_problem(http.get(f"/v1/collections/{unique_name}/documents/boiler.txt"), 404)
    assert http.delete(f"/v1/collections/{unique_name}", headers=WRITE).status_code == 200


def test_bad_uploads(http: httpx.Client, unique_name: str, tmp_path: Path) -> None:
    big = b"word " * int(LIMIT_MB * 1_048_576 / 4)
    assert_problem(upload(http, unique_name, [("big.txt", big, "text/plain")]), 413, "KAYNAK_MAX_UPLOAD_MB")

    def chunked() -> Iterator[bytes]:  # no Content-Length: the limit is enforced while streaming
        yield b'--XyZ\r\nContent-Disposition: form-data; name="files"; filename="big.txt"\r\n'
        yield b"Content-Type: text/plain\r\n\r\n"
        for _ in range(40):
            yield b"x" * 4096
        yield b"\r\n--XyZ--\r\n"

    r = http.post(
        f"/v1/collections/{unique_name}/documents",
        content=chunked(),
        headers={**WRITE, "content-type": "multipart/form-data; boundary=XyZ"},
    )
    assert_problem(r, 413)
    assert_problem(
        upload(http, unique_name, [("tool.exe", b"MZ\x90\x00", "application/octet-stream")]), 422, "tool.exe", ".exe"
    )
    assert_problem(upload(http, unique_name, [("noext", b"text", "text/plain")]), 422, "no extension")
    assert_problem(upload(http, unique_name, [("fake.pdf", b"<html></html>", "text/html")]), 422, "text/html")
    assert_problem(
        upload(http, unique_name, [("a.md", b"# a", "text/markdown"), ("a.md", b"# b", "text/markdown")]), 400, "a.md"
    )
    assert_problem(upload(http, unique_name, [("../..", b"x", "text/plain")]), 400)
    assert_problem(http.post(f"/v1/collections/{unique_name}/documents", headers=WRITE), 422, "files")
    # traversal names are reduced to safe relative paths inside the upload folder
    r = upload(
        http,
        unique_name,
        [
            ("../../../../tmp/evil.md", b"# Evil\n\nNot outside.", "text/markdown"),
            ("..\\..\\win.txt", b"Windows style path.", "text/plain"),
        ],
    )
    assert r.status_code == 200, r.text
    sources = sorted(d["source"] for d in http.get(f"/v1/collections/{unique_name}/documents").json()["documents"])
    assert sources == ["tmp/evil.md", "win.txt"]
    assert http.delete(f"/v1/collections/{unique_name}", headers=WRITE).status_code == 200


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ("a.md", "a.md"),
        ("../../etc/passwd.md", "etc/passwd.md"),
        ("/abs/x.pdf", "abs/x.pdf"),
        ("C:\\Users\\me\\r.docx", "C/Users/me/r.docx"),
        (".hidden.md", "hidden.md"),
        ("dir/./a.txt", "dir/a.txt"),
        ("ka\x00yn\x1fak.md", "kaynak.md"),
        ("a/../../b.md", "a/b.md"),
    ],
)
def test_safe_relpath(raw: str, safe: str) -> None:
    assert safe_relpath(raw) == safe


@pytest.mark.parametrize("raw", ["", None, "..", "../..", "/", ". /.."])
def test_safe_relpath_rejects_empty(raw: str | None) -> None:
    with pytest.raises(UsageError):
        safe_relpath(raw)


def test_ingest_runs_off_the_event_loop(ctx: Context, http: httpx.Client, seeded: str, unique_name: str) -> None:
    """While a slow ingest runs, searches and health checks still answer at once."""
    real = ctx.ingest
    started = threading.Event()

    class SlowIngest:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def ingest(self, *args: Any, **kwargs: Any) -> Any:
            started.set()
            time.sleep(3)
            return real.ingest(*args, **kwargs)

    ctx.__dict__["ingest"] = SlowIngest()
    result: dict[str, Any] = {}
    try:
        thread = threading.Thread(
            target=lambda: result.update(
                r=upload(http, unique_name, [("slow.md", b"# Slow\n\nA slow document.", "text/markdown")])
            )
        )
        thread.start()
        assert started.wait(20)
        t0 = time.perf_counter()
        assert http.get("/v1/search", params={"q": "aidat", "collections": seeded}).status_code == 200
        assert http.get("/v1/health").status_code == 200
        elapsed = time.perf_counter() - t0
        assert thread.is_alive(), "the ingest finished before the searches: the test proves nothing"
        thread.join(60)
    finally:
        ctx.__dict__["ingest"] = real
    assert elapsed < 2.5, elapsed
    assert result["r"].status_code == 200, result["r"].text
    http.delete(f"/v1/collections/{unique_name}", headers=WRITE)


# ---------------------------------------------------------------------------------------------- no 5xx, ever
text = st.text(st.characters(codec="utf-8"), max_size=60)
maybe_int = st.one_of(st.integers(-10, 10_000_000).map(str), text)
PROPERTY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(
    q=text,
    collections=st.one_of(st.none(), text, st.just("*")),
    mode=st.one_of(st.none(), text, st.sampled_from(["auto", "hybrid", "vector", "keyword"])),
    k=st.one_of(st.none(), maybe_int),
)
def test_search_get_never_5xx(
    http: httpx.Client, q: str, collections: str | None, mode: str | None, k: str | None
) -> None:
    params = {key: v for key, v in {"q": q, "collections": collections, "mode": mode, "k": k}.items() if v is not None}
    r = http.get("/v1/search", params=params)
    assert r.status_code < 500, (params, r.text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)


@PROPERTY
@given(
    body=st.one_of(
        json_values,
        st.fixed_dictionaries(
            {"q": text},
            optional={
                "collections": json_values,
                "mode": json_values,
                "k": json_values,
                "filters": json_values,
                "rerank": json_values,
            },
        ),
    )
)
def test_search_post_never_5xx(http: httpx.Client, body: Any) -> None:
    r = http.post("/v1/search", json=body)
    assert r.status_code < 500, (body, r.text)


def segment(s: str) -> str:
    return quote(s, safe="")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=text.map(segment), source=text, number=maybe_int, chunk=text.map(segment), limit=maybe_int)
def test_browse_never_5xx(
    http: httpx.Client, seeded: str, name: str, source: str, number: str, chunk: str, limit: str
) -> None:
    for col in (name or "x", seeded):
        for path, params in (
            (f"/v1/collections/{col}", {}),
            (f"/v1/collections/{col}/documents", {"limit": limit, "prefix": source}),
            (f"/v1/collections/{col}/page", {"source": source, "number": number}),
        ):
            r = http.get(path, params=params)
            assert r.status_code < 500, (path, params, r.text)
    for path in (f"/v1/chunks/{chunk or 'x'}", f"/v1/collections/{seeded}/documents/{quote(source) or 'x'}"):
        r = http.get(path, params={"before": number})
        assert r.status_code < 500, (path, r.text)


def test_page_reads_in_pieces_and_documents_page_with_a_total(http: httpx.Client, seeded: str) -> None:
    """Issue 52: `offset` / `max_chars` bound a page read (with `total_chars` and `next_offset`); the document list
    says how many match and where the next page of the listing starts."""
    path = f"/v1/collections/{seeded}/page"
    whole = http.get(path, params={"source": "hukuk/aidat.md", "number": 1}).json()
    text = whole["text"]
    assert whole["offset"] == 0 and whole["total_chars"] == len(text) and whole["next_offset"] is None
    pieces, at = [], 0
    while at is not None:
        r = http.get(path, params={"source": "hukuk/aidat.md", "number": 1, "offset": at, "max_chars": 7}).json()
        assert len(r["text"]) <= 7 and r["offset"] == at and r["total_chars"] == len(text)
        pieces.append(r["text"])
        at = r["next_offset"]
    assert "".join(pieces) == text and len(pieces) > 1
    assert_problem(http.get(path, params={"source": "hukuk/aidat.md", "max_chars": 0}), 422)
    docs = f"/v1/collections/{seeded}/documents"
    first = http.get(docs, params={"limit": 1}).json()
    assert first["total"] == 2 and first["next_offset"] == 1 and len(first["documents"]) == 1
    last = http.get(docs, params={"limit": 1, "offset": 1}).json()
    assert last["next_offset"] is None and last["documents"][0]["source"] == "notes/boiler.txt"
    assert http.get(docs, params={"prefix": "notes/"}).json()["total"] == 1
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$", first["documents"][0]["ingested_at"])
