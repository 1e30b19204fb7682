"""IngestService: idempotency by sha256, atomic replace, prune, contextual headers, bad input, language choice."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest

from kaynak.config import Settings, load_settings
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.errors import CollectionMismatch, UsageError
from kaynak.ingest import IngestEvent, IngestService, PathFilter, discover, embedding_text
from kaynak.langdetect import detect_collection_language, detect_language
from kaynak.store import Store
from kaynak.store.store import chunk_id
from kaynak.types import LoadedDocument, Page, Section

TR_TEXT = (
    "İstanbul, Türkiye'nin en kalabalık şehridir ve tarihi yarımadası ile ünlüdür. Boğaz, şehri Avrupa ve "
    "Asya yakası olarak ikiye ayırır. Şehir yüzyıllar boyunca birçok imparatorluğa başkentlik yapmıştır."
)
EN_TEXT = (
    "The river flows through the old town and into the lake. Bridges were built in the nineteenth century, "
    "and most of them are still used by people who walk to the market on the other side of the water."
)


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting what it is asked to embed."""

    def __init__(self, name: str = "hash", dim: int = 64) -> None:
        super().__init__(dim)
        self.name = name
        self.calls = 0
        self.texts: list[str] = []

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        return super().embed_passages(texts)


class Factory:
    def __init__(self) -> None:
        self.embedders: dict[str, CountingEmbedder] = {}

    def __call__(self, name: str) -> CountingEmbedder:
        if name not in self.embedders:
            self.embedders[name] = CountingEmbedder(name, 64 if name == "hash" else 32)
        return self.embedders[name]

    @property
    def hash(self) -> CountingEmbedder:
        return self("hash")


@pytest.fixture
def settings(env: dict[str, str]) -> Settings:
    return load_settings(chunk_size=200)


@pytest.fixture
def factory() -> Factory:
    return Factory()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_folder(root: Path, n: int = 3, text: str = EN_TEXT) -> list[str]:
    sources = []
    for i in range(n):
        rel = f"sub/doc{i}.md" if i % 2 else f"doc{i}.md"
        write(root / rel, f"# Title {i}\n\n{text}\n\nParagraph {i}: {text}\n")
        sources.append(rel)
    return sorted(sources)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_store_matches(store: Store, collection: str, root: Path, sources: list[str]) -> None:
    """Document by document: the stored sha256 is the file's, every chunk is there and quotes its page."""
    col = store.get_collection(collection)
    assert sorted(store.document_hashes(col)) == sorted(sources)
    total = 0
    for source in sources:
        doc = store.get_document(col, source)
        assert doc.sha256 == sha(root / source)
        ids = [chunk_id(col.name, source, doc.sha256, i) for i in range(doc.chunk_count)]
        chunks = store.get_chunks(ids)
        assert len(chunks) == doc.chunk_count > 0
        pages: dict[int, str] = {}
        for c in chunks.values():
            if c.page not in pages:
                pages[c.page] = store.get_page(col, source, c.page)
            assert pages[c.page][c.char_start : c.char_end] == c.text
        total += doc.chunk_count
    assert store.chunk_count(col) == total


# ------------------------------------------------------------------------------------------------ basics
def test_ingest_folder_then_reingest_embeds_nothing(
    service: IngestService, store: Store, factory: Factory, tmp_path: Path, unique_name: str
) -> None:
    sources = make_folder(tmp_path, 3)
    report = service.ingest([tmp_path], unique_name, language="english")
    assert report.ok and sorted(report.added) == sources
    assert report.updated == report.unchanged == report.removed == []
    assert report.chunks == report.embedded == len(factory.hash.texts) > 0
    assert report.language == "english" and report.embedder == "hash"
    check_store_matches(store, unique_name, tmp_path, sources)
    before = {d.source: (d.id, d.ingested_at) for d in store.list_documents(store.get_collection(unique_name))}

    factory.hash.calls = 0
    again = service.ingest([tmp_path], unique_name)
    assert factory.hash.calls == 0 and again.embedded == 0 and again.chunks == 0
    assert sorted(again.unchanged) == sources and again.added == again.updated == []
    after = {d.source: (d.id, d.ingested_at) for d in store.list_documents(store.get_collection(unique_name))}
    assert after == before
    json.dumps(again.to_dict())
    assert again.to_dict()["ok"] is True


