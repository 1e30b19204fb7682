"""Every format of issue 26 through ingest and search: a question about a known passage, in Turkish and in English,
comes back with its quote and the right page (slide, sheet, chapter) and section. Keyword mode with the hash
embedder (fast); each question is asked of its own document (a source filter), since the samples share passages.
The legacy formats (.doc, .xls, .ppt) are produced by LibreOffice and skipped where it is not installed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kaynak.config import Settings
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.ingest import IngestService
from kaynak.loaders import legacy
from kaynak.search import SearchService
from kaynak.store import Store
from testkit.format_samples import (
    UDF_PARAGRAPHS,
    make_eml,
    make_epub,
    make_mbox,
    make_odp,
    make_ods,
    make_odt,
    make_pptx,
    make_rtf,
    make_udf,
    make_xlsx,
)

TR_Q, TR_QUOTE = "kurul ocak ayında toplanır", "ocak ayında toplanır"
EN_Q, EN_QUOTE = "bridges are still used by people", "bridges are still used"
G = "Yönetim planı › Genel hükümler"
# (source, question, expected page, expected section, text the quote holds)
CASES = [
    ("plan.odt", TR_Q, 1, G, TR_QUOTE),
    ("plan.odt", EN_Q, 2, "Yönetim planı › Rivers", EN_QUOTE),
    ("aidat.ods", "daire tutar 450", 1, "Aidatlar", "Tutar: 450"),
    ("aidat.ods", "Budapest Danube", 2, "Rivers", "River: Danube"),
    ("sunum.odp", "yeter sayı üçte iki", 1, "Toplantı kuralları", "yeter sayı üçte iki"),
    ("sunum.odp", EN_Q, 2, "Rivers", EN_QUOTE),
    ("sunum.pptx", "yeter sayı üçte iki", 1, "Toplantı kuralları", "yeter sayı üçte iki"),
    ("sunum.pptx", EN_Q, 2, "Rivers", EN_QUOTE),
    ("aidat.xlsx", TR_Q, 1, "Aidatlar", TR_QUOTE),
    ("aidat.xlsx", EN_Q, 2, "Rivers", EN_QUOTE),
    ("iller.csv", "Boğaz iki yakayı ayırır", 1, "iller", "Boğaz iki yakayı ayırır"),
    ("iller.tsv", "Danube long river", 1, "iller", "Danube, the long one"),
    ("karar.udf", "toplantı yeter sayısına ulaşılmadan", 1, "GEREKÇE", "yeter sayısına ulaşılmadan"),
    ("karar.udf", "kurul kararının iptaline", 2, "HÜKÜM", "kurul kararının iptaline"),
    ("karar.rtf", TR_Q, 1, "Toplantı usulü", TR_QUOTE),
    ("karar.rtf", EN_Q, 2, "Rivers", EN_QUOTE),
    ("kitap.epub", TR_Q, 1, "Birinci bölüm: Kurul › Toplantı", TR_QUOTE),
    ("kitap.epub", EN_Q, 2, "Chapter two: Rivers", EN_QUOTE),
    ("mail.eml", TR_Q, 1, "Aidat toplantısı hakkında", TR_QUOTE),
    ("mail.eml#plan.odt", EN_Q, 2, "Yönetim planı › Rivers", EN_QUOTE),
    ("arşiv.mbox#2", "salmon swim upstream", 1, "River news", "Salmon swim upstream"),
]
LEGACY = [
    ("plan.doc", TR_Q, 1, G, TR_QUOTE),
    ("aidat.xls", "Budapest Danube", 2, "Rivers", "River: Danube"),
    ("sunum.ppt", EN_Q, 2, "Rivers", EN_QUOTE),
]


def build(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "plan.odt").write_bytes(make_odt())
    (root / "aidat.ods").write_bytes(make_ods())
    (root / "sunum.odp").write_bytes(make_odp())
    (root / "sunum.pptx").write_bytes(make_pptx())
    (root / "aidat.xlsx").write_bytes(make_xlsx())
    (root / "iller.csv").write_bytes("Şehir;Not\nİstanbul;Boğaz iki yakayı ayırır\n".encode("cp1254"))
    (root / "iller.tsv").write_bytes(b"City\tRiver\nVienna\tDanube, the long one\n")
    (root / "karar.udf").write_bytes(make_udf(UDF_PARAGRAPHS, page_break_after=2))
    (root / "karar.rtf").write_bytes(make_rtf())
    (root / "kitap.epub").write_bytes(make_epub())
    (root / "mail.eml").write_bytes(make_eml(attachments={"plan.odt": make_odt()}))
    river = make_eml(subject="River news", body="Salmon swim upstream in autumn.", charset="utf-8")
    (root / "arşiv.mbox").write_bytes(make_mbox([make_eml(), river]))
    exe = legacy.soffice_path()
    if exe is not None:
        for source, target in (("plan.odt", "doc"), ("aidat.ods", "xls"), ("sunum.odp", "ppt")):
            subprocess.run(
                [exe, f"-env:UserInstallation=file://{root.parent}/profile", "--headless", "--convert-to", target,
                 "--outdir", str(root), str(root / source)],
                check=True, capture_output=True, timeout=180,
            )  # fmt: skip


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory, store: Store, database_url: str, data_dir: Path):
    root = tmp_path_factory.mktemp("formats") / "docs"
    build(root)
    name = "t_formats_search"
    settings = Settings(database_url=database_url, data_dir=data_dir, embedder="hash", chunk_size=300)
    emb = HashEmbedder(64)
    ingest = IngestService(store, settings, lambda _: emb)
    try:
        report = ingest.ingest([root], name, language="turkish", prune=True)
    finally:
        ingest.close()
    assert not report.failed, report.failed
    yield SearchService(store, Settings(collection=name, embedder="hash"), lambda _: emb), report


@pytest.mark.parametrize(("source", "question", "page", "section", "quote"), CASES + LEGACY)
def test_question_comes_back_with_quote_page_and_section(
    searcher, source: str, question: str, page: int, section: str, quote: str
) -> None:
    if (source, question, page, section, quote) in LEGACY and legacy.soffice_path() is None:
        pytest.skip("LibreOffice (soffice) is not installed")
    search, _ = searcher
    hits = search.search(question, mode="keyword", k=3, filters={"source_prefix": source})
    hits = [h for h in hits if h.source == source]
    assert hits, f"no hit in {source}"
    top = hits[0]
    assert (top.page, top.section) == (page, section), (top.page, top.section, top.text[:200])
    assert quote in top.quote.text, top.quote.text
