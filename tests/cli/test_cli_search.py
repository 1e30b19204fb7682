"""``kaynak search``: output with place and quote, highlighting on a terminal, --json, exit codes."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator

import pytest
from rich.console import Console
from typer.testing import CliRunner

from kaynak.cli import app, search_cmd
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.store import Store
from kaynak.types import Chunk, Collection, Page

runner = CliRunner()

PAGES = [
    "Kat malikleri kurulu yılda en az bir kez toplanır. Toplantıda yönetici seçilir.\n\nOrtak giderler paylaşılır.",
    "Iğdır ilinde kayısı üretimi yaygındır.",
]


@pytest.fixture(scope="module")
def collection(store: Store) -> Iterator[Collection]:
    emb = HashEmbedder()
    col = store.create_collection("cli_s_" + uuid.uuid4().hex[:8], "turkish", "hash", emb.dim)
    for source, meta in (("hukuk/kanun.txt", {"kind": "law"}), ("notlar/ozet.txt", {"kind": "note"})):
        pages = [Page(i + 1, t) for i, t in enumerate(PAGES)]
        chunks = [Chunk(0, 1, "Yönetim", 0, 80, PAGES[0][:80]), Chunk(1, 2, None, 0, len(PAGES[1]), PAGES[1])]
        vecs = emb.embed_passages([c.text for c in chunks])
        store.replace_document(col, source, uuid.uuid4().hex, source, meta, pages, chunks, vecs)
    yield col
    store.delete_collection(col.name)


def test_search_prints_place_and_quote(env: dict[str, str], collection: Collection) -> None:
    result = runner.invoke(app, ["search", "KAT MALİKLERİ KURULU", "-c", collection.name, "-k", "2"])
    assert result.exit_code == 0, result.output
    assert "hukuk/kanun.txt" in result.output or "notlar/ozet.txt" in result.output
    assert "p. 1" in result.output and "§ Yönetim" in result.output
    assert "Kat malikleri kurulu yılda en az bir kez toplanır." in result.output


def test_search_json(env: dict[str, str], collection: Collection) -> None:
    result = runner.invoke(
        app, ["search", "IĞDIR", "-c", collection.name, "--mode", "keyword", "-k", "5", "--json", "--meta", "kind=law"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["mode"] == "keyword" and data["query"] == "IĞDIR" and data["no_good_match"] is False
    assert [h["source"] for h in data["hits"]] == ["hukuk/kanun.txt"]
    hit = data["hits"][0]
    assert hit["page"] == 2 and hit["quote"]["text"].startswith("Iğdır")
    assert hit["scores"]["keyword_rank"] == 1 and hit["scores"]["vector"] is None
    assert hit["match"]["label"] in ("strong", "partial")
    grouped = runner.invoke(app, ["search", "kat", "-c", collection.name, "--group-by", "document", "--json"])
    assert grouped.exit_code == 0, grouped.output
    sources = [h["source"] for h in json.loads(grouped.stdout)["hits"]]
    assert len(sources) == len(set(sources))


def test_matched_words_highlighted_on_a_terminal(
    env: dict[str, str], collection: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    buf = io.StringIO()
    monkeypatch.setattr(search_cmd, "console", Console(file=buf, force_terminal=True, width=120))
    result = runner.invoke(app, ["search", "kat kurulu", "-c", collection.name, "-k", "1", "--scores"])
    assert result.exit_code == 0, result.output
    out = buf.getvalue()
    assert "\x1b[1;33mKat\x1b[0m" in out and "\x1b[1;33mkurulu\x1b[0m" in out
    # the two copies of the text tie in both legs, so either may come first (keyword rank 1 or 2)
    assert "fused=" in out and ("keyword_rank=1" in out or "keyword_rank=2" in out)


def test_no_matches_is_not_an_error(env: dict[str, str], collection: Collection) -> None:
    result = runner.invoke(app, ["search", "zebra", "-c", collection.name, "--mode", "keyword"])
    assert result.exit_code == 0 and "no matches" in result.output


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["search", "   "], 2, "query is empty"),
        (["search", "kat", "-k", "0"], 2, "k must be"),
        (["search", "kat", "--mode", "fuzzy"], 2, "unknown mode"),
        (["search", "kat", "--meta", "novalue"], 2, "KEY=VALUE"),
        (["search", "kat", "-c", "no-such-collection"], 1, "existing collections"),
    ],
)
def test_errors(env: dict[str, str], collection: Collection, args: list[str], code: int, message: str) -> None:
    if "-c" not in args:
        args = [*args, "-c", collection.name]
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    assert message in result.output and "Traceback" not in result.output