def test_editing_one_file_replaces_just_that_document(
    service: IngestService, store: Store, factory: Factory, tmp_path: Path, unique_name: str
) -> None:
    sources = make_folder(tmp_path, 3)
    service.ingest([tmp_path], unique_name, language="english")
    col = store.get_collection(unique_name)
    ids = {s: store.get_document(col, s).id for s in sources}
    write(tmp_path / sources[1], "# Changed\n\nA new text about something else entirely, and shorter.\n")
    factory.hash.texts.clear()
    report = service.ingest([tmp_path], unique_name)
    assert report.updated == [sources[1]] and sorted(report.unchanged) == [sources[0], sources[2]]
    assert report.embedded == len(factory.hash.texts) == store.get_document(col, sources[1]).chunk_count
    assert all(t.startswith("Changed") for t in factory.hash.texts)
    for s in (sources[0], sources[2]):
        assert store.get_document(col, s).id == ids[s]
    check_store_matches(store, unique_name, tmp_path, sources)


def test_prune_removes_deleted_files_and_renamed_file_is_new_source(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    sources = make_folder(tmp_path, 3)
    service.ingest([tmp_path], unique_name, language="english")
    (tmp_path / sources[0]).unlink()
    kept = service.ingest([tmp_path], unique_name)
    assert kept.removed == [] and sources[0] in store.document_hashes(store.get_collection(unique_name))

    (tmp_path / sources[2]).rename(tmp_path / "renamed.md")
    report = service.ingest([tmp_path], unique_name, prune=True)
    assert report.added == ["renamed.md"]
    assert sorted(report.removed) == sorted([sources[0], sources[2]])
    check_store_matches(store, unique_name, tmp_path, sorted([sources[1], "renamed.md"]))


def test_prune_respects_the_selection_and_keeps_failed_files(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    write(tmp_path / "a.md", "# A\n\n" + EN_TEXT)
    write(tmp_path / "b.txt", EN_TEXT)
    service.ingest([tmp_path], unique_name, language="english")
    # b.txt is outside the selection: pruning a *.md-only run must not touch it.
    (tmp_path / "a.md").write_text("", encoding="utf-8")  # now rejected by the loader
    report = service.ingest([tmp_path], unique_name, include=["*.md"], prune=True)
    assert [f["source"] for f in report.failed] == ["a.md"] and report.removed == []
    col = store.get_collection(unique_name)
    assert sorted(store.document_hashes(col)) == ["a.md", "b.txt"]  # the old a.md stays until it loads again


def test_contextual_header_is_embedded_and_stored_text_is_verbatim(
    service: IngestService, store: Store, factory: Factory, unique_name: str
) -> None:
    text = "Intro line before any heading.\n\n" + EN_TEXT
    start = text.index(EN_TEXT)
    doc = LoadedDocument("Guide", [Page(1, text, [Section(start, len(text), "Install › From source")])])
    report = service.ingest_documents(unique_name, [("guide.md", "s1", doc)], language="english")
    assert report.ok and report.added == ["guide.md"]
    embedded = factory.hash.texts
    assert (
        embedded[0]
        == embedding_text("Guide", None, "Intro line before any heading.")
        == ("Guide\nIntro line before any heading.")
    )
    assert any(t.startswith("Guide — Install › From source\n") for t in embedded)
    col = store.get_collection(unique_name)
    chunks = store.get_chunks([chunk_id(col.name, "guide.md", "s1", i) for i in range(len(embedded))])
    for c in chunks.values():
        assert text[c.char_start : c.char_end] == c.text
        assert not c.text.startswith("Guide")


def test_ingest_documents_skips_unchanged_sha_and_replaces_changed(
    service: IngestService, store: Store, factory: Factory, unique_name: str
) -> None:
    docs = [(f"d{i}", f"sha{i}", LoadedDocument(f"T{i}", [Page(1, f"Short text number {i}.")])) for i in range(40)]
    first = service.ingest_documents(unique_name, docs, language="english")
    assert len(first.added) == 40 and first.embedded == 40
    factory.hash.calls = 0
    changed = [*docs[:39], ("d39", "sha39b", LoadedDocument("T39", [Page(1, "Completely different text.")]))]
    second = service.ingest_documents(unique_name, iter(changed))
    assert len(second.unchanged) == 39 and second.updated == ["d39"] and second.embedded == 1
    assert factory.hash.calls == 1
    assert store.get_document(store.get_collection(unique_name), "d39").sha256 == "sha39b"


# ------------------------------------------------------------------------------------------------ bad input
def test_missing_path_is_a_usage_error_and_changes_nothing(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    make_folder(tmp_path, 1)
    with pytest.raises(UsageError, match="does-not-exist"):
        service.ingest([tmp_path, tmp_path / "does-not-exist"], unique_name)
    assert unique_name not in [c.name for c in store.list_collections()]


def test_loader_rejections_are_reported_per_file_and_the_run_goes_on(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    write(tmp_path / "good.md", "# Good\n\n" + EN_TEXT)
    write(tmp_path / "empty.md", "   \n")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 not a zip")
    (tmp_path / "picture.gif").write_bytes(b"GIF89a")  # not a type kaynak reads: left out, not a failure
    report = service.ingest([tmp_path], unique_name, language="english")
    assert report.added == ["good.md"]
    assert sorted(f["source"] for f in report.failed) == ["broken.docx", "broken.pdf", "empty.md"]
    assert all(f["source"] in f["error"] for f in report.failed)
    assert report.ignored == 1 and not report.ok
    # A file named explicitly is read even with an unknown extension, and rejected by the loaders by name.
    explicit = service.ingest([tmp_path / "picture.gif"], unique_name)
    assert [f["source"] for f in explicit.failed] == ["picture.gif"]


def test_symlink_out_of_the_root_is_reported_not_followed(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    root = tmp_path / "root"
    outside = write(tmp_path / "secret" / "secret.md", "# Secret\n\n" + EN_TEXT)
    write(root / "inside.md", "# Inside\n\n" + EN_TEXT)
    os.symlink(outside, root / "link-out.md")
    os.symlink(outside.parent, root / "dir-out")
    os.symlink(root / "inside.md", root / "link-in.md")
    os.symlink(tmp_path / "nowhere.md", root / "dangling.md")
    report = service.ingest([root], unique_name, language="english")
    assert sorted(report.added) == ["inside.md", "link-in.md"]
    assert report.failed == []
    errors = {f["source"]: f["reason"] for f in report.skipped}
    assert set(errors) == {"link-out.md", "dir-out", "dangling.md"}
    assert "outside the ingest root" in errors["link-out.md"] and "not followed" in errors["dir-out"]
    assert "broken symbolic link" in errors["dangling.md"]
    assert "secret.md" not in store.document_hashes(store.get_collection(unique_name))


def test_unreadable_file_is_reported(
    service: IngestService, tmp_path: Path, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "ok.md", "# Ok\n\n" + EN_TEXT)
    locked = write(tmp_path / "locked.md", "# Locked\n\n" + EN_TEXT)
    locked.chmod(0)
    if os.geteuid() == 0:  # root reads anything: make the read fail the way a permission error does
        import kaynak.ingest.prepare as ingest_mod

        real = ingest_mod.file_sha256

        def denied(path: Path) -> str:
            if Path(path).name == "locked.md":
                raise PermissionError(13, "Permission denied", str(path))
            return real(path)

        monkeypatch.setattr(ingest_mod, "file_sha256", denied)
    try:
        report = service.ingest([tmp_path], unique_name, language="english")
    finally:
        locked.chmod(0o644)
    assert report.added == ["ok.md"]
    assert [f["source"] for f in report.failed] == ["locked.md"]
    assert "Permission denied" in report.failed[0]["error"]


def test_file_over_the_size_limit_is_rejected_unread(
    store: Store, env: dict[str, str], factory: Factory, tmp_path: Path, unique_name: str
) -> None:
    svc = IngestService(store, load_settings(max_file_mb=0.001), factory)
    write(tmp_path / "big.md", "# Big\n\n" + EN_TEXT * 20)
    write(tmp_path / "small.md", "# Small\n\nA short one.")
    report = svc.ingest([tmp_path], unique_name, language="english")
    assert report.added == ["small.md"]
    assert [f["source"] for f in report.failed] == ["big.md"] and "limit" in report.failed[0]["error"]


def test_collection_with_another_language_or_embedder_is_a_clear_error(
    service: IngestService, tmp_path: Path, unique_name: str
) -> None:
    make_folder(tmp_path, 1)
    service.ingest([tmp_path], unique_name, language="english", embedder="hash")
    with pytest.raises(CollectionMismatch, match=r"'english'.*'turkish'"):
        service.ingest([tmp_path], unique_name, language="turkish")
    with pytest.raises(CollectionMismatch, match=r"'hash'.*'other'"):
        service.ingest([tmp_path], unique_name, embedder="other")
    with pytest.raises(UsageError, match="unknown language"):
        service.ingest([tmp_path], unique_name, language="klingon")
    # Not naming them uses the collection's own.
    assert service.ingest([tmp_path], unique_name).ok


def test_duplicate_sources_from_two_roots_are_reported(
    service: IngestService, tmp_path: Path, unique_name: str
) -> None:
    write(tmp_path / "a" / "same.md", "# One\n\n" + EN_TEXT)
    write(tmp_path / "b" / "same.md", "# Two\n\n" + EN_TEXT)
    report = service.ingest([tmp_path / "a", tmp_path / "b", tmp_path / "a"], unique_name, language="english")
    assert report.added == ["same.md"]
    assert [f["source"] for f in report.failed] == ["same.md"] and "same source" in report.failed[0]["error"]


# ------------------------------------------------------------------------------------------------ selection
def test_path_filter_globs() -> None:
    f = PathFilter(include=["*.md", "docs/**/*.txt"], exclude=["drafts", "*.tmp.md"])
    assert f("a.md") and f("x/y/a.md") and f("docs/a.txt") and f("docs/x/y/a.txt")
    assert not f("a.txt") and not f("drafts/a.md") and not f("x/drafts/a.md") and not f("a.tmp.md")
    assert PathFilter()("anything/at/all.pdf")


def test_include_exclude_on_a_folder(tmp_path: Path) -> None:
    write(tmp_path / "a.md", "a")
    write(tmp_path / "notes" / "b.txt", "b")
    write(tmp_path / "drafts" / "c.md", "c")
    write(tmp_path / ".hidden" / "d.md", "d")
    write(tmp_path / ".e.md", "e")
    found = discover([tmp_path], PathFilter(exclude=["drafts"]))
    assert [j.source for j in found.jobs] == ["a.md", "notes/b.txt"]
    found = discover([tmp_path], PathFilter(include=["*.txt"]))
    assert [j.source for j in found.jobs] == ["notes/b.txt"]
    found = discover([tmp_path / "notes" / "b.txt"], PathFilter())
    assert [j.source for j in found.jobs] == ["b.txt"]


# ------------------------------------------------------------------------------------------------ language
def test_language_detection() -> None:
    assert detect_language(TR_TEXT) == "turkish"
    assert detect_language(EN_TEXT) == "english"
    assert detect_language("12345 67890") is None
    assert detect_language("Der Fluss fließt durch die Altstadt in den See.") is None
    assert detect_collection_language([TR_TEXT, TR_TEXT, EN_TEXT[:40]]) == "turkish"
    assert detect_collection_language([TR_TEXT, EN_TEXT]) is None


@pytest.mark.parametrize(("text", "expected"), [(TR_TEXT, "turkish"), (EN_TEXT, "english"), ("1 2 3 4.", "simple")])
def test_new_collection_language_is_detected(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str, text: str, expected: str
) -> None:
    assert service.settings.language is None
    write(tmp_path / "doc.md", f"# Doc\n\n{text}\n")
    report = service.ingest([tmp_path], unique_name)
    assert report.ok and report.language == expected
    assert store.get_collection(unique_name).language == expected


def test_mixed_folder_gets_simple(service: IngestService, tmp_path: Path, unique_name: str) -> None:
    write(tmp_path / "tr.md", f"# TR\n\n{TR_TEXT}\n")
    write(tmp_path / "en.md", f"# EN\n\n{EN_TEXT}\n")
    assert service.ingest([tmp_path], unique_name).language == "simple"


# ------------------------------------------------------------------------------------------------ stop, progress
def test_stop_after_current_document_then_rerun_completes(
    store: Store, env: dict[str, str], factory: Factory, tmp_path: Path, unique_name: str
) -> None:
    service = IngestService(store, load_settings(chunk_size=200, embed_batch=3), factory)
    sources = make_folder(tmp_path, 30)
    stop = threading.Event()
    events: list[IngestEvent] = []

    def progress(ev: IngestEvent) -> None:
        events.append(ev)
        if ev.kind == "embedded":  # as SIGINT would, in the middle of a document
            stop.set()

    report = service.ingest([tmp_path], unique_name, language="english", progress=progress, stop=stop)
    assert report.interrupted and 1 <= len(report.added) < 30 and report.ok
    assert events[0].kind == "start" and events[0].files_total == 30 and events[-1].kind == "done"
    check_store_matches(store, unique_name, tmp_path, sorted(report.added))
    rest = service.ingest([tmp_path], unique_name)
    assert not rest.interrupted and len(rest.added) == 30 - len(report.added)
    check_store_matches(store, unique_name, tmp_path, sources)


def test_progress_counts(service: IngestService, tmp_path: Path, unique_name: str) -> None:
    make_folder(tmp_path, 5)
    events: list[IngestEvent] = []
    report = service.ingest([tmp_path], unique_name, language="english", progress=events.append)
    docs = [e for e in events if e.kind == "document"]
    assert len(docs) == 5 and docs[-1].files_done == 5
    assert events[-1].chunks_written == report.chunks == max(e.chunks_embedded for e in events)


def test_concurrent_ingests_in_threads_end_like_one(
    store: Store, settings: Settings, tmp_path: Path, unique_name: str
) -> None:
    sources = make_folder(tmp_path, 12)
    reports = []

    def run() -> None:
        reports.append(IngestService(store, settings, Factory()).ingest([tmp_path], unique_name, language="english"))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r.ok for r in reports)
    assert sorted(reports[0].added + reports[1].added) == sources  # each document added exactly once
    check_store_matches(store, unique_name, tmp_path, sources)


# ------------------------------------------------------------------------------------- hostile names and files
def test_file_names_as_bytes_get_reversible_printable_sources(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    from kaynak.ingest import decode_source, encode_source

    names = [b"\xdeubat raporu.md", b"rapor\x81\x8d.md", b"two\nlines.md", "İstanbul.md".encode(), b"a\\b.md"]
    root = os.fsencode(tmp_path)
    for i, raw in enumerate(names):
        with open(os.path.join(root, raw), "wb") as f:
            f.write(f"# Belge {i}\n\n{TR_TEXT}\n".encode())
    report = service.ingest([tmp_path], unique_name, language="turkish")
    assert report.failed == [] and len(report.added) == len(names)
    assert "\\[cp1254]Şubat raporu.md" in report.added  # the Turkish a person reads, marked as Windows-1254
    assert {decode_source(s) for s in report.added} == set(names)
    assert all(encode_source(raw) in report.added for raw in names)
    col = store.get_collection(unique_name)
    doc = store.get_document(col, "\\[cp1254]Şubat raporu.md")
    assert doc.origin is None  # the path is not UTF-8 text, so it cannot be served back
    assert store.get_document(col, "İstanbul.md").origin == os.path.realpath(tmp_path / "İstanbul.md")
    again = service.ingest([tmp_path], unique_name)
    assert sorted(again.unchanged) == sorted(report.added)


def test_source_encoding_round_trips_any_bytes() -> None:
    import random

    from kaynak.ingest import decode_source, encode_source

    rng = random.Random(5)
    for _ in range(2000):
        parts = [
            bytes(rng.choice([b for b in range(1, 256) if b != 0x2F]) for _ in range(rng.randint(1, 12)))
            for _ in range(rng.randint(1, 3))
        ]
        raw = b"/".join(parts)
        source = encode_source(raw)
        assert decode_source(source) == raw
        assert source.isprintable() and source.encode("utf-8")


def test_partial_documents_keep_their_warnings_and_report_them_again(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    write(tmp_path / "ok.md", "# Ok\n\n" + TR_TEXT)
    (tmp_path / "nul.md").write_bytes(("# Nul\n\nİstan\x00bul " + TR_TEXT).encode())
    report = service.ingest([tmp_path], unique_name, language="turkish")
    assert report.added == ["ok.md"] and report.partial == ["nul.md"] and not report.ok
    assert report.warnings == [{"source": "nul.md", "warning": "1 NUL byte dropped"}]
    doc = store.get_document(store.get_collection(unique_name), "nul.md")
    assert doc.warnings == ["1 NUL byte dropped"] and doc.origin == str(tmp_path / "nul.md")
    assert "İstanbul İstanbul" in store.get_page(store.get_collection(unique_name), "nul.md", 1)
    again = service.ingest([tmp_path], unique_name)
    assert again.unchanged == ["ok.md"] and again.partial == ["nul.md"] and again.embedded == 0
    assert again.warnings == report.warnings


def test_unchanged_failed_file_is_not_parsed_again_until_it_changes(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "ok.md", "# Ok\n\n" + EN_TEXT)
    bad = tmp_path / "bad.txt"
    bad.write_bytes("Москва столица России. ".encode("koi8-r") * 20)
    first = service.ingest([tmp_path], unique_name, language="english")
    assert first.failed == [{"source": "bad.txt", "error": "bad.txt: not text (unknown encoding or binary)"}]
    submitted: list[str] = []
    real = service.parse_pool.submit
    monkeypatch.setattr(service.parse_pool, "submit", lambda task: submitted.append(task.path) or real(task))
    second = service.ingest([tmp_path], unique_name)
    assert submitted == [] and second.unchanged == ["ok.md"]
    assert second.failed == [
        {
            "source": "bad.txt",
            "error": "bad.txt: still failing (unchanged since the last run): not text (unknown encoding or binary)",
        }
    ]
    bad.write_text("Now it is text in English, and it reads fine.", encoding="utf-8")
    third = service.ingest([tmp_path], unique_name)
    assert third.added == ["bad.txt"] and submitted == [str(bad)]
    assert store.ingest_failures(store.get_collection(unique_name)) == {}


def test_internal_error_names_the_file_and_keeps_the_report(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kaynak.ingest import IngestCrashed

    make_folder(tmp_path, 3)
    real = Store.replace_document

    def broken(self: Store, collection, source, *args, **kwargs):  # type: ignore[no-untyped-def]
        if source == "sub/doc1.md":
            raise ZeroDivisionError("a bug")
        return real(self, collection, source, *args, **kwargs)

    monkeypatch.setattr(Store, "replace_document", broken)
    with pytest.raises(IngestCrashed) as err:
        service.ingest([tmp_path], unique_name, language="english")
    assert "sub/doc1.md" in str(err.value) and "ZeroDivisionError: a bug" in str(err.value)
    assert err.value.source == "sub/doc1.md" and isinstance(err.value.report.added, list)
    assert "sub/doc1.md" not in store.document_hashes(store.get_collection(unique_name))


def test_service_close_stops_the_parse_workers(
    store: Store, settings: Settings, factory: Factory, tmp_path: Path, unique_name: str
) -> None:
    svc = IngestService(store, settings, factory)
    make_folder(tmp_path, 2)
    svc.ingest([tmp_path], unique_name, language="english")
    pool = svc.parse_pool
    svc.close()
    assert pool.closed
    assert svc.ingest([tmp_path], unique_name).unchanged  # a later ingest starts a new pool
    svc.close()


def test_one_glob_dialect_in_python_and_postgresql(store: Store) -> None:
    from kaynak.globs import compile_glob, postgres_regex

    patterns = [
        "*.pdf",
        "docs/**/*.md",
        "docs/*.md",
        "**/x?.txt",
        "a+b(1).md",
        "[draft]*",
        "x.y",
        "**",
        "*",
        "dir/**",
        "kira$^.{2}|z.md",
        "ş*ı.md",
        "back\\slash.md",
    ]
    paths = [
        "a.pdf",
        "docs/a.pdf",
        "docs/a.md",
        "docs/x/y/a.md",
        "x1.txt",
        "q/x1.txt",
        "q/xx1.txt",
        "a+b(1).md",
        "[draft]note",
        "xzy",
        "x.y",
        "dir/a/b",
        "kira$^.{2}|z.md",
        "şapkalı.md",
        "back\\slash.md",
        "new\nline",
    ]
    with store._conn() as conn:
        for pattern in patterns:
            rx = compile_glob(pattern)
            for path in paths:
                in_pg = conn.execute("SELECT %s ~ %s", (path, postgres_regex(pattern))).fetchone()[0]
                assert in_pg == bool(rx.match(path)), (pattern, path)
    assert compile_glob("docs/**/*.md").match("docs/a.md") and not compile_glob("*.md").match("docs/a.md")
