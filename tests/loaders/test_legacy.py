"""Legacy .doc/.xls/.ppt through LibreOffice (skipped where it is not installed): converted in a private profile
and read as OpenDocument; without LibreOffice the file fails with the install command; ``kaynak doctor`` says."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kaynak.errors import CorruptFile, EncryptedFile, LoaderError
from kaynak.loaders import legacy, load
from testkit.format_samples import EN_PASSAGE, TR_PASSAGE, make_odp, make_ods, make_odt, make_rtf
from testkit.paths import FIXTURES

needs_soffice = pytest.mark.skipif(legacy.soffice_path() is None, reason="LibreOffice (soffice) is not installed")


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def produce(tmp_path: Path, source: Path, target: str) -> Path:
    """``source`` saved as ``target`` by LibreOffice itself (a real producer of the legacy format)."""
    out = tmp_path / "produced"
    subprocess.run(
        [str(legacy.soffice_path()), f"-env:UserInstallation=file://{tmp_path}/profile", "--headless",
         "--convert-to", target, "--outdir", str(out), str(source)],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip
    return out / (source.stem + "." + target)


@needs_soffice
def test_doc_xls_ppt_read_through_libreoffice(tmp_path: Path) -> None:
    doc = load(produce(tmp_path, write(tmp_path, "plan.odt", make_odt()), "doc"))
    assert doc.metadata["format"] == "doc" and doc.metadata["converted_by"].startswith("LibreOffice")
    text = "\n".join(p.text for p in doc.pages)
    assert TR_PASSAGE in text and EN_PASSAGE in text and len(doc.pages) == 2
    one = doc.pages[0]
    assert one.section_at(one.text.index(TR_PASSAGE)) == "Yönetim planı › Genel hükümler"

    sheets = load(produce(tmp_path, write(tmp_path, "aidat.ods", make_ods()), "xls"))
    assert [p.sections[0].path for p in sheets.pages] == ["Aidatlar", "Rivers"]
    assert "City: Budapest; River: Danube" in sheets.pages[1].text

    slides = load(produce(tmp_path, write(tmp_path, "sunum.odp", make_odp()), "ppt"))
    assert [p.number for p in slides.pages] == [1, 2] and slides.pages[1].sections[0].path == "Rivers"
    assert TR_PASSAGE in slides.pages[0].text


@needs_soffice
def test_damaged_legacy_file_fails_with_a_reason(tmp_path: Path) -> None:
    with pytest.raises(CorruptFile, match="LibreOffice could not convert"):
        load(write(tmp_path, "bozuk.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 4096))


def test_without_libreoffice_the_install_command_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAYNAK_SOFFICE", str(tmp_path / "no-such-soffice"))
    legacy.soffice_path.cache_clear()
    legacy.soffice_version.cache_clear()
    try:
        with pytest.raises(LoaderError, match="apt-get install libreoffice-writer-nogui"):
            load(write(tmp_path, "eski.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 4096))
        assert legacy.office_status()["available"] is False and legacy.office_fingerprint() == "no LibreOffice"
    finally:
        legacy.soffice_path.cache_clear()
        legacy.soffice_version.cache_clear()


def test_mislabelled_legacy_files(tmp_path: Path) -> None:
    doc = load(write(tmp_path, "rtf-inside.doc", make_rtf()))  # Word's "save as .doc" of an RTF
    assert doc.metadata["format"] == "rtf" and TR_PASSAGE in doc.pages[0].text
    with pytest.raises(CorruptFile, match=r"rename it to \.docx"):
        load(write(tmp_path, "new.doc", make_odt()))


def test_doctor_reports_libreoffice(env: dict[str, str]) -> None:
    from kaynak.cli import app

    result = CliRunner().invoke(app, ["doctor", "--json"])
    report = json.loads(result.stdout)
    assert report["office"]["available"] is (legacy.soffice_path() is not None)


XQUAD = FIXTURES / "docs" / "docx" / "xquad_tr_en_bilingual_GENERATED.docx"


@needs_soffice
@pytest.mark.parametrize("target", ["odt", "rtf", "epub", "doc"])
def test_real_producer_copies_of_a_shared_document_read_like_the_docx(tmp_path: Path, target: str) -> None:
    """The bilingual XQuAD document (from ../shared/data/docs) saved by LibreOffice in each format reads with the
    same text and headings as the DOCX loader gives."""
    original = load(XQUAD)
    copy = load(produce(tmp_path, XQUAD, target))
    text = "\n".join(p.text for p in copy.pages)
    words = " ".join(original.pages[0].text.split())
    assert abs(len(" ".join(text.split())) - len(words)) < 0.01 * len(words)
    passage = "Panthers savunması ligdeki derecesi altıncı sırada olarak sadece 308 sayı bıraktı"
    page = next(p for p in copy.pages if passage in p.text)
    section = page.section_at(page.text.index(passage))
    if target == "epub":  # LibreOffice 7.4 writes EPUB headings as styled <p>: only the nav's chapter title is left
        assert section == "XQuAD örnek paragraflar — Türkçe ve İngilizce"
    else:
        assert section.endswith("Super Bowl 50")


WORLD = FIXTURES / "world"
_LOCKED = ["testWORD_protected_passtika.doc", "testEXCEL_protected_passtika.xls", "testPPT_protected_passtika.ppt"]


@pytest.mark.parametrize("name", _LOCKED)
def test_password_protected_legacy_files_are_recognised(name: str) -> None:
    """Apache Tika's password-protected .doc/.xls/.ppt (password 'tika'): the compound file says so."""
    assert legacy._protection((WORLD / "tika" / name).read_bytes()) == "password"
    assert legacy._protection((WORLD / "tika" / "testWORD_protected_drm.doc").read_bytes()) == "rights"
    assert legacy._protection(b"not an OLE file") is None


def test_libreoffice_noise_is_not_a_reason() -> None:
    err = (
        "Warning: failed to launch javaldx - java may not function correctly\nError: source file could not be loaded\n"
    )
    assert legacy._clean_stderr(err) == "source file could not be loaded"


@needs_soffice
@pytest.mark.parametrize("name", _LOCKED)
def test_password_protected_legacy_files_say_so(name: str) -> None:
    with pytest.raises(EncryptedFile) as err:
        load(WORLD / "tika" / name)
    assert err.value.reason == f"{name} is password-protected; save it without a password first"
    assert "javaldx" not in str(err.value)


def test_rights_managed_doc_is_refused_not_read_as_its_stub_page() -> None:
    with pytest.raises(EncryptedFile, match=r"testWORD_protected_drm\.doc is protected by rights management"):
        load(WORLD / "tika" / "testWORD_protected_drm.doc")


@needs_soffice
def test_damaged_legacy_file_reason_has_no_libreoffice_noise(tmp_path: Path) -> None:
    with pytest.raises(CorruptFile) as err:
        load(write(tmp_path, "bozuk2.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 4096))
    assert "bozuk2.doc" in err.value.reason and "javaldx" not in err.value.reason


@needs_soffice
def test_ppt_from_impress_keeps_text_box_titles_and_notes(tmp_path: Path) -> None:
    deck = load(produce(tmp_path, WORLD / "libreoffice" / "impress-textbox-titles-notes.odp", "ppt"))
    assert [p.sections[0].path for p in deck.pages] == ["Toplantı Gündemi", "Mali Durum Özeti"]
    assert deck.pages[0].text.endswith("Notes:\nKonuşmacı notu: oylamadan önce yeter sayıyı kontrol et.")
    assert deck.pages[1].text.endswith("Notes:\nDenetçi raporunu ekle.")
