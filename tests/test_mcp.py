"""The MCP server: the SDK's own client over stdio (``kaynak mcp`` subprocess) and Streamable HTTP (``/mcp`` on
uvicorn), a raw stdio session proving stdout carries only protocol, and proof that no tool can write."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from kaynak.config import load_settings
from kaynak.context import Context
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.mcp_server import build_mcp
from kaynak.store import Store
from kaynak.types import Chunk, Page
from kaynak.vocabulary import MAX_QUERY_CHARS
from testkit.servers import running

DOCS = {
    "hukuk/kat-mulkiyeti.md": (
        "Kat Mülkiyeti Kanunu",
        [
            "Kat malikleri kurulu her yıl ocak ayında toplanır. Toplantıya yöneticinin çağrısı gerekir.",
            "Yönetici, kat malikleri kurulunca seçilir ve bir yıl görev yapar.",
        ],
    ),
    "guide/install.txt": (
        "Install guide",
        [
            "To install kaynak, run pip install kaynak. The embedded database starts on first use.",
            "Uninstalling removes the program but keeps the data folder.",
        ],
    ),
}
TOOLS = {"search", "list_collections", "list_documents", "read_context", "read_page"}


def populate(store: Store, name: str) -> None:
    """A small collection written straight through the store (no loaders needed), embedded with the hash model."""
    col = store.create_collection(name, "turkish", "hash", 64)
    emb = HashEmbedder()
    for source, (title, texts) in DOCS.items():
        pages = [Page(i + 1, t) for i, t in enumerate(texts)]
        chunks = [Chunk(i, p.number, None, 0, len(p.text), p.text) for i, p in enumerate(pages)]
        vecs = emb.embed_passages([c.text for c in chunks])
        sha = hashlib.sha256(source.encode()).hexdigest()
        store.replace_document(col, source, sha, title, {"lang": "tr"}, pages, chunks, vecs)


@pytest.fixture(scope="module")
def collection(store: Store) -> Iterator[str]:
    name = "mcp_" + os.urandom(4).hex()
    populate(store, name)
    yield name
    store.delete_collection(name)


@pytest.fixture(scope="module")
def kaynak_env(data_dir: Path, database_url: str) -> dict[str, str]:
    return {"KAYNAK_DATA_DIR": str(data_dir), "KAYNAK_DATABASE_URL": database_url, "KAYNAK_EMBEDDER": "hash"}


async def exercise(client: Client, collection: str) -> dict[str, Any]:
    """List tools, search, and read around the best hit; return what came back."""
    tools = await client.list_tools()
    names = {t.name for t in tools.tools}
    result = await client.call_tool(
        "search", {"query": "kat malikleri kurulu ne zaman toplanır", "collections": [collection], "k": 3}
    )
    assert not result.is_error, result.content
    hits = result.structured_content["hits"]
    assert result.structured_content["no_good_match"] is False
    assert hits[0]["match"]["label"] in ("strong", "partial")
    grouped = await client.call_tool(
        "search", {"query": "kat malikleri", "collections": [collection], "k": 5, "group_by": "document"}
    )
    sources = [h["source"] for h in grouped.structured_content["hits"]]
    assert sources and len(sources) == len(set(sources))
    context = await client.call_tool("read_context", {"chunk_id": hits[0]["chunk_id"], "before": 1, "after": 1})
    cols = await client.call_tool("list_collections", {})
    return {
        "names": names,
        "hits": hits,
        "context": context.structured_content["chunks"],
        "collections": cols.structured_content["collections"],
        "text": result.content[0].text,
    }


def check(found: dict[str, Any], collection: str) -> None:
    assert found["names"] == TOOLS
    top = found["hits"][0]
    assert top["source"] == "hukuk/kat-mulkiyeti.md" and top["page"] == 1
    assert top["quote"]["text"] and top["quote"]["text"] in DOCS["hukuk/kat-mulkiyeti.md"][1][0]
    assert "text" not in top and "score" not in top  # lean by default: detail "full" adds them
    assert "ocak" in found["text"]  # the text content carries the same hits for clients without structured output
    assert any(c["is_hit"] and c["chunk_id"] == top["chunk_id"] for c in found["context"])
    assert [c["page"] for c in found["context"]] == [1, 2]
    assert collection in {c["name"] for c in found["collections"]}


def test_stdio_with_sdk_client(collection: str, kaynak_env: dict[str, str], tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kaynak", "mcp"], env=kaynak_env, cwd=str(tmp_path)
    )

    async def main() -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=60) as client:
            return await exercise(client, collection)

    check(anyio.run(main), collection)


def test_streamable_http_with_sdk_client(collection: str, data_dir: Path, database_url: str) -> None:
    from kaynak.server import create_app

    ctx = Context(load_settings(data_dir=data_dir, database_url=database_url, embedder="hash"))

    async def main(url: str) -> dict[str, Any]:
        # mode="legacy": the initialize handshake that today's clients (Claude Code, Cursor) use
        async with Client(f"{url}/mcp", read_timeout_seconds=60, mode="legacy") as client:
            return await exercise(client, collection)

    with running(create_app(ctx)) as url:
        found = anyio.run(main, url)
    ctx.close()
    check(found, collection)


def test_tool_errors_are_messages(collection: str, store: Store, data_dir: Path, database_url: str) -> None:
    ctx = Context(load_settings(data_dir=data_dir, database_url=database_url, embedder="hash"))
    server = build_mcp(ctx.search)

    async def main() -> list[Any]:
        async with Client(server) as client:
            return [
                await client.call_tool("search", {"query": "x", "collections": ["no_such_collection"]}),
                await client.call_tool("read_context", {"chunk_id": "0" * 20}),
                await client.call_tool("read_page", {"collection": collection, "source": "nope.md", "page": 1}),
                await client.call_tool("search", {"query": "x", "k": 0}),
                await client.call_tool("search", {"query": "a\x00b"}),
                await client.call_tool("read_page", {"collection": "\x00", "source": "a", "page": 1}),
                await client.call_tool("search", {"query": "x" * (MAX_QUERY_CHARS + 1)}),
            ]

    results = anyio.run(main)
    ctx.close()
    assert all(r.is_error for r in results)
    assert "no_such_collection" in results[0].content[0].text
    assert "0" * 20 in results[1].content[0].text
    assert "nope.md" in results[2].content[0].text
    assert "NUL" in results[4].content[0].text and "NUL" in results[5].content[0].text
    assert str(MAX_QUERY_CHARS) in results[6].content[0].text  # the same query cap as REST and the CLI


def test_stdio_answers_a_malformed_line_with_a_jsonrpc_error(kaynak_env: dict[str, str], tmp_path: Path) -> None:
    lines = [
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},'
        '"clientInfo":{"name":"t","version":"1"}}}',
        "this is not json",
        '{"no": "jsonrpc"}',
        '{"jsonrpc":"2.0","id":2,"method":"ping"}',
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaynak", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **kaynak_env},
        cwd=tmp_path,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: list[dict[str, Any]] = []
    try:
        for line in lines:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            if not line.startswith('{"no"') and "not json" not in line:
                while True:  # read up to this request's answer
                    answer = json.loads(proc.stdout.readline())
                    answers.append(answer)
                    if answer.get("id") is not None:
                        break
    finally:
        proc.stdin.close()
        proc.wait(30)
    errors = [a["error"]["code"] for a in answers if a.get("id") is None and "error" in a]
    assert errors == [-32700, -32600], answers
    assert answers[-1] == {"jsonrpc": "2.0", "id": 2, "result": {}}


class WriteGuard:
    """A Store stand-in that forwards reads and records any attempt to call a write method."""

    WRITES = ("create_collection", "ensure_collection", "delete_collection", "delete_document", "replace_document")

    def __init__(self, store: Store) -> None:
        self._store = store
        self.writes: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name in self.WRITES or name.startswith(("insert", "update", "upsert")):
            self.writes.append(name)
            raise AssertionError(f"MCP tool called Store.{name}")
        return getattr(self._store, name)


def test_no_tool_can_write(collection: str, store: Store, data_dir: Path, database_url: str) -> None:
    settings = load_settings(data_dir=data_dir, database_url=database_url, embedder="hash")
    ctx = Context(settings)
    guard = WriteGuard(store)
    from kaynak.search import SearchService

    service = SearchService(guard, settings, ctx.embedder, ctx.reranker)  # type: ignore[arg-type]
    server = build_mcp(service)
    assert not [m for m in dir(service) if m.startswith(("ingest", "delete", "create", "add", "replace"))]

    async def main() -> dict[str, Any]:
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            caps = client.server_capabilities
            search = await client.call_tool("search", {"query": "install kaynak", "collections": "*"})
            chunk_id = search.structured_content["hits"][0]["chunk_id"]
            calls = [
                search,
                await client.call_tool("list_collections", {}),
                await client.call_tool("list_documents", {"collection": collection}),
                await client.call_tool("read_context", {"chunk_id": chunk_id}),
                await client.call_tool(
                    "read_page", {"collection": collection, "source": "guide/install.txt", "page": 2, "max_chars": 10}
                ),
            ]
            return {"tools": tools, "caps": caps, "calls": calls}

    out = anyio.run(main)
    ctx.close()
    assert {t.name for t in out["tools"]} == TOOLS
    for tool in out["tools"]:
        assert tool.annotations is not None and tool.annotations.read_only_hint is True, tool.name
        assert tool.annotations.destructive_hint is False
    caps = out["caps"]  # only tools are announced: no resources, prompts or completions exist
    assert caps.tools is not None and caps.resources is None and caps.prompts is None and caps.completions is None
    assert not any(r.is_error for r in out["calls"]), [r.content for r in out["calls"] if r.is_error]
    page = out["calls"][4].structured_content
    assert page["text"] == "Uninstalli" and page["offset"] == 0 and page["next_offset"] == 10
    assert page["total_chars"] == len(DOCS["guide/install.txt"][1][1])
    assert guard.writes == []
    before = store.get_collection(collection)
    assert (before.document_count, before.chunk_count) == (2, 4)


def _rpc(id_: int | None, method: str, params: dict[str, Any] | None = None) -> str:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        msg["id"] = id_
    if params is not None:
        msg["params"] = params
    return json.dumps(msg) + "\n"


def test_stdout_carries_only_protocol_and_cold_start(data_dir: Path, tmp_path: Path) -> None:
    """A raw session: the server finds the embedded PostgreSQL server through its data folder (no URL), runs
    tools that hit the database and fail, and still every byte on stdout is a JSON-RPC message. Measures cold
    start (spawn to initialize response)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "KAYNAK_DATA_DIR": str(data_dir),
        "KAYNAK_EMBEDDER": "hash",
        "KAYNAK_LOG_FILE": str(tmp_path / "mcp.log"),
        "KAYNAK_COLLECTION": "no_such_collection_here",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaynak", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
        text=True,
        encoding="utf-8",
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        start = time.perf_counter()
        proc.stdin.write(
            _rpc(
                1,
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw-test", "version": "1"},
                },
            )
        )
        proc.stdin.flush()
        first = proc.stdout.readline()
        cold_start = time.perf_counter() - start
        proc.stdin.write(_rpc(None, "notifications/initialized"))
        proc.stdin.write(_rpc(2, "tools/list"))
        proc.stdin.write(_rpc(3, "tools/call", {"name": "list_collections", "arguments": {}}))
        proc.stdin.write(
            _rpc(
                4,
                "tools/call",
                {"name": "search", "arguments": {"query": "merhaba", "collections": "no_such_collection_here"}},
            )
        )
        proc.stdin.flush()
        lines = [first]
        while len(lines) < 4:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
        rest, stderr = proc.communicate(timeout=60)  # closes stdin: the server exits
        lines += rest.splitlines(keepends=True)
    finally:
        if proc.poll() is None:
            proc.kill()
    messages = [json.loads(line) for line in lines if line.strip()]  # any non-JSON line fails here
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    by_id = {m.get("id"): m for m in messages}
    assert by_id[1]["result"]["serverInfo"]["name"] == "kaynak"
    assert {t["name"] for t in by_id[2]["result"]["tools"]} == TOOLS
    assert isinstance(by_id[3]["result"]["structuredContent"]["collections"], list)
    assert by_id[4]["result"]["isError"] is True  # unknown collection: a tool error with a message, not a crash
    assert "no_such_collection_here" in by_id[4]["result"]["content"][0]["text"]
    assert proc.returncode == 0, stderr
    assert "kaynak MCP server on stdio" in stderr
    assert (tmp_path / "mcp.log").read_text().count("kaynak MCP server on stdio") == 1
    print(f"\nkaynak mcp cold start to initialize response: {cold_start:.2f} s")
    assert cold_start < 20
