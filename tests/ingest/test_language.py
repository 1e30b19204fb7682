"""Per-document language (issue 50): a mixed folder, mostly English with some Turkish, becomes an English
collection whose Turkish documents are stemmed in Turkish, so a Turkish word finds them and an English word the
English ones; a document flipping language between pages gets one language, the same on every ingest."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kaynak.config import Settings, load_settings
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.ingest import IngestService
from kaynak.search import SearchService
from kaynak.store import Store
from testkit.languages import english_doc, mixed_folder, turkish_doc

HASH = HashEmbedder()


@pytest.fixture
def settings(env: dict[str, str]) -> Settings:
    return load_settings(chunk_size=400)


@pytest.fixture
def factory() -> object:
    return lambda name: HASH


def _keyword(store: Store, collection: str, query: str) -> set[str]:
    svc = SearchService(store, Settings(collection=collection, embedder="hash"), lambda name: HASH)
    return {h.source for h in svc.search(query, collection, mode="keyword", k=50)}


def test_a_mixed_folder_finds_turkish_documents_by_a_turkish_word(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    turkish, court = mixed_folder(tmp_path)
    report = service.ingest([tmp_path], unique_name)
    assert report.ok and report.language == "english"  # the collection takes the majority's language
    col = store.get_collection(unique_name)
    with store._conn() as conn:
        stemmed = dict(
            conn.execute(
                "SELECT source, keyword_language::text FROM documents WHERE collection_id = %s", (col.id,)
            ).fetchall()
        )
        chunk_languages = dict(
            conn.execute(
                "SELECT d.source, min(c.language::text) FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE d.collection_id = %s GROUP BY 1 HAVING count(DISTINCT c.language) = 1",
                (col.id,),
            ).fetchall()
        )
    assert {s for s, lang in stemmed.items() if lang == "turkish"} == set(turkish)
    assert chunk_languages == stemmed  # chunks (tsv, postings) stemmed as their document
    assert _keyword(store, unique_name, "mahkeme") == set(turkish)  # all 9 forms
    assert _keyword(store, unique_name, "courts") == set(court)  # English stemming: courts → court
    assert _keyword(store, unique_name, "tanıkları") >= set(turkish)  # Turkish stemming: tanıklar(ı) → tanık
    assert store.document_languages([unique_name])[unique_name] == ["english", "turkish"]


def test_the_cli_search_finds_them_too(
    service: IngestService, env: dict[str, str], tmp_path: Path, unique_name: str
) -> None:
    from kaynak.cli import app

    turkish, _ = mixed_folder(tmp_path)
    assert service.ingest([tmp_path], unique_name).ok
    res = CliRunner().invoke(app, ["search", "mahkeme", "-c", unique_name, "--mode", "keyword", "-k", "20", "--json"])
    assert res.exit_code == 0, res.output
    assert all(source in res.stdout for source in turkish)
    assert "en_00.md" not in res.stdout


def test_a_document_flipping_language_between_pages_gets_one_language_and_is_found(
    service: IngestService, store: Store, tmp_path: Path, unique_name: str
) -> None:
    """Hostile: a text file whose form-feed pages alternate Turkish and English, in an English collection."""
    folder = tmp_path / "docs"
    folder.mkdir()
    mixed_folder(folder)
    pages = [turkish_doc(i % 9) if i % 2 == 0 else english_doc(i % 18) for i in range(30)]
    (folder / "flip.txt").write_text("\f".join(pages), encoding="utf-8")
    languages = []
    for run in range(2):
        name = f"{unique_name}_{run}"
        assert service.ingest([folder], name).ok
        col = store.get_collection(name)
        with store._conn() as conn:
            row = conn.execute(
                "SELECT d.keyword_language::text, count(DISTINCT c.language) FROM documents d "
                "JOIN chunks c ON c.document_id = d.id WHERE d.collection_id = %s AND d.source = 'flip.txt' "
                "GROUP BY 1",
                (col.id,),
            ).fetchone()
        assert row is not None and row[1] == 1  # one language for the whole document
        languages.append(row[0])
        assert "flip.txt" in _keyword(store, name, "mahkeme")
        assert "flip.txt" in _keyword(store, name, "courts")
        assert "flip.txt" in _keyword(store, name, "bilirkişi raporu")
    assert languages[0] == languages[1]  # deterministic


def test_ocr_reads_turkish_letters_once_an_english_collection_holds_turkish_documents(
    service: IngestService, tmp_path: Path, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kaynak.ingest.service as ingest_service
    from kaynak.loaders import LoadOptions
    from kaynak.loaders.ocr import ocr_languages

    seen: list[LoadOptions] = []

    def recording(*args: object, **kwargs: object) -> LoadOptions:
        seen.append(LoadOptions(*args, **kwargs))  # type: ignore[arg-type]
        return seen[-1]

    monkeypatch.setattr(ingest_service, "LoadOptions", recording)
    english = tmp_path / "en"
    english.mkdir()
    for i in range(6):
        (english / f"en_{i}.md").write_text(english_doc(i), encoding="utf-8")
    assert service.ingest([english], unique_name).language == "english"
    assert service.ingest([english], unique_name).ok
    assert ocr_languages(seen[-1].language) == "eng"  # an English collection: English OCR
    (english / "tr_0.md").write_text(turkish_doc(0), encoding="utf-8")
    assert service.ingest([english], unique_name).ok
    assert service.ingest([english], unique_name).ok
    assert ocr_languages(seen[-1].language) == "tur+eng"  # Turkish documents too: Turkish letters read
