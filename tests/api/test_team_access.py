"""Serving a team (issue 31): scoped tokens on every face, out of scope answering exactly like missing, revoked and
expired tokens, brute force, rate budgets, the audit trail, /metrics, request ids and the JSON request log.

The scope matrix is face × right × in/out of scope: REST (search, browse, pages, chunks, status, uploads, deletes,
collection create/delete), the web page's endpoints (access, highlights, original files) and MCP over Streamable
HTTP (list_collections, search, read_context, read_page, list_documents). Tokens live in the session's database;
the module removes them when it ends, so other test modules see a server without tokens.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import logging
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kaynak.access import (
    ALL,
    EVERYTHING,
    Access,
    new_secret,
    parse_expiry,
    parse_scope,
    secret_hash,
)
from kaynak.cli import app as cli_app
from kaynak.config import load_settings
from kaynak.context import Context
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.errors import UsageError
from kaynak.server import create_app
from kaynak.store import Store
from kaynak.store.scoped import UNSCOPED_OK, ScopedStore, scoped_view
from kaynak.types import Chunk, Page
from testkit.servers import running
from testkit.webapp import hash_context

API_TOKEN = "legacy-api-token"
QUESTION = "kat malikleri kurulu ne zaman toplanır"
TEXTS = {
    "a": ["Kat malikleri kurulu her yıl ocak ayında toplanır.", "Aidat her ay ödenir ve gecikme tazminatı vardır."],
    "b": ["Kat malikleri kurulu gizli personel dosyalarını da görüşür.", "Maaş bordroları ayın beşinde ödenir."],
}


# ---------------------------------------------------------------------------------------------- pure parts
def test_access_rights_are_nested_and_scopes_parse() -> None:
    a = Access("x", "token", frozenset({"a"}), frozenset({"b"}), frozenset({"c"}))
    assert a.allows("read", "a") and a.allows("read", "b") and a.allows("read", "c")  # write and admin imply read
    assert a.allows("write", "b") and a.allows("write", "c") and not a.allows("write", "a")
    assert a.allows("admin", "c") and not a.allows("admin", "b")
    assert a.visible("read") == {"a", "b", "c"} and not a.everything("read")
    star = Access("y", "token", EVERYTHING)
    assert star.visible("read") is None and star.allows("read", "anything") and not star.any("write")
    assert parse_scope("hukuk, ik ,", "read") == {"hukuk", "ik"}
    assert parse_scope("hukuk,*", "read") == EVERYTHING
    assert parse_scope(None, "read") == frozenset()
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_expiry("90d", now) == now + timedelta(days=90)
    assert parse_expiry("12h", now) == now + timedelta(hours=12)
    assert parse_expiry("2027-01-31", now) == datetime(2027, 1, 31, tzinfo=UTC)
    assert parse_expiry(None) is None and parse_expiry("never") is None
    for bad in ("90x", "yesterday", "2020-01-01"):
        with pytest.raises(UsageError):
            parse_expiry(bad, now)
    secret = new_secret()
    assert secret.startswith("kyk_") and len(secret) >= 40 and secret != new_secret()
    assert secret_hash(secret) == hashlib.sha256(secret.encode()).digest()


def test_faces_reach_the_services_only_through_the_callers_context() -> None:
    """Routes get the services from ``get_context`` (the caller's view), never from the app's Context captured when
    the routers were built: that one sees every collection."""
    import kaynak.api.routes
    import kaynak.web.routes

    files = [Path(kaynak.web.routes.__file__), *Path(kaynak.api.routes.__file__).parent.glob("*.py")]
    assert len(files) > 8, files
    found = [
        f"{path.name}:{n}: {line.strip()}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bcontext\.(search|ingest|store)\b", line)
    ]
    assert not found, "use get_context(request) instead:\n" + "\n".join(found)


def test_the_scoped_store_overrides_every_method_that_names_stored_content() -> None:
    """A store method taking a collection, a name or ids must be scoped, or be listed as needing no scope: a new
    read method cannot slip past the token's scope unnoticed."""
    suspicious = re.compile(r"collection|name|chunk|document|ids|source")
    missing = []
    for name, member in inspect.getmembers(Store):
        if name.startswith("_") or name in UNSCOPED_OK or not callable(member):
            continue
        params = list(inspect.signature(member).parameters)[1:]
        if any(suspicious.search(p) for p in params) and name not in vars(ScopedStore):
            missing.append(name)
    assert not missing, f"scope these in kaynak.store.scoped (or list them in UNSCOPED_OK): {missing}"


# ---------------------------------------------------------------------------------------------- fixtures
def _seed(store: Store, name: str, texts: list[str], folder: Path) -> list[int]:
    col = store.create_collection(name, "turkish", "hash", 64)
    emb = HashEmbedder()
    ids = []
    for i, text in enumerate(texts):
        source = f"doc{i}.md"
        path = folder / name / source
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        pages = [Page(1, text)]
        chunks = [Chunk(0, 1, None, 0, len(text), text)]
        store.replace_document(
            col, source, sha, source, {}, pages, chunks, emb.embed_passages([text]), origin=str(path.resolve())
        )
        ids.append(store.get_document(col, source).id)
    return ids


def _purge_tokens(store: Store) -> None:
    with store.pool.connection() as conn:
        conn.execute("DELETE FROM access_tokens")
        conn.execute("DELETE FROM token_search_counts")


class Team:
    """Two collections, their document ids and chunk ids, and a token per role."""

    def __init__(self, store: Store, folder: Path) -> None:
        tag = os.urandom(3).hex()
        self.a, self.b = f"ta_a_{tag}", f"ta_b_{tag}"
        self.missing = f"ta_nope_{tag}"
        self.doc_ids = {
            self.a: _seed(store, self.a, TEXTS["a"], folder),
            self.b: _seed(store, self.b, TEXTS["b"], folder),
        }
        self.chunk_ids = {
            n: [c.id for c in store.chunk_with_neighbours(_first_chunk(store, n), 0, 5)] for n in (self.a, self.b)
        }
        self.tokens: dict[str, str] = {}
        a, b = self.a, self.b
        roles = {
            "reader_a": ({a}, set(), set(), None),
            "mixed": ({a, b}, {a}, set(), None),  # reads both, writes only a
            "star": ({ALL}, set(), set(), None),
            "writer_a": (set(), {a}, set(), None),
            "admin_all": (set(), set(), {ALL}, None),
            "expired": ({a}, set(), set(), datetime.now(UTC) + timedelta(seconds=1)),
            "revoked": ({a}, set(), set(), None),
            "ghost": ({self.missing}, {self.missing}, {self.missing}, None),  # made before its collection exists
        }
        for role, (read, write, admin, expires) in roles.items():
            secret = new_secret()
            store.create_token(f"{role}-{tag}", secret_hash(secret), read, write, admin, expires)
            self.tokens[role] = secret
        self.tag = tag
        store.revoke_token(f"revoked-{tag}")

    def auth(self, role: str) -> dict[str, str]:
        if role == "api":
            return {"Authorization": f"Bearer {API_TOKEN}"}
        return {"Authorization": f"Bearer {self.tokens[role]}"} if role != "none" else {}


def _first_chunk(store: Store, name: str) -> str:
    col = store.get_collection(name)
    doc = store.list_documents(col)[0]
    with store.pool.connection() as conn:
        row = conn.execute("SELECT id FROM chunks WHERE document_id = %s ORDER BY ord LIMIT 1", (doc.id,)).fetchone()
    return str(row[0])


@pytest.fixture(scope="module")
def team(store: Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    t = Team(store, tmp_path_factory.mktemp("team-files"))
    yield t
    _purge_tokens(store)
    for name in (t.a, t.b):
        with contextlib.suppress(Exception):
            store.delete_collection(name)


@pytest.fixture(scope="module")
def ctx(data_dir: Path, database_url: str, team: Team) -> Iterator[Context]:
    c = hash_context(data_dir, database_url, api_token=API_TOKEN)
    yield c
    c.close()


@pytest.fixture(scope="module")
def http(ctx: Context) -> Iterator[TestClient]:
    with TestClient(create_app(ctx)) as client:
        yield client


def same_as_missing(r: httpx.Response, missing: httpx.Response, name: str, missing_name: str) -> None:
    """``r`` (a name or id out of scope) answers exactly like ``missing`` (one that does not exist)."""
    assert r.status_code == missing.status_code == 404, (r.status_code, r.text, missing.text)
    body, other = r.json(), missing.json()
    for key in ("type", "title", "status"):
        assert body[key] == other[key]
    assert body["detail"].replace(name, "<x>") == other["detail"].replace(missing_name, "<x>"), (body, other)


# ---------------------------------------------------------------------------------------------- REST reads
def test_rest_reads_out_of_scope_answer_like_missing(http: TestClient, team: Team) -> None:
    a, b, missing = team.a, team.b, team.missing
    h = team.auth("reader_a")
    routes = [
        "/v1/search?q=kat+malikleri&collections={c}",
        "/v1/collections/{c}",
        "/v1/collections/{c}/documents",
        "/v1/collections/{c}/documents/doc0.md",
        "/v1/collections/{c}/page?source=doc0.md&number=1",
        "/v1/collections/{c}/status",
    ]
    for route in routes:
        ok = http.get(route.format(c=a), headers=h)
        assert ok.status_code == 200, (route, ok.text)
        out = http.get(route.format(c=b), headers=h)
        gone = http.get(route.format(c=missing), headers=h)
        same_as_missing(out, gone, b, missing)
        listed = out.json()["detail"].partition("existing collections")[2]
        assert b not in listed  # the message lists only the collections the token may read
    # a mixed list: one forbidden name makes it fail exactly as one missing name does
    mixed = http.get("/v1/search", params={"q": "kat", "collections": f"{a},{b}"}, headers=h)
    mixed_missing = http.get("/v1/search", params={"q": "kat", "collections": f"{a},{missing}"}, headers=h)
    same_as_missing(mixed, mixed_missing, b, missing)
    posted = http.post("/v1/search", json={"q": "kat", "collections": [a, b]}, headers=h)
    assert posted.status_code == 404
    # guessing another collection's chunk ids and document ids
    for cid in team.chunk_ids[b]:
        out = http.get(f"/v1/chunks/{cid}", headers=h)
        gone = http.get(f"/v1/chunks/{'f' * len(cid)}", headers=h)
        same_as_missing(out, gone, cid, "f" * len(cid))
    assert http.get(f"/v1/chunks/{team.chunk_ids[a][0]}", headers=h).status_code == 200
    for doc_id in team.doc_ids[b]:
        out = http.get(f"/v1/documents/{doc_id}/file", headers=h)
        gone = http.get("/v1/documents/999999999/file", headers=h)
        same_as_missing(out, gone, str(doc_id), "999999999")
    assert http.get(f"/v1/documents/{team.doc_ids[a][0]}/file", headers=h).status_code == 200
    for doc_id in team.doc_ids[b]:  # the web page's PDF page drawing reaches documents by id too
        out = http.get(f"/v1/documents/{doc_id}/pages/1/image", headers=h)
        gone = http.get("/v1/documents/999999999/pages/1/image", headers=h)
        same_as_missing(out, gone, str(doc_id), "999999999")
    assert (
        http.get(f"/v1/documents/{team.doc_ids[a][0]}/pages/1/image", headers=h).status_code == 400
    )  # in scope: not a PDF


def test_star_means_every_collection_the_token_may_read(http: TestClient, team: Team) -> None:
    def searched(role: str) -> set[str]:
        r = http.get("/v1/search", params={"q": QUESTION, "collections": "*", "k": 20}, headers=team.auth(role))
        assert r.status_code == 200, r.text
        return {hit["collection"] for hit in r.json()["hits"]}

    def listed(role: str) -> set[str]:
        names = {c["name"] for c in http.get("/v1/collections", headers=team.auth(role)).json()["collections"]}
        return names & {team.a, team.b}

    assert searched("reader_a") == {team.a} and listed("reader_a") == {team.a}
    assert searched("mixed") == {team.a, team.b} and listed("mixed") == {team.a, team.b}
    # '*' reads every collection, other tests' included: the same hits as the all-collections API token
    assert searched("star") == searched("api") and listed("star") == {team.a, team.b}
    assert listed("api") == {team.a, team.b}  # KAYNAK_API_TOKEN: everything, as before
    assert searched("writer_a") == {team.a}  # write implies read


def test_without_a_token_reads_close_once_tokens_exist(http: TestClient, team: Team) -> None:
    r = http.get("/v1/collections")
    assert r.status_code == 401 and r.headers["content-type"].startswith("application/problem+json")
    assert http.get("/v1/health").status_code == 200  # health stays open
    assert http.get("/v1/collections", headers={"Authorization": "Bearer kyk_" + "x" * 43}).status_code == 401
    access = http.get("/v1/access").json()
    assert access["read"] is False and access["read_token_required"] is True and access["writes_enabled"] is True


# ---------------------------------------------------------------------------------------------- REST writes
def _upload(http: TestClient, name: str, role: str, team: Team, text: str = "Yeni karar metni.") -> httpx.Response:
    files = [("files", ("karar.md", text.encode(), "text/markdown"))]
    return http.post(f"/v1/collections/{name}/documents", files=files, headers=team.auth(role))


def test_rest_writes_follow_the_write_scope_and_are_audited(http: TestClient, ctx: Context, team: Team) -> None:
    a, b = team.a, team.b
    started = datetime.now(UTC)
    # read only: 403 on a collection it may read, 404 (like missing) on one it may not
    r = _upload(http, a, "reader_a", team)
    assert r.status_code == 403, r.text
    r = _upload(http, b, "writer_a", team)
    gone = _upload(http, team.missing, "writer_a", team)
    same_as_missing(r, gone, b, team.missing)  # not even created: nothing outside the scope
    assert http.get(f"/v1/collections/{team.missing}", headers=team.auth("star")).status_code == 404
    # in scope: stored, then deleted
    r = _upload(http, a, "writer_a", team)
    assert r.status_code == 200, r.text
    assert http.delete(f"/v1/collections/{a}/documents/karar.md", headers=team.auth("mixed")).status_code == 200
    assert http.delete(f"/v1/collections/{b}/documents/doc0.md", headers=team.auth("mixed")).status_code == 403
    assert http.delete(f"/v1/collections/{b}/documents/doc0.md", headers=team.auth("writer_a")).status_code == 404
    # collections: create needs write on the name, delete needs admin
    new = f"ta_new_{team.tag}"
    body = {"name": new, "language": "turkish", "embedder": "hash"}
    r = http.post("/v1/collections", json=body, headers=team.auth("writer_a"))
    assert r.status_code == 404, r.text
    assert http.post("/v1/collections", json=body, headers=team.auth("admin_all")).status_code == 201
    assert http.delete(f"/v1/collections/{a}", headers=team.auth("writer_a")).status_code == 403
    assert http.delete(f"/v1/collections/{new}", headers=team.auth("admin_all")).status_code == 200
    entries = [e for e in ctx.store.audit_entries(since=started) if e.collection in (a, b, new)]
    refused = [(e.token, e.collection, e.detail["status"]) for e in entries if e.action == "refused"]
    assert refused == [  # every refused write is in the trail too, out of scope or not
        (f"reader_a-{team.tag}", a, 403),
        (f"writer_a-{team.tag}", b, 404),
        (f"mixed-{team.tag}", b, 403),
        (f"writer_a-{team.tag}", b, 404),
        (f"writer_a-{team.tag}", new, 404),
        (f"writer_a-{team.tag}", a, 403),
    ]
    entries = [e for e in entries if e.action != "refused"]
    got = [(e.action, e.token, e.collection, list(e.sources)) for e in entries]
    assert got == [
        ("upload", f"writer_a-{team.tag}", a, ["karar.md"]),
        ("delete_document", f"mixed-{team.tag}", a, ["karar.md"]),
        ("create_collection", f"admin_all-{team.tag}", new, []),
        ("delete_collection", f"admin_all-{team.tag}", new, []),
    ]
    assert all(e.client == "testclient" and e.request_id and e.at >= started for e in entries)


def test_legacy_api_token_still_writes_everywhere_and_is_audited(http: TestClient, ctx: Context, team: Team) -> None:
    started = datetime.now(UTC)
    assert _upload(http, team.b, "api", team, "Ek belge.").status_code == 200
    assert http.delete(f"/v1/collections/{team.b}/documents/karar.md", headers=team.auth("api")).status_code == 200
    actions = [(e.action, e.token) for e in ctx.store.audit_entries(since=started, collection=team.b)]
    assert actions == [("upload", "KAYNAK_API_TOKEN"), ("delete_document", "KAYNAK_API_TOKEN")]


# ---------------------------------------------------------------------------------------------- issue 53: leaks
def test_a_token_scoped_to_a_missing_collection_learns_no_other_names(http: TestClient, team: Team) -> None:
    """A token whose collections do not exist yet (made before the first upload, a typo) gets 404s that list only
    what it may read: never the server's other collection names."""
    h, m = team.auth("ghost"), team.missing
    answers = [
        http.get(route, headers=h)
        for route in (
            f"/v1/collections/{m}",
            f"/v1/collections/{m}/documents",
            f"/v1/collections/{m}/documents/doc0.md",
            f"/v1/collections/{m}/page?source=doc0.md&number=1",
            f"/v1/collections/{m}/status",
            f"/v1/search?q=kat&collections={m}",
        )
    ]
    answers.append(http.delete(f"/v1/collections/{m}", headers=h))
    answers.append(http.delete(f"/v1/collections/{m}/documents/doc0.md", headers=h))
    item = {"collection": m, "text": "Kat malikleri."}
    answers.append(http.post("/v1/highlights", json={"q": "kat", "items": [item]}, headers=h))
    for r in answers:
        assert r.status_code == 404, (r.request.url, r.text)
        assert team.a not in r.text and team.b not in r.text, r.text
    # the same view serves MCP's tools
    store = http.app.state.context.store  # type: ignore[attr-defined]
    with pytest.raises(Exception) as caught:
        scoped_view(store, frozenset({m})).get_collection(m)
    assert team.a not in str(caught.value) and team.b not in str(caught.value)


def test_mcp_tools_tell_a_token_of_a_missing_collection_no_other_names(ctx: Context, team: Team) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    m = team.missing

    async def session(url: str) -> list[tuple[bool, str]]:
        async with httpx2.AsyncClient(headers=team.auth("ghost"), timeout=60) as http_client:
            transport = streamable_http_client(f"{url}/mcp", http_client=http_client)
            async with Client(transport, read_timeout_seconds=60, mode="legacy") as client:
                out = []
                for tool, args in [
                    ("search", {"query": QUESTION, "collections": [m]}),
                    ("read_page", {"collection": m, "source": "doc0.md", "page": 1}),
                    ("list_documents", {"collection": m}),
                    ("list_collections", {}),
                ]:
                    result = await client.call_tool(tool, args)
                    text = " ".join(getattr(c, "text", "") for c in result.content or [])
                    out.append((result.is_error, text + json.dumps(result.structured_content or {})))
                return out

    with running(create_app(ctx)) as url:
        answers = anyio.run(session, url)
    assert [err for err, _ in answers] == [True, True, True, False], answers
    for _, text in answers:
        assert team.a not in text and team.b not in text, text


def test_rest_clients_choose_only_named_embedders_and_probes_are_audited(
    http: TestClient, ctx: Context, team: Team
) -> None:
    """``st:<path>`` or a path from a client would let it probe the server's folders (and load any model): over
    REST only the named embedders and the server's own are accepted, each refusal worded alike and audited."""
    started = datetime.now(UTC)
    name = f"ta_emb_{team.tag}"
    details = set()
    probes = ("st:/root/.ssh", "st:/root/.nonexistent", "st:.", "/etc", "hash:32")
    for bad in probes:
        body = {"name": name, "language": "turkish", "embedder": bad}
        r = http.post("/v1/collections", json=body, headers=team.auth("admin_all"))
        assert r.status_code == 400 and r.json()["field"] == "embedder", r.text
        details.add(r.json()["detail"].replace(repr(bad), "<x>"))
    assert len(details) == 1 and "does not exist" not in details.pop()
    files = [("files", ("karar.md", b"Yeni karar.", "text/markdown"))]
    r = http.post(
        f"/v1/collections/{team.a}/documents", files=files, data={"embedder": "st:/"}, headers=team.auth("writer_a")
    )
    assert r.status_code == 400 and r.json()["field"] == "embedder", r.text
    assert http.get(f"/v1/collections/{name}", headers=team.auth("star")).status_code == 404  # nothing was made
    refused = [e for e in ctx.store.audit_entries(since=started) if e.action == "refused"]
    assert [e.detail.get("embedder") for e in refused] == [*probes, "st:/"]
    assert {e.detail["attempt"] for e in refused} == {"create_collection", "upload"}


def test_foreign_hosts_spend_no_budget_and_wrong_tokens_cannot_lock_out_valid_ones(
    data_dir: Path, database_url: str, team: Team
) -> None:
    """The Host / Origin check runs before any token is looked at (a DNS-rebinding page spends nothing), and a
    valid token passes whatever wrong ones its address sent."""
    c = hash_context(data_dir, database_url, auth_failures_per_min=3)
    wrong = {"Authorization": f"Bearer {new_secret()}"}
    try:
        app = create_app(c)
        rebinding = TestClient(app, base_url="http://rebind.example:8765", client=("127.0.0.1", 4001))
        with TestClient(app, base_url="http://127.0.0.1:8765", client=("127.0.0.1", 4000)) as local:
            assert {rebinding.get("/v1/collections", headers=wrong).status_code for _ in range(10)} == {421}
            foreign = {**wrong, "Origin": "http://evil.example"}
            assert {local.get("/v1/collections", headers=foreign).status_code for _ in range(5)} == {403}
            # none of that counted: the address's three wrong tokens are all still there
            assert [local.get("/v1/collections", headers=wrong).status_code for _ in range(4)] == [401] * 3 + [429]
            for role in ("star", "reader_a"):  # locked out? never a valid token
                assert local.get("/v1/collections", headers=team.auth(role)).status_code == 200
            assert local.get("/v1/collections", headers=wrong).status_code == 429
    finally:
        c.close()


def test_api_answers_are_not_cached_and_one_authorization_header_only(http: TestClient, team: Team) -> None:
    h = team.auth("reader_a")
    for route in (
        f"/v1/search?q=kat&collections={team.a}",
        f"/v1/collections/{team.a}/page?source=doc0.md&number=1",
        f"/v1/chunks/{team.chunk_ids[team.a][0]}",
        f"/v1/collections/{team.b}",  # a problem too
    ):
        r = http.get(route, headers=h)
        assert r.headers["cache-control"] == "no-store", (route, r.headers)
    both = [("Authorization", h["Authorization"]), ("Authorization", team.auth("star")["Authorization"])]
    r = http.get(f"/v1/collections/{team.b}", headers=both)
    assert r.status_code == 400 and "one Authorization header" in r.json()["detail"], r.text


def test_paths_only_to_admins_and_audit_ids_are_the_servers(http: TestClient, ctx: Context, team: Team) -> None:
    a = team.a
    shown = http.get(f"/v1/collections/{a}/documents/doc0.md", headers=team.auth("admin_all")).json()
    assert shown["origin"] and shown["origin"].endswith("doc0.md")
    for role in ("reader_a", "writer_a", "star"):  # readers and writers: no server folders
        doc = http.get(f"/v1/collections/{a}/documents/doc0.md", headers=team.auth(role)).json()
        assert doc["origin"] is None and doc["source"] == "doc0.md"
        listed = http.get(f"/v1/collections/{a}/documents", headers=team.auth(role)).json()["documents"]
        assert listed and all(d["origin"] is None for d in listed)
    store = ctx.store
    col = store.get_collection(a)
    root = str(Path(shown["origin"]).parent)
    store.remember_source(col, root)
    try:  # a collection's folders: in full to its admins, by their last name to everyone else
        full = http.get(f"/v1/collections/{a}/status", headers=team.auth("admin_all")).json()
        assert [r["root"] for r in full["roots"]] == [root]
        for role in ("reader_a", "star"):
            status = http.get(f"/v1/collections/{a}/status", headers=team.auth(role)).json()
            assert [r["root"] for r in status["roots"]] == [Path(root).name], status
    finally:
        with store.pool.connection() as conn:
            conn.execute("DELETE FROM collection_sources WHERE collection_id = %s", (col.id,))
    started = datetime.now(UTC)
    headers = {**team.auth("writer_a"), "X-Request-ID": "trace-53"}
    files = [("files", ("iz.md", b"Iz metni.", "text/markdown"))]
    assert http.post(f"/v1/collections/{a}/documents", files=files, headers=headers).status_code == 200
    assert http.delete(f"/v1/collections/{a}/documents/iz.md", headers=team.auth("writer_a")).status_code == 200
    entry = next(e for e in ctx.store.audit_entries(since=started, collection=a) if e.action == "upload")
    assert re.fullmatch(r"[0-9a-f]{32}", entry.request_id or "") and entry.detail["client_request_id"] == "trace-53"


def test_log_lines_escape_separators_and_bidi_controls(
    http: TestClient, team: Team, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kaynak.requests")
    odd = "x\u2028y\u202ez\u0085w"
    http.get(f"/v1/collections/{odd}", headers=team.auth("reader_a"))
    lines = [r.getMessage() for r in caplog.records if r.name == "kaynak.requests"]
    line = next(x for x in lines if "x\\u2028y" in x)
    assert not any(ch in line for ch in "\u2028\u202e\u0085") and json.loads(line)["path"].endswith(odd)


def test_query_vectors_are_cached_per_caller(http: TestClient, ctx: Context, team: Team) -> None:
    """A query one token searched is not in any other caller's cache (a shared cache answered it faster: others
    could time what a token searched)."""
    q = f"kat malikleri kurulu {team.tag}"
    r = http.get("/v1/search", params={"q": q, "collections": team.a, "mode": "hybrid"}, headers=team.auth("reader_a"))
    assert r.status_code == 200, r.text
    cache = ctx.search.query_vectors
    assert cache.partition(f"token:reader_a-{team.tag}").get("hash", q) is not None
    for other in (f"token:mixed-{team.tag}", "token:KAYNAK_API_TOKEN"):
        assert cache.partition(other).get("hash", q) is None
    assert cache.get("hash", q) is None  # nor in the shared one


def test_out_of_scope_ids_are_looked_up_within_the_scope(store: Store, team: Team) -> None:
    """An id of a collection out of scope is missing in the lookup itself (one indexed probe, as for an id that
    does not exist), not found and then hidden: timing cannot tell them apart (measured: bench_team_access.py)."""
    chunk = team.chunk_ids[team.b][0]
    from kaynak.errors import ChunkNotFound, DocumentNotFound

    with pytest.raises(ChunkNotFound):
        store.chunk_with_neighbours(chunk, 0, 0, within=[team.a])
    assert store.chunk_with_neighbours(chunk, 0, 0, within=[team.b])[0].id == chunk
    with pytest.raises(DocumentNotFound):
        store.document_origin(team.doc_ids[team.b][0], within=[team.a])
    assert store.document_origin(team.doc_ids[team.b][0], within=[team.a, team.b])[0].collection == team.b


def test_mcp_event_streams_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """GET /mcp event streams: at most a few open per caller, each closed after a while."""
    from kaynak.access import READ_TOKEN
    from kaynak.api import team as gate_module

    monkeypatch.setattr(gate_module, "MCP_STREAM_MAX_S", 0.2)
    sent: list[list[dict[str, Any]]] = []

    async def endless(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b": ping\n\n", "more_body": True})
        await anyio.sleep(3600)

    gate = gate_module.TeamGate(endless, gate_module.Team(_FakeContext()))  # type: ignore[arg-type]

    async def one() -> None:
        out: list[dict[str, Any]] = []
        sent.append(out)

        async def send(message: Any) -> None:
            out.append(message)

        scope = {"type": "http", "method": "GET", "path": "/mcp", gate_module.ACCESS: READ_TOKEN}
        await gate._stream(scope, None, send, "127.0.0.1")  # type: ignore[arg-type]

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(gate_module.MCP_STREAMS_PER_CALLER + 1):
                tg.start_soon(one)

    anyio.run(main)
    statuses = sorted(m[0]["status"] for m in sent)
    assert statuses == [200] * gate_module.MCP_STREAMS_PER_CALLER + [429]
    for messages in sent:  # every stream ended, the refused one at once
        assert messages[-1]["type"] == "http.response.body" and not messages[-1].get("more_body", False)
    assert gate.streams == {}


# ---------------------------------------------------------------------------------------------- web page
def test_web_page_with_a_scoped_token(http: TestClient, team: Team) -> None:
    assert 'data-read-token="1"' in http.get("/").text  # tokens exist: the page asks for one
    access = http.get("/v1/access", headers=team.auth("mixed")).json()
    assert access["read"] and access["write"] and access["token"] == f"mixed-{team.tag}"
    assert access["scopes"] == {"read": sorted([team.a, team.b]), "write": [team.a], "admin": []}
    h = team.auth("reader_a")
    item = {"collection": team.a, "text": "Kat malikleri kurulu toplanır."}
    assert http.post("/v1/highlights", json={"q": QUESTION, "items": [item]}, headers=h).status_code == 200
    out = http.post("/v1/highlights", json={"q": QUESTION, "items": [{**item, "collection": team.b}]}, headers=h)
    gone = http.post("/v1/highlights", json={"q": QUESTION, "items": [{**item, "collection": team.missing}]}, headers=h)
    same_as_missing(out, gone, team.b, team.missing)
    assert http.get("/v1/access", headers=team.auth("revoked")).json()["read"] is False


# ---------------------------------------------------------------------------------------------- MCP over HTTP
def test_mcp_over_http_sees_only_the_tokens_collections(ctx: Context, team: Team) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def session(url: str, token: str | None) -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http_client:
            transport = streamable_http_client(f"{url}/mcp", http_client=http_client)
            async with Client(transport, read_timeout_seconds=60, mode="legacy") as client:
                listed = await client.call_tool("list_collections", {})
                star = await client.call_tool("search", {"query": QUESTION, "collections": "*", "k": 20})
                out = {
                    "listed": {c["name"] for c in listed.structured_content["collections"]},
                    "star": {h["collection"] for h in star.structured_content["hits"]},
                }
                for label, tool, args in [
                    ("search_b", "search", {"query": QUESTION, "collections": [team.b]}),
                    ("search_missing", "search", {"query": QUESTION, "collections": [team.missing]}),
                    ("mixed", "search", {"query": QUESTION, "collections": [team.a, team.b]}),
                    ("context_b", "read_context", {"chunk_id": team.chunk_ids[team.b][0]}),
                    ("context_missing", "read_context", {"chunk_id": "f" * len(team.chunk_ids[team.b][0])}),
                    ("context_a", "read_context", {"chunk_id": team.chunk_ids[team.a][0]}),
                    ("page_b", "read_page", {"collection": team.b, "source": "doc0.md", "page": 1}),
                    ("page_missing", "read_page", {"collection": team.missing, "source": "doc0.md", "page": 1}),
                    ("page_a", "read_page", {"collection": team.a, "source": "doc0.md", "page": 1}),
                    ("docs_b", "list_documents", {"collection": team.b}),
                ]:
                    result = await client.call_tool(tool, args)
                    out[label] = (result.is_error, result.content[0].text if result.content else "")
                return out

    with running(create_app(ctx)) as url:
        found = anyio.run(session, url, team.tokens["reader_a"])
        star = anyio.run(session, url, team.tokens["star"])
        with pytest.raises(Exception):  # noqa: B017 - no token while tokens exist: 401 before any tool
            anyio.run(session, url, None)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        mcp_headers = {"Accept": "application/json, text/event-stream"}
        r = httpx.post(f"{url}/mcp", json=ping, headers=mcp_headers)
        assert r.status_code == 401 and r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["request_id"] == r.headers["x-request-id"]
        revoked = {**mcp_headers, **team.auth("revoked")}
        assert httpx.post(f"{url}/mcp", json=ping, headers=revoked).status_code == 401
    assert found["listed"] & {team.a, team.b} == {team.a}
    assert found["star"] == {team.a}
    assert found["context_a"][0] is False and found["page_a"][0] is False
    pairs = [("search_b", "search_missing"), ("context_b", "context_missing"), ("page_b", "page_missing")]
    for out_key, missing_key in pairs:
        (err, text), (err2, text2) = found[out_key], found[missing_key]
        assert err and err2, (out_key, text)
        b_id, missing_id = (
            (team.b, team.missing)
            if "context" not in out_key
            else (
                team.chunk_ids[team.b][0],
                "f" * len(team.chunk_ids[team.b][0]),
            )
        )
        assert text.replace(b_id, "<x>") == text2.replace(missing_id, "<x>"), (text, text2)
    assert (
        found["mixed"][0] and found["docs_b"][0] and team.b not in found["docs_b"][1].split("named", 1)[1].split(";")[1]
    )
    # '*' reads every collection (other tests' too, which may fill the top 20): both team collections are listed
    assert {team.a, team.b} <= star["listed"] and star["star"] and star["context_b"][0] is False


# ---------------------------------------------------------------------------------------------- tokens
def test_revoked_and_expired_tokens_are_refused(http: TestClient, team: Team) -> None:
    r = http.get("/v1/collections", headers=team.auth("revoked"))
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    import time

    time.sleep(1.1)  # the expired token's second is over
    r = http.get("/v1/collections", headers=team.auth("expired"))
    assert r.status_code == 401 and "expired" in r.json()["detail"], r.text


def test_cli_tokens_survive_a_restart_and_the_plaintext_is_never_stored_or_logged(
    env: dict[str, str], data_dir: Path, database_url: str, team: Team, caplog: pytest.LogCaptureFixture
) -> None:
    runner = CliRunner()
    name = f"cli-{team.tag}"
    made = runner.invoke(cli_app, ["tokens", "create", name, "--read", team.a, "--expires", "90d", "--json"])
    assert made.exit_code == 0, made.output
    secret = json.loads(made.stdout)["token"]
    assert secret.startswith("kyk_")
    again = runner.invoke(cli_app, ["tokens", "create", name, "--read", team.a])
    assert again.exit_code == 1 and "exists" in again.output
    listed = runner.invoke(cli_app, ["tokens", "list", "--json"])
    row = next(t for t in json.loads(listed.stdout)["tokens"] if t["name"] == name)
    assert row["read"] == [team.a] and row["status"] == "active" and "token" not in row
    caplog.set_level(logging.DEBUG)
    for _ in range(2):  # two server lives: the token outlives the process that saw it made
        c = hash_context(data_dir, database_url)
        try:
            with TestClient(create_app(c)) as client:
                r = client.get(
                    f"/v1/collections/{team.a}/documents?limit=5", headers={"Authorization": f"Bearer {secret}"}
                )
                assert r.status_code == 200, r.text
                assert (
                    client.get(f"/v1/collections/{team.b}", headers={"Authorization": f"Bearer {secret}"}).status_code
                    == 404
                )
        finally:
            c.close()
    with Store.open(database_url, data_dir) as store, store.pool.connection() as conn:
        dump = conn.execute("SELECT string_agg(row_to_json(t)::text, ' ') FROM access_tokens t").fetchone()[0]
        audit = conn.execute("SELECT string_agg(row_to_json(t)::text, ' ') FROM audit_log t").fetchone()[0]
    assert secret not in dump and secret[4:] not in dump and secret not in audit
    assert hashlib.sha256(secret.encode()).hexdigest() in dump  # only the hash (bytea as hex in JSON)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "kaynak.requests" in {r.name for r in caplog.records} and secret not in logged and secret[4:20] not in logged
    revoked = runner.invoke(cli_app, ["tokens", "revoke", name])
    assert revoked.exit_code == 0, revoked.output
    c = hash_context(data_dir, database_url)
    try:
        with TestClient(create_app(c)) as client:  # refused from the next request on
            assert client.get("/v1/collections", headers={"Authorization": f"Bearer {secret}"}).status_code == 401
    finally:
        c.close()
    audit_out = runner.invoke(cli_app, ["audit", "--since", "1h", "--json"])
    entries = json.loads(audit_out.stdout)["entries"]
    mine = [(e["action"], e["detail"].get("token")) for e in entries if e["detail"].get("token") == name]
    assert mine == [("token_create", name), ("token_revoke", name)]
    assert all(e["client"].startswith("cli:") for e in entries if e["action"].startswith("token_"))
    shown = runner.invoke(cli_app, ["audit", "-c", team.a])
    assert shown.exit_code == 0 and "upload" in shown.stdout


def test_cli_token_errors_are_usage_errors(env: dict[str, str]) -> None:
    runner = CliRunner()
    assert runner.invoke(cli_app, ["tokens", "create", "bad name!", "--read", "a"]).exit_code == 2
    assert runner.invoke(cli_app, ["tokens", "create", "nothing"]).exit_code == 2
    assert runner.invoke(cli_app, ["tokens", "create", "x", "--read", "a", "--expires", "soon"]).exit_code == 2
    r = runner.invoke(cli_app, ["tokens", "revoke", "no-such-token-here"])
    assert r.exit_code == 1 and "no active token" in r.output
    assert runner.invoke(cli_app, ["audit", "--since", "last tuesday"]).exit_code == 2


# ---------------------------------------------------------------------------------------------- brute force, budgets
def test_brute_force_is_rate_limited_per_address(data_dir: Path, database_url: str, team: Team) -> None:
    c = hash_context(data_dir, database_url, auth_failures_per_min=5)
    try:
        app = create_app(c)
        other = TestClient(
            app, base_url="http://127.0.0.1:8765", client=("10.9.8.6", 4000)
        )  # no lifespan of its own: one run of the app
        with TestClient(app, base_url="http://127.0.0.1:8765", client=("10.9.8.7", 4000)) as attacker:
            codes = [
                attacker.get("/v1/collections", headers={"Authorization": f"Bearer {new_secret()}"}).status_code
                for _ in range(7)
            ]
            assert codes == [401] * 5 + [429] * 2
            r = attacker.get("/v1/collections", headers={"Authorization": f"Bearer {new_secret()}"})
            assert r.status_code == 429 and r.headers["content-type"].startswith("application/problem+json")
            assert 1 <= int(r.headers["Retry-After"]) <= 13 and "KAYNAK_AUTH_FAILURES_PER_MIN" in r.json()["detail"]
            # a valid token always passes: wrong guesses from its address cannot lock it out (issue 53)
            assert attacker.get("/v1/collections", headers=team.auth("star")).status_code == 200
            assert attacker.get("/v1/health").status_code == 200
            assert other.get("/v1/collections", headers=team.auth("star")).status_code == 200  # another address
    finally:
        c.close()


def test_rate_budgets_per_token_give_429_with_retry_after(data_dir: Path, database_url: str, team: Team) -> None:
    c = hash_context(data_dir, database_url, rate_search_per_min=5, rate_upload_per_min=2, api_token=API_TOKEN)
    try:
        with TestClient(create_app(c)) as client:
            q = {"q": "kat", "collections": team.a}
            codes = [client.get("/v1/search", params=q, headers=team.auth("reader_a")).status_code for _ in range(7)]
            assert codes == [200] * 5 + [429] * 2
            page = f"/v1/documents/{team.doc_ids[team.a][0]}/pages/1/image"  # drawing pages spends the same budget
            assert client.get(page, headers=team.auth("reader_a")).status_code == 429
            r = client.get("/v1/search", params=q, headers=team.auth("reader_a"))
            body = r.json()
            assert r.headers["content-type"].startswith("application/problem+json") and body["status"] == 429
            retry = int(r.headers["Retry-After"])
            assert 1 <= retry <= 13, retry  # 5 a minute: one more every 12 s
            assert "5 a minute" in body["detail"] and body["request_id"] == r.headers["x-request-id"]
            from kaynak.api.observe import METRICS

            refused = {"route": "/v1/search", "method": "GET", "status": "429"}  # named by route though never routed
            assert METRICS.value("kaynak_http_requests_total", refused) >= 3
            # another token has its own budget; browsing is not a search
            assert client.get("/v1/search", params=q, headers=team.auth("star")).status_code == 200
            assert client.get(f"/v1/collections/{team.a}", headers=team.auth("reader_a")).status_code == 200
            # uploads have a budget of their own
            ups = [_upload(client, team.a, "writer_a", team, f"Not {i}.").status_code for i in range(3)]
            assert ups == [200, 200, 429]
            client.delete(f"/v1/collections/{team.a}/documents/karar.md", headers=team.auth("writer_a"))
    finally:
        c.close()


class _NoTokens:
    def tokens_exist(self) -> bool:
        return False


class _FakeContext:
    def __init__(self, **settings: Any) -> None:
        self.settings = load_settings(embedder="hash", **settings)
        self.store = _NoTokens()


def test_no_limits_by_default_without_tokens_and_per_address_when_set() -> None:
    from kaynak.access import OPEN
    from kaynak.api.team import Team as Gate
    from kaynak.errors import RateLimited

    gate = Gate(_FakeContext())  # type: ignore[arg-type]
    assert gate.per_min("search") == 0 and gate.per_min("upload") == 0  # the loopback-only, tokenless setup
    for _ in range(500):
        gate.spend("search", OPEN, "127.0.0.1")
    gate = Gate(_FakeContext(rate_search_per_min=2))  # type: ignore[arg-type]
    gate.spend("search", OPEN, "127.0.0.1")
    gate.spend("search", OPEN, "127.0.0.1")
    with pytest.raises(RateLimited) as caught:
        gate.spend("search", OPEN, "127.0.0.1")
    assert 1 <= caught.value.retry_after <= 31 and "this address" in caught.value.message
    gate.spend("search", OPEN, "127.0.0.2")  # every address has its own budget
    gate.spend("upload", OPEN, "127.0.0.1")  # uploads are not searches (and unlimited here)


def test_a_stale_token_on_open_reads_is_ignored_as_before_but_write_guesses_count() -> None:
    """Legacy setup (KAYNAK_API_TOKEN, reads open, no tokens made): a wrong token sent with reads is ignored, as it
    always was; wrong tokens sent with writes are guesses at the API token and count against the address."""
    from kaynak.api.team import Team as Gate
    from kaynak.errors import RateLimited

    gate = Gate(_FakeContext(api_token="the-real-one", auth_failures_per_min=3))  # type: ignore[arg-type]
    stale = {"authorization": "Bearer an-old-token"}
    for _ in range(20):
        assert gate.resolve(stale, "127.0.0.1", "GET").any("read")
    for _ in range(3):
        assert not gate.resolve(stale, "127.0.0.1", "POST").any("write")
    with pytest.raises(RateLimited):
        gate.resolve(stale, "127.0.0.1", "POST")
    assert gate.resolve({"authorization": "Bearer the-real-one"}, "127.0.0.9", "POST").any("write")


# ---------------------------------------------------------------------------------------------- metrics, logs
def test_metrics_from_loopback_or_an_admin_token(http: TestClient, ctx: Context, team: Team) -> None:
    http.get("/v1/search", params={"q": "kat", "collections": team.a}, headers=team.auth("reader_a"))
    r = http.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = r.text
    for name in (
        "kaynak_http_requests_total{",
        "kaynak_http_request_duration_seconds_bucket{",
        "kaynak_search_duration_seconds_bucket{",
        "kaynak_parse_worker_restarts_total",
        'kaynak_db_pool_connections{state="size"}',
        'route="/v1/collections/{name}"',
    ):
        assert name in text, name
    assert team.a not in text and team.b not in text  # route templates, never collection names
    app = http.app
    remote = TestClient(
        app, base_url="http://127.0.0.1:8765", client=("10.1.2.3", 5000)
    )  # the app runs already (http's lifespan)
    assert remote.get("/metrics").status_code == 401
    assert remote.get("/metrics", headers=team.auth("reader_a")).status_code == 403
    assert remote.get("/metrics", headers=team.auth("admin_all")).status_code == 200
    proxied = http.get("/metrics", headers={"X-Forwarded-For": "203.0.113.9"})  # a proxy on this machine
    assert proxied.status_code == 401


def test_every_request_has_an_id_and_one_json_log_line(
    http: TestClient, team: Team, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kaynak.requests")
    r = http.get("/v1/search", params={"q": "gizli personel", "collections": team.b}, headers=team.auth("reader_a"))
    assert r.status_code == 404 and re.fullmatch(r"[0-9a-f]{32}", r.headers["x-request-id"])
    assert r.json()["request_id"] == r.headers["x-request-id"]
    own = http.get("/v1/health", headers={"X-Request-ID": "my-trace.42"})
    # the server's own id always (the audit trail's ids are never a client's choice); the client's kept beside it
    assert re.fullmatch(r"[0-9a-f]{32}", own.headers["x-request-id"])
    assert own.headers["x-client-request-id"] == "my-trace.42"
    for odd_id in ('bad id" {}', "x" * 65):  # log injection, or too long: replaced by a fresh id
        odd = http.get("/v1/health", headers={"X-Request-ID": odd_id})
        assert re.fullmatch(r"[0-9a-f]{32}", odd.headers["x-request-id"])
    lines = [json.loads(rec.getMessage()) for rec in caplog.records if rec.name == "kaynak.requests"]
    line = next(x for x in lines if x["request_id"] == r.headers["x-request-id"])
    assert line["status"] == 404 and line["route"] == "/v1/search" and line["token"] == f"reader_a-{team.tag}"
    assert line["path"] == "/v1/search" and "gizli" not in json.dumps(lines)  # never the query text
    assert team.tokens["reader_a"] not in json.dumps(lines)


def test_search_counts_without_query_text(env: dict[str, str], data_dir: Path, database_url: str, team: Team) -> None:
    c = hash_context(data_dir, database_url, audit_searches=True)
    try:
        with TestClient(create_app(c)) as client:
            for _ in range(3):
                r = client.get("/v1/search", params={"q": "kat", "collections": team.a}, headers=team.auth("mixed"))
                assert r.status_code == 200
        counts = [x for x in c.store.search_counts() if x["token"] == f"mixed-{team.tag}"]
        assert counts and counts[-1]["searches"] >= 3 and set(counts[-1]) == {"token", "day", "searches"}
        shown = CliRunner().invoke(cli_app, ["audit", "--searches", "--json"])
        assert shown.exit_code == 0 and f"mixed-{team.tag}" in shown.stdout and "kat" not in shown.stdout
    finally:
        c.close()


def test_scoped_view_is_the_store_itself_for_everything(store: Store) -> None:
    assert scoped_view(store, None) is store
    view = scoped_view(store, frozenset())
    assert view.list_collections() == [] and view.pool is store.pool
