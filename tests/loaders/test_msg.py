"""Outlook .msg (kaynak.loaders.msg) on real messages from Apache Tika's test suite, and broken ones."""

from __future__ import annotations

import shutil
from pathlib import Path

import olefile
import pytest

from kaynak.errors import CorruptFile
from kaynak.loaders import load

WORLD = Path(__file__).resolve().parents[1] / "fixtures" / "world" / "tika"


def test_message_headers_body_and_metadata_like_an_eml() -> None:
    doc = load(WORLD / "testMSG.msg")
    assert doc.title == "MIME registry use cases" and len(doc.pages) == 1
    text = doc.pages[0].text
    assert "From: Jukka Zitting <jukka.zitting@gmail.com>" in text and "To: tika-dev@lucene.apache.org" in text
    assert "making the type detection code more" in text
    assert doc.metadata["from"] == "jukka.zitting@gmail.com" and doc.metadata["format"] == "outlook-msg"
    assert doc.metadata["date"].startswith("2009-01-29T19:16:40")
    assert doc.pages[0].sections[0].path == "MIME registry use cases"


def test_attachments_become_documents_and_forwarded_text_stays() -> None:
    doc = load(WORLD / "testMSG_att_doc.msg")
    assert doc.title == "test pièce jointe 1"
    got = {suffix: "\n".join(p.text for p in part.pages) for suffix, part in doc.parts}
    assert "#pj1.txt" in got and "école" in got["#pj1.txt"]
    assert "Attachments: test-unicode.doc, pj1.txt" in doc.pages[0].text
    fwd = load(WORLD / "testMSG_forwarded.msg")
    assert "Forwarded Body" in fwd.pages[0].text and "Original Body" in fwd.pages[0].text


def test_eight_bit_strings_in_the_message_code_page() -> None:
    doc = load(WORLD / "testMSG_chinese.msg")
    assert "格式測試" in doc.title and "張毓倫" in doc.pages[0].text  # recipients too


def test_broken_and_fake_msg_files(tmp_path: Path) -> None:
    fake = tmp_path / "fake.msg"
    fake.write_bytes(b"Subject: not really outlook\n\nhello")
    with pytest.raises(CorruptFile, match=r"not an Outlook \.msg file"):
        load(fake)
    cut = tmp_path / "cut.msg"
    cut.write_bytes((WORLD / "testMSG.msg").read_bytes()[:3000])
    with pytest.raises(CorruptFile, match="msg"):
        load(cut)


def test_a_broken_property_stream_keeps_the_text(tmp_path: Path) -> None:
    path = tmp_path / "broken-props.msg"
    shutil.copy(WORLD / "testMSG.msg", path)
    with olefile.OleFileIO(str(path), write_mode=True) as ole:
        size = ole.get_size("__properties_version1.0")
        ole.write_stream("__properties_version1.0", b"\xff" * size)
    doc = load(path)
    assert doc.title == "MIME registry use cases" and "type detection" in doc.pages[0].text
    assert "date" not in doc.metadata  # the times were in the broken stream
