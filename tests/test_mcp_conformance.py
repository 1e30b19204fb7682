"""MCP conformance (issue 52): the official SDK client drives ``kaynak mcp`` (stdio) and ``/mcp`` of the served app
(Streamable HTTP) through the same cases, and what an agent is handed is checked against what the tools declare.

Cases, on both transports: every tool's ``structuredContent`` validates against its ``outputSchema`` (jsonschema,
Draft 2020-12) and its one text block is that content as one line of compact JSON; ``read_page`` of a 2 MB text
page comes back in bounded pieces that reassemble to the page; a lean search hit stays under ``MAX_HIT_CHARS``
characters and ``detail: "full"`` adds the chunk and scores; ``k`` is bounded in the schema; ``list_documents``
pages with ``total`` / ``next_offset``; the default collection is marked and searched, ``[]`` / ``""`` are errors
naming the choices, a server whose default does not exist searches every collection; unknown arguments and bad
values are refused with sentences naming the argument (no pydantic dump); only the tools capability is announced;
descriptions carry no docstring indentation; timestamps are ISO 8601 UTC. Over HTTP: a token whose scope does not
hold the default searches the scope's collections. And the MCP output models agree with the REST ones field for
field (``kaynak.api.models``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters

from kaynak.access import new_secret, secret_hash
from kaynak.api import models
from kaynak.config import load_settings
from kaynak.context import Context
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.mcp_server import PAGE_CHARS_MAX, SEARCH_K_MAX
from kaynak.server import create_app
from kaynak.store import Store
from kaynak.types import Chunk, Page
from testkit.servers import running

MAX_HIT_CHARS = 1200  # a lean hit's compact JSON: a quote of at most ~320 characters and its citation
BIG_SOURCE = "big/log.txt"
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
QUESTION = "kat malikleri kurulu ne zaman toplanır"


def big_page() -> str:
    """About 2 MB of text with Turkish letters (offsets are characters, not bytes)."""
    line = "Satır {:06d}: kat malikleri kurulu ocak ayında toplanır; yönetici çağrısı gerekir. ğüşıöç\n"
    return "".join(line.format(i) for i in range(2_000_000 // len(line.format(0)) + 1))


def _add(store: Store, col: Any, source: str, title: str, texts: list[str]) -> None:
    emb = HashEmbedder()
    pages = [Page(i + 1, t) for i, t in enumerate(texts)]
    chunks = [Chunk(i, p.number, "Giriş", 0, min(len(p.text), 400), p.text[:400]) for i, p in enumerate(pages)]
    vecs = emb.embed_passages([c.text for c in chunks])
    sha = hashlib.sha256(source.encode()).hexdigest()
    store.replace_document(col, source, sha, title, {"lang": "tr"}, pages, chunks, vecs)


class Names:
    def __init__(self) -> None:
        tag = os.urandom(3).hex()
        self.a, self.b, self.tag = f"conf_a_{tag}", f"conf_b_{tag}", tag


@pytest.fixture(scope="module")
def names(store: Store) -> Iterator[Names]:
    n = Names()
    a = store.create_collection(n.a, "turkish", "hash", 64)
    b = store.create_collection(n.b, "turkish", "hash", 64)
    _add(store, a, BIG_SOURCE, "Büyük günlük", [big_page()])
    for i in range(5):
        _add(store, a, f"notes/n{i}.md", f"Not {i}", [f"Kat malikleri kurulu toplantısı {i}. Aidat ödenir."])
    _add(store, b, "b/only.md", "Yalnız B", ["Kat malikleri kurulu her yıl ocak ayında toplanır (B)."])
    yield n
    with store.pool.connection() as conn:
        conn.execute("DELETE FROM access_tokens WHERE name LIKE %s", (f"conf-%-{n.tag}",))
    for name in (n.a, n.b):
        store.delete_collection(name)


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class Checker:
    """Calls tools and checks every answer against the tool's declared outputSchema."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.schemas: dict[str, dict[str, Any]] = {}

    async def start(self) -> None:
        tools = (await self.client.list_tools()).tools
        for tool in tools:
            assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
            assert tool.input_schema.get("additionalProperties") is False, tool.name
            assert tool.description and "\n    " not in tool.description, tool.name  # dedented
            self.schemas[tool.name] = tool.output_schema
        assert set(self.schemas) == {"search", "list_collections", "list_documents", "read_context", "read_page"}
        caps = self.client.server_capabilities
        assert caps.tools is not None
        assert caps.resources is None and caps.prompts is None and caps.completions is None

    async def ok(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(tool, args)
        assert not result.is_error, (tool, args, result.content)
        content = result.structured_content
        assert content is not None
        Draft202012Validator(self.schemas[tool]).validate(content)
        assert len(result.content) == 1 and result.content[0].type == "text"
        assert result.content[0].text == compact(content)  # one compact line, the same data
        return content

    async def error(self, tool: str, args: dict[str, Any]) -> str:
        result = await self.client.call_tool(tool, args)
        assert result.is_error, (tool, args)
        text = result.content[0].text
        assert "pydantic" not in text and "https://" not in text and "Arguments" not in text, text
        return text


async def conformance(client: Client, n: Names, *, whole_page: bool) -> dict[str, Any]:
    c = Checker(client)
    await c.start()
    assert c.schemas["search"]["properties"]["hits"]["type"] == "array"
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert tools["search"].input_schema["properties"]["k"]["maximum"] == SEARCH_K_MAX
    assert tools["read_page"].input_schema["properties"]["max_chars"]["maximum"] == PAGE_CHARS_MAX

    # list_collections marks the default; search without collections searches it
    listed = await c.ok("list_collections", {})
    mine = {col["name"]: col for col in listed["collections"] if col["name"] in (n.a, n.b)}
    assert listed["default"] == n.a and mine[n.a]["default"] is True and mine[n.b]["default"] is False
    assert mine[n.a]["document_count"] == 6
    default_search = await c.ok("search", {"query": QUESTION})
    assert default_search["collections"] == [n.a] and default_search["hits"]
    assert {h["collection"] for h in default_search["hits"]} == {n.a}

    # lean hits by default, the chunk and scores with detail "full"
    for k in (5, SEARCH_K_MAX):
        lean = await c.ok("search", {"query": QUESTION, "collections": "*", "k": k})
        assert 0 < len(lean["hits"]) <= k
        for hit in lean["hits"]:
            assert len(compact(hit)) <= MAX_HIT_CHARS, hit
            assert "text" not in hit and "score" not in hit and "scores" not in hit
            assert {"text", "char_start", "char_end"} <= set(hit["quote"])
    full = await c.ok("search", {"query": QUESTION, "collections": [n.b], "detail": "full"})
    top = full["hits"][0]
    assert top["text"] and isinstance(top["score"], float) and isinstance(top["scores"], dict)

    # bad arguments: sentences naming the argument and what is allowed
    assert "unknown argument 'limit'" in await c.error("search", {"query": QUESTION, "limit": 3})
    too_many = await c.error("search", {"query": QUESTION, "k": SEARCH_K_MAX + 1})
    assert "'k'" in too_many and str(SEARCH_K_MAX) in too_many
    assert "'mode'" in await c.error("search", {"query": QUESTION, "mode": "fast"})
    assert "missing required argument 'page'" in await c.error("read_page", {"collection": n.a, "source": "x"})
    for empty in ([], "", " , "):
        text = await c.error("search", {"query": QUESTION, "collections": empty})
        assert "collections" in text and repr(n.a) in text and repr(n.b) in text and '"*"' in text, text

    # list_documents pages with total and next_offset
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await c.ok("list_documents", {"collection": n.a, "limit": 4, "offset": offset})
        assert page["total"] == 6
        seen += [d["source"] for d in page["documents"]]
        for d in page["documents"]:
            assert ISO_UTC.match(d["ingested_at"]), d["ingested_at"]
        offset = page["next_offset"]
    assert len(seen) == 6 and seen == sorted(seen) and BIG_SOURCE in seen
    notes = await c.ok("list_documents", {"collection": n.a, "prefix": "notes/", "limit": 2})
    assert notes["total"] == 5 and notes["next_offset"] == 2

    # read_context
    around = await c.ok("read_context", {"chunk_id": top["chunk_id"], "before": 0, "after": 0})
    assert [ch["is_hit"] for ch in around["chunks"]] == [True]

    # read_page: bounded pieces of the 2 MB page that reassemble to it
    text = big_page()
    first = await c.ok("read_page", {"collection": n.a, "source": BIG_SOURCE, "page": 1})
    assert first["total_chars"] == len(text) and first["offset"] == 0
    assert first["text"] == text[: len(first["text"])] and len(first["text"]) <= 4000
    assert first["next_offset"] == len(first["text"])
    last = await c.ok("read_page", {"collection": n.a, "source": BIG_SOURCE, "page": 1, "offset": len(text) - 5})
    assert last["text"] == text[-5:] and last["next_offset"] is None
    beyond = await c.ok("read_page", {"collection": n.a, "source": BIG_SOURCE, "page": 1, "offset": len(text) + 9})
    assert beyond["text"] == "" and beyond["next_offset"] is None
    if whole_page:
        pieces: list[str] = []
        at: int | None = 0
        while at is not None:
            piece = await c.ok(
                "read_page",
                {"collection": n.a, "source": BIG_SOURCE, "page": 1, "offset": at, "max_chars": PAGE_CHARS_MAX},
            )
            assert len(piece["text"]) <= PAGE_CHARS_MAX and piece["offset"] == at
            pieces.append(piece["text"])
            at = piece["next_offset"]
        assert "".join(pieces) == text
    return {"lean": lean}


def test_stdio(names: Names, data_dir: Path, database_url: str, tmp_path: Path) -> None:
    env = {
        "KAYNAK_DATA_DIR": str(data_dir),
        "KAYNAK_DATABASE_URL": database_url,
        "KAYNAK_EMBEDDER": "hash",
        "KAYNAK_COLLECTION": names.a,
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "kaynak", "mcp"], env=env, cwd=str(tmp_path))

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await conformance(client, names, whole_page=False)

    anyio.run(main)


