"""E-mail loader and containers: one document per message (``archive.mbox#N``), attachments as documents of their
own (``mail.eml#report.odt``), charsets and RFC 2047 headers, metadata for ``--meta``; the ingest writes a mailbox
in one transaction (never half of it), skips it when unchanged, replaces and prunes it as a whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaynak.config import Settings, load_settings
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.errors import CorruptFile
from kaynak.ingest import IngestService
from kaynak.ingest.sources import container_index, container_of
from kaynak.loaders import load
from kaynak.search import SearchService
from kaynak.store import Store
from testkit.format_samples import EN_PASSAGE, TR_PASSAGE, make_eml, make_mbox, make_odt


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def test_eml_headers_charset_body_and_attachments(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "m.eml", make_eml(attachments={"rapor.odt": make_odt(), "x.bin": b"zz"})))
    assert doc.title == "Aidat toplantısı hakkında"
    page = doc.pages[0]
    assert TR_PASSAGE in page.text and page.sections[0].path == doc.title
    assert "From: Ayşe Yılmaz <ayse@example.com.tr>" in page.text
    assert doc.metadata["from"] == "ayse@example.com.tr" and doc.metadata["from_name"] == "Ayşe Yılmaz"
    assert doc.metadata["to"] == "yonetim@example.com.tr, mehmet@example.org"
    assert doc.metadata["date"] == "2024-12-03T10:15:00+03:00"
    assert [s for s, _ in doc.parts] == ["#rapor.odt"]  # x.bin: not a format kaynak reads
    att = doc.parts[0][1]
    assert att.metadata["attached_to"] == doc.title and TR_PASSAGE in att.pages[0].text


def test_eml_html_body_iso_8859_9(tmp_path: Path) -> None:
    data = make_eml(subject="Şubat bülteni", body="Boğaziçi köprüsü ışıklandırıldı.", charset="iso-8859-9", html=True)
    doc = load(write(tmp_path, "h.eml", data))
    assert doc.title == "Şubat bülteni" and "Boğaziçi köprüsü ışıklandırıldı." in doc.pages[0].text
    assert "<p>" not in doc.pages[0].text


def test_mbox_one_document_per_message_and_broken_message(tmp_path: Path) -> None:
    messages = [make_eml(), make_eml(subject="River news", body=EN_PASSAGE + "\nFrom here on, a quoted line.")]
    messages.append(b"\xff\xfe garbage without headers \x00\x01")
    messages.append(make_eml(subject="Ekli tablo", charset="utf-8", attachments={"t.csv": b"ad,not\nAli,geldi\n"}))
    doc = load(write(tmp_path, "a.mbox", make_mbox(messages)))
    assert doc.pages == [] and doc.metadata["messages"] == 4
    suffixes = [s for s, _ in doc.parts]
    assert suffixes == ["#1", "#2", "#4", "#4/t.csv"]
    two = dict(doc.parts)["#2"]
    assert "From here on, a quoted line." in two.pages[0].text and two.title == "River news"
    assert "ad: Ali; not: geldi" in dict(doc.parts)["#4/t.csv"].pages[0].text


def test_not_mail(tmp_path: Path) -> None:
    with pytest.raises(CorruptFile, match="not an mbox"):
        load(write(tmp_path, "x.mbox", b"hello there\n"))
    with pytest.raises(CorruptFile, match="not an e-mail"):
        load(write(tmp_path, "x.eml", "düz metin, başlık yok\n".encode()))


def test_deeply_nested_mime_is_bounded(tmp_path: Path) -> None:
    depth = 200
    parts = [b"Subject: derin\nMIME-Version: 1.0\n"]
    for i in range(depth):
        parts.append(b'Content-Type: multipart/mixed; boundary="b%d"\n\n--b%d\n' % (i, i))
    parts.append(b"Content-Type: text/plain\n\nen icteki metin\n")
    for i in reversed(range(depth)):
        parts.append(b"--b%d--\n" % i)
    doc = load(write(tmp_path, "deep.eml", b"".join(parts)))
    assert any("nested deeper" in w for w in doc.warnings), doc.warnings


def test_container_of() -> None:
    assert container_of("a/arşiv.mbox#12") == "a/arşiv.mbox"
    assert container_of("a/arşiv.mbox#12/rapor#1.pdf") == "a/arşiv.mbox"
    assert container_of("C#/notes#1.eml#ek.pdf") == "C#/notes#1.eml"
    assert container_of("notes#1.md") is None and container_of("x.eml") is None
    assert container_index(["x.eml", "x.eml#a.pdf", "y.mbox#1", "z.md"]) == {
        "x.eml": ["x.eml#a.pdf"],
        "y.mbox": ["y.mbox#1"],
    }


# ---------------------------------------------------------------------------------------------- through the ingest
@pytest.fixture
def settings(env: dict[str, str]) -> Settings:
    return load_settings(chunk_size=200)


def services(store: Store, settings: Settings, name: str) -> tuple[IngestService, SearchService]:
    emb = HashEmbedder(64)
    ingest = IngestService(store, settings, lambda _: emb)
    search = SearchService(store, Settings(collection=name, embedder="hash"), lambda _: emb)
    return ingest, search


def sources(store: Store, name: str) -> dict[str, str]:
    return store.document_hashes(store.get_collection(name))


def test_mailbox_ingest_search_unchanged_replace_prune(
    tmp_path: Path, store: Store, settings: Settings, unique_name: str
) -> None:
    root = tmp_path / "mail"
    river = make_eml(subject="River news", body=EN_PASSAGE + " Salmon swim upstream in autumn.")
    box = write(root, "arşiv.mbox", make_mbox([make_eml(), river]))
    write(root, "tek.eml", make_eml(subject="Rapor ekte", body="Rapor ektedir.", attachments={"rapor.odt": make_odt()}))
    ingest, search = services(store, settings, unique_name)
    report = ingest.ingest([root], unique_name, language="turkish", prune=True)
    assert not report.failed, report.failed
    assert set(report.added) == {"arşiv.mbox#1", "arşiv.mbox#2", "tek.eml", "tek.eml#rapor.odt"}
    assert set(sources(store, unique_name)) == set(report.added)
    with store._conn() as conn:  # written by the set writer: token counts as the single writer sets them
        counts = dict(conn.execute("SELECT source, token_count FROM documents WHERE source LIKE 'arşiv.mbox#%'"))
    assert len(counts) == 2 and all(n > 10 for n in counts.values())

    hits = search.search("salmon swim upstream", mode="keyword", k=3)
    assert hits[0].source == "arşiv.mbox#2" and hits[0].title == "River news" and hits[0].page == 1
    assert "Salmon swim upstream in autumn." in hits[0].quote.text and hits[0].section == "River news"
    hits = search.search(
        "ocak ayında toplanır", mode="keyword", k=5, filters={"metadata": {"from": "ayse@example.com.tr"}}
    )
    assert {h.source for h in hits} >= {"arşiv.mbox#1", "tek.eml#rapor.odt"}
    assert next(h for h in hits if h.source == "tek.eml#rapor.odt").section == "Yönetim planı › Genel hükümler"

    # unchanged: nothing parsed or written again
    again = ingest.ingest([root], unique_name, prune=True)
    assert sorted(again.unchanged) == ["arşiv.mbox", "tek.eml"] and not again.added and again.embedded == 0
    assert set(sources(store, unique_name)) == set(report.added)

    # one message fewer: the mailbox is replaced whole, the message that went is gone
    box.write_bytes(make_mbox([river]))
    third = ingest.ingest([root], unique_name, prune=True)
    assert third.updated == ["arşiv.mbox#1"] and not third.removed
    assert set(sources(store, unique_name)) == {"arşiv.mbox#1", "tek.eml", "tek.eml#rapor.odt"}
    assert search.search("salmon swim upstream", mode="keyword", k=1)[0].source == "arşiv.mbox#1"

    # the mailbox file is gone: prune removes its documents
    box.unlink()
    fourth = ingest.ingest([root], unique_name, prune=True)
    assert fourth.removed == ["arşiv.mbox#1"]
    assert set(sources(store, unique_name)) == {"tek.eml", "tek.eml#rapor.odt"}


def test_a_mailbox_is_never_half_written(tmp_path: Path, store: Store, settings: Settings, unique_name: str) -> None:
    root = tmp_path / "mail"
    write(root, "a.mbox", make_mbox([make_eml(), make_eml(subject="River news", body=EN_PASSAGE)]))
    write(root, "ok.md", ("# Not\n\n" + TR_PASSAGE + "\n").encode())
    ingest, _ = services(store, settings, unique_name)
    calls = []

    def fail_on_mailbox() -> None:
        calls.append(1)
        import traceback

        if any("replace_document_set" in line for line in traceback.format_stack()):
            raise RuntimeError("the disk is full")

    store._before_commit = fail_on_mailbox
    try:
        with pytest.raises(Exception, match="disk is full"):
            ingest.ingest([root], unique_name, language="turkish")
    finally:
        store._before_commit = None
    assert calls
    held = set(sources(store, unique_name)) if unique_name in {c.name for c in store.list_collections()} else set()
    assert not any(s.startswith("a.mbox") for s in held)


def test_sync_follows_a_mailbox_as_one_file(tmp_path: Path, store: Store, settings: Settings, unique_name: str) -> None:
    from kaynak.ingest.sync import sync

    root = tmp_path / "mail"
    box = write(root, "kutu.mbox", make_mbox([make_eml(), make_eml(subject="River news", body=EN_PASSAGE)]))
    ingest, _ = services(store, settings, unique_name)
    try:
        ingest.ingest([root], unique_name, language="turkish", remember=True)
        assert set(sources(store, unique_name)) == {"kutu.mbox#1", "kutu.mbox#2"}
        # nothing changed: the mailbox is unchanged by its stat, nothing removed
        r = sync(ingest, unique_name)
        assert r.hashed == 0 and r.unchanged == 1 and r.changes == 0 and not r.removed
        # touched only: read once to compare, no change; then unchanged by stat again
        import os

        os.utime(box, ns=(1, 1))
        r = sync(ingest, unique_name)
        assert r.hashed == 1 and r.changes == 0
        assert sync(ingest, unique_name).hashed == 0
        # a message added: the mailbox is read again as a whole
        box.write_bytes(
            make_mbox([make_eml(), make_eml(subject="River news", body=EN_PASSAGE), make_eml(subject="Üç")])
        )
        r = sync(ingest, unique_name)
        assert r.ingest is not None and r.ingest.added == ["kutu.mbox#3"]
        assert set(sources(store, unique_name)) == {"kutu.mbox#1", "kutu.mbox#2", "kutu.mbox#3"}
        # renamed: its documents go with the old name and come back under the new one
        box.rename(root / "yeni.mbox")
        r = sync(ingest, unique_name)
        assert set(sources(store, unique_name)) == {"yeni.mbox#1", "yeni.mbox#2", "yeni.mbox#3"}
        # deleted: all its documents go
        (root / "yeni.mbox").unlink()
        sync(ingest, unique_name)
        assert sources(store, unique_name) == {}
    finally:
        ingest.close()


def test_deleting_a_mailbox_deletes_its_messages(
    tmp_path: Path, store: Store, settings: Settings, unique_name: str
) -> None:
    from kaynak.errors import DocumentNotFound

    root = tmp_path / "mail"
    write(root, "kutu.mbox", make_mbox([make_eml(), make_eml(subject="River news", body=EN_PASSAGE)]))
    write(root, "tek.eml", make_eml(attachments={"plan.odt": make_odt()}))
    ingest, _ = services(store, settings, unique_name)
    try:
        ingest.ingest([root], unique_name, language="turkish")
        ingest.delete_document(unique_name, "kutu.mbox#1")  # one message, as any document
        assert set(sources(store, unique_name)) == {"kutu.mbox#2", "tek.eml", "tek.eml#plan.odt"}
        ingest.delete_document(unique_name, "kutu.mbox")  # the mailbox: what is left of it
        ingest.delete_document(unique_name, "tek.eml")  # a message with its attachment
        assert sources(store, unique_name) == {}
        with pytest.raises(DocumentNotFound):
            ingest.delete_document(unique_name, "kutu.mbox")
    finally:
        ingest.close()


# ------------------------------------------------------------------------- real producers' files (issue 50)
WORLD = Path(__file__).resolve().parents[1] / "fixtures" / "world"


def test_a_base64_attached_message_is_read_not_stored_as_base64() -> None:
    # GroupWise sends a forwarded message as message/rfc822 with Content-Transfer-Encoding: base64; the parser
    # leaves the base64 as the body of a headerless message, which used to be stored as 1,000 characters of it.
    doc = load(WORLD / "tika" / "testGroupWiseEml.eml")
    text = doc.pages[0].text
    assert "TWltZS1WZXJzaW9u" not in text
    assert "Attached message: test.eml\nSubject: test2" in text and "test2" in text.split("Subject: test2", 1)[1]
    assert "test.eml" in doc.metadata["attachments"]
    assert [s for s, _ in doc.parts] == ["#Neues Textdokument.txt"]


@pytest.mark.parametrize(
    ("name", "bodies"),
    [
        ("tika/simple.mbox", ["Test content 1", "Test content 2"]),  # no headers at all, only the From lines
        ("tika/quoted.mbox", ["Test content\n> quoted stuff"]),
    ],
)
def test_mbox_messages_without_headers_are_read(name: str, bodies: list[str]) -> None:
    doc = load(WORLD / name)
    assert [s for s, _ in doc.parts] == [f"#{n}" for n in range(1, len(bodies) + 1)]
    for (_, part), body in zip(doc.parts, bodies, strict=True):
        assert part.pages[0].text.endswith(body)
        assert part.metadata["date"].startswith(("2009-06-01T", "2010-06-01T"))  # from the From line
    assert doc.warnings == []


def test_mbox_unquoted_from_in_a_body_does_not_split_the_message() -> None:
    # CPython's test mailbox: 'From time to time' in the body, extra words after the date on the From line.
    doc = load(WORLD / "cpython" / "mailbox_01.mbox")
    assert [s for s, _ in doc.parts] == ["#1"]
    part = doc.parts[0][1]
    assert part.title == "unquoted From in body; extra info on From line"
    assert part.pages[0].text.endswith("Hello\n\nFrom time to time")
    assert part.metadata["date"].startswith("2022-08-07T11:40:37")  # from the From line, no time zone


def test_an_attached_picture_without_text_does_not_make_the_message_partial() -> None:
    from kaynak.ingest.workers import Parsed, ParseTask, parse_file
    from kaynak.loaders.ocr import tesseract_info

    if tesseract_info() is None:  # then the picture is not read, and that is a warning
        pytest.skip("Tesseract is not installed")
    path = WORLD / "tika" / "testEmailWithPNGAtt.eml"  # a photo (Tika's testPNG.png) attached
    parsed = parse_file(ParseTask(str(path), 10 * 2**20, None, 1000, 100))
    assert isinstance(parsed, Parsed) and parsed.warnings == []
    assert parsed.title == "Test Attachment Email"
    assert parsed.metadata["attachments"] == ["testPNG.png"]
    assert parsed.metadata["attachments_without_text"] == ["testPNG.png"]


def test_a_missing_closing_boundary_loses_nothing_and_is_not_a_warning(tmp_path: Path) -> None:
    # Tika's testEML_embedded_xhtml_and_img.eml ends without its closing MIME boundary: every part is there.
    doc = load(WORLD / "tika" / "testEML_embedded_xhtml_and_img.eml")
    assert doc.warnings == [] and "CloseBoundaryNotFoundDefect" in doc.metadata["mail_defects"]
    assert "Using inline content" in doc.pages[0].text
    # a multipart whose boundary never appears: its parts are not read, and that is said in words
    broken = b"From: a@b.org\nSubject: Kopuk\nContent-Type: multipart/mixed; boundary=XYZ\n\nmetin\n"
    doc = load(write(tmp_path, "kopuk.eml", broken))
    assert doc.warnings[0].startswith("the message: its MIME structure is broken (its parts' boundary never appears")
    assert doc.pages[0].text.endswith("metin")  # what it holds is read as it stands


def test_mbox_from_lines_without_a_time_split_before_headers(tmp_path: Path) -> None:
    data = (
        b"From ali@example.org\nFrom: ali@example.org\nSubject: Bir\n\nilk ileti\nFrom here on, not a message.\n\n"
        b"From veli@example.org\nReturn-Path: <veli@example.org>\nSubject: Iki\n\nikinci ileti\n"
    )
    doc = load(write(tmp_path, "saatsiz.mbox", data))
    assert [p.title for _, p in doc.parts] == ["Bir", "Iki"]
    assert doc.parts[0][1].pages[0].text.endswith("ilk ileti\nFrom here on, not a message.")
