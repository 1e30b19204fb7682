"""Test helper for the served app: a context with hash embeddings, the whole app (``kaynak.server``: REST, MCP and
the page), and a collection of the samples.

``make_app`` is ``kaynak.server.create_app``. ``ingest_samples`` ingests
``samples/`` (hash embedder) plus a hostile text file whose name and text carry HTML and script.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from kaynak.config import load_settings
from kaynak.context import Context
from kaynak.server import create_app

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
HOSTILE_NAME = "kötü <img src=x onerror=alert(1)>.txt"
HOSTILE_TEXT = (
    "Zararlı <script>document.title='pwned'</script> başlık\n\n"
    "Bu belge <script>window.__pwned = true</script> etiketi ve <b>kalın</b> yazı içerir; "
    "zararlı betik yalnızca metin olarak görünmeli.\n"
)


def hash_context(data_dir: Path, database_url: str, **overrides: Any) -> Context:
    """A context on the test database with hash embeddings; ``overrides`` are settings (tokens, limits)."""
    return Context(load_settings(data_dir=data_dir, database_url=database_url, embedder="hash", **overrides))


def make_app(ctx: Context) -> Any:
    return create_app(ctx)


def ingest_samples(ctx: Context, name: str, workdir: Path) -> Path:
    """Copy the samples and the hostile file into ``workdir/docs`` and ingest them into ``name``."""
    docs = workdir / "docs"
    shutil.copytree(SAMPLES, docs, ignore=shutil.ignore_patterns("SOURCES.md"))
    (docs / HOSTILE_NAME).write_text(HOSTILE_TEXT, encoding="utf-8")
    report = ctx.ingest.ingest([docs], name, language="turkish")
    assert not report.failed, report.failed
    return docs