def test_streamable_http(names: Names, data_dir: Path, database_url: str) -> None:
    ctx = Context(load_settings(data_dir=data_dir, database_url=database_url, embedder="hash", collection=names.a))

    async def main(url: str) -> None:
        async with Client(f"{url}/mcp", read_timeout_seconds=120, mode="legacy") as client:
            await conformance(client, names, whole_page=True)

    try:
        with running(create_app(ctx)) as url:
            anyio.run(main, url)
    finally:
        ctx.close()


def test_without_a_default_collection_every_collection_is_searched(
    names: Names, data_dir: Path, database_url: str
) -> None:
    from kaynak.mcp_server import build_mcp

    ctx = Context(load_settings(data_dir=data_dir, database_url=database_url, embedder="hash", collection="conf_none"))

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(build_mcp(ctx.search)) as client:
            c = Checker(client)
            await c.start()
            return await c.ok("list_collections", {}), await c.ok("search", {"query": QUESTION, "k": 3})

    try:
        listed, found = anyio.run(main)
    finally:
        ctx.close()
    assert listed["default"] is None and not any(col["default"] for col in listed["collections"])
    assert {names.a, names.b} <= set(found["collections"]) and found["hits"]


def test_a_scoped_token_without_the_default_searches_its_scope(
    names: Names, store: Store, data_dir: Path, database_url: str
) -> None:
    import httpx2

    secret = new_secret()
    store.create_token(f"conf-b-{names.tag}", secret_hash(secret), {names.b}, set(), set(), None)
    ctx = Context(load_settings(data_dir=data_dir, database_url=database_url, embedder="hash", collection=names.a))

    async def main(url: str) -> tuple[dict[str, Any], dict[str, Any], str]:
        headers = {"Authorization": f"Bearer {secret}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http_client:
            from mcp.client.streamable_http import streamable_http_client

            transport = streamable_http_client(f"{url}/mcp", http_client=http_client)
            async with Client(transport, read_timeout_seconds=60, mode="legacy") as client:
                c = Checker(client)
                await c.start()
                listed = await c.ok("list_collections", {})
                found = await c.ok("search", {"query": QUESTION})
                empty = await c.error("search", {"query": QUESTION, "collections": []})
                return listed, found, empty

    try:
        with running(create_app(ctx)) as url:
            listed, found, empty = anyio.run(main, url)
            import httpx

            r = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert r.status_code == 401 and "Bearer" in r.headers["www-authenticate"]
            assert "Authorization: Bearer" in r.json()["detail"]  # says a bearer token is expected
            for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server"):
                meta = httpx.get(f"{url}{path}")  # no OAuth metadata (ADR 0036): the answer says what to send
                assert meta.status_code == 404 and "Authorization: Bearer" in meta.json()["detail"], path
            register = httpx.post(f"{url}/register", json={"redirect_uris": ["http://localhost:1/cb"]})
            assert register.status_code == 404 and "does not use OAuth" in register.json()["detail"]
    finally:
        ctx.close()
        with store.pool.connection() as conn:
            conn.execute("DELETE FROM access_tokens WHERE name = %s", (f"conf-b-{names.tag}",))
    assert [col["name"] for col in listed["collections"]] == [names.b] and listed["default"] is None
    assert found["collections"] == [names.b] and {h["collection"] for h in found["hits"]} == {names.b}
    assert repr(names.b) in empty and repr(names.a) not in empty  # the choices name only what the token may read


def _fields(model: type[Any]) -> dict[str, Any]:
    return {name: f.annotation for name, f in model.model_fields.items()}


def test_mcp_outputs_are_the_rest_models() -> None:
    """Each MCP output model's fields are REST model fields of the same name and type (Optional where the MCP tool
    leaves a field out), or a documented addition: the two faces cannot drift apart."""
    rest_hit = _fields(models.Hit)
    for name, annotation in _fields(models.AgentHit).items():
        assert name in rest_hit, name
        assert annotation == rest_hit[name] or annotation == (rest_hit[name] | None), name
    assert _fields(models.AgentSearch).keys() - _fields(models.SearchResponse).keys() == {"collections"}
    doc = _fields(models.Document)
    assert all(doc[k] == v for k, v in _fields(models.AgentDocument).items())
    assert _fields(models.AgentDocumentList).keys() == _fields(models.DocumentList).keys()
    chunk = {("chunk_id" if k == "id" else k): v for k, v in _fields(models.Chunk).items()}
    assert all(chunk[k] == v for k, v in _fields(models.AgentChunk).items() if k != "is_hit")
    col = _fields(models.Collection)
    added = {"default", "sync"}
    assert all(col[k] == v for k, v in _fields(models.AgentCollection).items() if k not in added)
    status = _fields(models.CollectionStatus)
    assert all(status[k] == v for k, v in _fields(models.SyncSummary).items())
