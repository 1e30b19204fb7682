"""OCR of scanned PDF pages and image files: text true to the known source (Turkish letters included), pages kept
where they belong, confidence in the metadata and on search hits, the cache, and clear refusals without Tesseract.

Test scans are rendered at test time from known paragraphs (testkit/ocr_fixtures.py). Tests that run Tesseract skip
with the reason when it (or its Turkish and English data, or the DejaVu font) is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kaynak.errors import CorruptFile, FileTooLarge, NoText, OcrUnavailable
from kaynak.loaders import SUPPORTED_EXTENSIONS, load
from kaynak.loaders import ocr as ocr_mod
from kaynak.loaders.image import load_image
from kaynak.loaders.ocr import ocr_languages, ocr_status, page_confidence, parse_tsv, tesseract_info
from kaynak.loaders.ocr import run as ocr_run
from kaynak.loaders.pdf import load_pdf
from testkit.ocr_fixtures import (
    FALLBACK,
    cer,
    font_path,
    image_bytes,
    image_pdf,
    merge_pdfs,
    paragraphs,
    render_page,
    text_pdf,
    tiff_bytes,
)


def _why_no_ocr() -> str | None:
    info = tesseract_info()
    if info is None:
        return "Tesseract is not installed (apt install tesseract-ocr tesseract-ocr-tur tesseract-ocr-eng)"
    missing = [lang for lang in ("tur", "eng") if lang not in info.languages]
    if missing:
        return f"Tesseract lacks the language data {', '.join(missing)} (apt install tesseract-ocr-tur)"
    if font_path() is None:
        return "the DejaVu fonts that test scans are drawn with are missing (apt install fonts-dejavu-core)"
    return None


needs_tesseract = pytest.mark.skipif(_why_no_ocr() is not None, reason=_why_no_ocr() or "")


@dataclass
class Options:
    """Stands in for the loaders' LoadOptions: the fields OCR reads."""

    language: str | None = None
    data_dir: Path | None = None
    ocr_languages: str | None = None


TR = [t for _, t in paragraphs("tr", 1, start=3)]  # a short paragraph full of ş ı İ ğ ü ö ç
EN = [t for _, t in paragraphs("en", 1, start=3)]


def _scan(texts: list[str], **kw: Any) -> tuple[Any, str]:
    # Half an A4 page is enough text for one paragraph and halves the OCR time.
    return render_page(texts, page_in=(8.27, 5.5), **kw)


# --------------------------------------------------------------------------------------------- without Tesseract


def test_language_choice() -> None:
    assert ocr_languages("turkish") == "tur+eng"
    assert ocr_languages("english") == "eng"
    assert ocr_languages(None) == "tur+eng" and ocr_languages("simple") == "tur+eng"
    assert ocr_languages("english", "deu+eng") == "deu+eng"


def test_parse_tsv_joins_lines_repairs_hyphens_and_averages_confidence() -> None:
    head = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [
        (1, 1, 1, 1, "Kat", 90),
        (1, 1, 1, 2, "ma-", 80),
        (1, 1, 2, 1, "likleri", 70),
        (1, 1, 2, 2, "toplanır.", 100),
        (1, 2, 1, 1, "İkinci", 60),
        (1, 2, 1, 2, "paragraf.", 40),
    ]
    body = [f"5\t1\t{b}\t{p}\t{ln}\t{w}\t0\t0\t1\t1\t{c}\t{t}" for b, p, ln, w, t, c in rows]
    body.insert(0, "4\t1\t1\t1\t1\t0\t0\t0\t1\t1\t-1\t")
    page = parse_tsv("\n".join([head, *body]))
    assert page.text == "Kat malikleri toplanır.\n\nİkinci paragraf."
    assert page.confidence == 73.3 and page.words == 6


def test_page_confidence_reads_document_metadata() -> None:
    meta = {"ocr": {"pages": {"2": 91.5}}}
    assert page_confidence(meta, 2) == 91.5
    assert page_confidence(meta, 1) is None and page_confidence({}, 2) is None


def test_images_are_registered() -> None:
    assert {".png", ".jpg", ".jpeg", ".tif", ".tiff"} <= SUPPORTED_EXTENSIONS


def test_without_tesseract_a_scan_is_refused_with_what_to_install(tmp_path: Path, monkeypatch) -> None:
    from PIL import Image

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert ocr_status()["available"] is False and "apt install" in ocr_status()["problem"]
    blank = Image.new("L", (600, 400), 255)
    scan = tmp_path / "scan.pdf"
    scan.write_bytes(image_pdf([blank], dpi=72))
    with pytest.raises(OcrUnavailable) as err:
        load(scan)
    message = str(err.value)
    assert str(scan) in message and "no text layer" in message
    assert "apt install tesseract-ocr tesseract-ocr-tur tesseract-ocr-eng" in message
    assert "brew install tesseract tesseract-lang" in message
    assert isinstance(err.value, NoText)

    picture = tmp_path / "letter.png"
    picture.write_bytes(image_bytes(blank, "PNG"))
    with pytest.raises(OcrUnavailable, match="Tesseract is not installed"):
        load(picture)

    # a mixed PDF keeps its text pages and says why the scanned one is empty
    mixed = tmp_path / "mixed.pdf"
    mixed.write_bytes(merge_pdfs([(text_pdf([" ".join(EN)]), [0]), (image_pdf([blank], dpi=72), [0])]))
    doc = load(mixed)
    assert doc.pages[0].text and doc.pages[1].text == ""
    assert any("page(s) 2" in w and "Tesseract is not installed" in w for w in doc.warnings)
    assert "ocr" not in doc.metadata


def test_bad_images_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\nthis is not an image")
    with pytest.raises(CorruptFile, match="not a readable image") as err:
        load(bad)
    assert "BytesIO" not in str(err.value) and "0x" not in str(err.value)  # no third-party noise (issue 50)
    # A PNG header claiming 100,000 × 100,000 pixels: refused before any pixel is decoded.
    import struct
    import zlib

    ihdr = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    bomb = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))
    (tmp_path / "bomb.png").write_bytes(bomb + b"\x00\x00\x00\x00IEND\xaeB`\x82")
    with pytest.raises((FileTooLarge, CorruptFile)):
        load(tmp_path / "bomb.png")


def test_bad_language_override_is_refused(tmp_path: Path) -> None:
    from PIL import Image

    data = image_bytes(Image.new("L", (200, 100), 255), "PNG")
    with pytest.raises(OcrUnavailable, match="not a Tesseract language list"):
        load_image(tmp_path / "x.png", data, Options(ocr_languages="tur eng; rm -rf"))


# --------------------------------------------------------------------------------------------- with Tesseract


@needs_tesseract
def test_turkish_png_reads_true(tmp_path: Path) -> None:
    img, truth = _scan(TR)
    path = tmp_path / "dilekce.png"
    path.write_bytes(image_bytes(img, "PNG"))
    doc = load(path)
    text = doc.pages[0].text
    assert cer(truth, text) <= 0.02, text
    for letter in "ışğüöç":
        assert letter in text.lower() or letter not in truth.lower()
    conf = doc.metadata["ocr"]["pages"]["1"]
    assert conf >= 80 and doc.metadata["ocr"]["languages"] == "tur+eng"
    assert doc.metadata["format"] == "png" and not doc.warnings


@needs_tesseract
def test_multipage_tiff_is_one_page_per_frame(tmp_path: Path) -> None:
    tr, tr_truth = _scan(TR)
    en, en_truth = _scan(EN, rotate=1.0, noise=20, seed=3)
    path = tmp_path / "ekler.tiff"
    path.write_bytes(tiff_bytes([tr, en]))
    doc = load_image(path, path.read_bytes(), Options(language="turkish"))
    assert [p.number for p in doc.pages] == [1, 2]
    assert cer(tr_truth, doc.pages[0].text) <= 0.03
    assert cer(en_truth, doc.pages[1].text) <= 0.05
    assert set(doc.metadata["ocr"]["pages"]) == {"1", "2"}


@needs_tesseract
def test_mixed_pdf_keeps_text_pages_and_ocrs_the_scan(tmp_path: Path) -> None:
    img, truth = _scan(TR)
    cover = "Cover letter. Please find the signed decision attached to this letter as page two."
    tail = "Annex listing. The original documents are kept at the registry office for ten years."
    data = merge_pdfs([(text_pdf([cover, tail]), [0]), (image_pdf([img]), [0]), (text_pdf([cover, tail]), [1])])
    path = tmp_path / "karar.pdf"
    path.write_bytes(data)
    doc = load_pdf(path, data, options=Options(language="turkish"))
    assert [p.number for p in doc.pages] == [1, 2, 3]
    assert doc.pages[0].text == cover and doc.pages[2].text == tail  # text layers kept as they are
    assert cer(truth, doc.pages[1].text) <= 0.02
    assert list(doc.metadata["ocr"]["pages"]) == ["2"]
    assert "pages_without_text" not in doc.metadata


@needs_tesseract
def test_grainy_scan_is_smoothed_before_ocr(tmp_path: Path) -> None:
    # Grain of σ 60 leaves Tesseract's own thresholding with nothing but specks (no words at all, measured);
    # the loader smooths such pages first.
    img, truth = _scan(TR, noise=60, seed=5)
    assert ocr_mod.noise_level(img) > ocr_mod.NOISY
    path = tmp_path / "grainy.png"
    path.write_bytes(image_bytes(img, "PNG"))
    assert cer(truth, load(path).pages[0].text) <= 0.03


@needs_tesseract
@pytest.mark.skipif(not (tesseract_info() and tesseract_info().osd), reason="Tesseract lacks its osd data")
def test_page_scanned_sideways_is_turned_upright(tmp_path: Path) -> None:
    img, truth = render_page(FALLBACK["tr"], page_in=(8.27, 4.0))
    path = tmp_path / "yan.png"
    path.write_bytes(image_bytes(img.rotate(90, expand=True), "PNG"))  # read as it lies: 36 % confidence, garbage
    doc = load(path)
    assert cer(truth, doc.pages[0].text) <= 0.02 and doc.metadata["ocr"]["pages"]["1"] >= 80


@needs_tesseract
def test_blank_scan_is_no_text(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "blank.pdf"
    path.write_bytes(image_pdf([Image.new("L", (1240, 1754), 255)], dpi=150))
    with pytest.raises(NoText, match="OCR found no text"):
        load(path)
    png = tmp_path / "blank.png"
    png.write_bytes(image_bytes(Image.new("L", (400, 300), 255), "PNG"))
    with pytest.raises(NoText, match="no text found by OCR"):
        load(png)


@needs_tesseract
def test_cache_by_file_hash(tmp_path: Path, monkeypatch) -> None:
    img, _ = _scan(EN)
    path = tmp_path / "memo.png"
    path.write_bytes(image_bytes(img, "PNG"))
    opts = Options(language="english", data_dir=tmp_path / "data")
    first = load_image(path, path.read_bytes(), opts)
    cached = list((tmp_path / "data" / "ocr-cache").glob("*-eng.json"))
    assert len(cached) == 1 and first.metadata["ocr"]["languages"] == "eng"

    def no_ocr(*args: Any, **kw: Any) -> None:
        raise AssertionError("OCR ran although the file was OCR'd before")

    monkeypatch.setattr(ocr_run, "ocr_image", no_ocr)  # the run is what calls the engine
    again = load_image(path, path.read_bytes(), opts)
    assert again.pages[0].text == first.pages[0].text
    assert again.metadata["ocr"] == first.metadata["ocr"]


@needs_tesseract
def test_low_confidence_page_is_a_warning(tmp_path: Path, monkeypatch) -> None:
    img, _ = _scan(EN)
    path = tmp_path / "fax.png"
    path.write_bytes(image_bytes(img, "PNG"))
    monkeypatch.setattr(ocr_run, "ocr_image", lambda *a, **kw: ocr_mod.PageOcr("Tlie cornmittee rneets", 41.0, 3))
    doc = load(path)
    assert doc.metadata["ocr"]["pages"] == {"1": 41.0}
    assert any(w.startswith("page 1: OCR confidence 41 % is low") for w in doc.warnings)


@needs_tesseract
def test_search_finds_the_scanned_page(tmp_path: Path, env: dict[str, str], unique_name: str) -> None:
    """A question about a scanned page finds it, with its page number and the OCR mark."""
    from kaynak.context import Context

    scanned, other = FALLBACK["tr"][0], FALLBACK["en"][0]
    img, _ = render_page([scanned])
    folder = tmp_path / "docs"
    folder.mkdir()
    cover = "Cover page. The decision of the committee follows on the next page."
    closing = "Closing page. The original is kept by the management."
    (folder / "karar.pdf").write_bytes(
        merge_pdfs([(text_pdf([cover, closing]), [0]), (image_pdf([img]), [0]), (text_pdf([cover, closing]), [1])])
    )
    other_img, _ = render_page([other])
    (folder / "ek.png").write_bytes(image_bytes(other_img, "PNG"))
    ctx = Context()
    question = "İşletme projesine itiraz süresi kaç gündür?"
    try:
        report = ctx.ingest.ingest([folder], unique_name, language="turkish")
        assert report.ok and sorted(report.added) == ["ek.png", "karar.pdf"], report.failed
        hits = ctx.search.search(question, unique_name, mode="keyword", k=3)
        top = hits[0]
        assert (top.source, top.page) == ("karar.pdf", 2)
        assert top.ocr is not None and top.ocr["confidence"] >= 80
        assert "on beş gün" in top.text

        # every face says so: REST (the hit as JSON), MCP (the hit as the model sees it), CLI (next to the page)
        from fastapi.testclient import TestClient

        from kaynak.mcp_server import _hit_for_model
        from kaynak.server import create_app

        with TestClient(create_app(ctx)) as client:
            r = client.get("/v1/search", params={"q": question, "collections": unique_name, "mode": "keyword", "k": 1})
        assert r.status_code == 200, r.text
        assert r.json()["hits"][0]["ocr"] == top.ocr and r.json()["hits"][0]["page"] == 2
        assert _hit_for_model(top.to_dict(), False)["ocr"] == top.ocr
    finally:
        ctx.close()
    from typer.testing import CliRunner

    from kaynak.cli import app

    result = CliRunner().invoke(app, ["search", question, "-c", unique_name, "--mode", "keyword", "-k", "1"])
    assert result.exit_code == 0, result.output
    assert "karar.pdf" in result.output and "p. 2" in result.output
    assert re.search(r"OCR \d+ %", result.output), result.output


@needs_tesseract
def test_scan_ingested_without_tesseract_is_read_once_it_is_installed(
    tmp_path: Path, env: dict[str, str], unique_name: str, monkeypatch
) -> None:
    import hashlib

    from kaynak.context import Context

    img, _ = _scan(FALLBACK["tr"])
    folder = tmp_path / "docs"
    folder.mkdir()
    cover = "Cover letter. The decision of the committee is attached as page two."
    pdf = folder / "karar.pdf"
    pdf.write_bytes(merge_pdfs([(text_pdf([cover]), [0]), (image_pdf([img]), [0])]))
    # First ingested where Tesseract was missing (loaded here: the parse workers keep the environment they
    # started with), so page 2 is stored empty with a warning.
    with monkeypatch.context() as m:
        m.setenv("PATH", str(tmp_path / "nobin"))
        without = load(pdf)
    assert without.pages[1].text == "" and any("not OCR'd" in w for w in without.warnings)
    sha = hashlib.sha256(pdf.read_bytes()).hexdigest()
    ctx = Context()
    try:
        ctx.ingest.ingest_documents(unique_name, [("karar.pdf", sha, without)], language="turkish")
        assert ctx.search.page_text(unique_name, "karar.pdf", 2) == ""
        report = ctx.ingest.ingest([folder], unique_name)  # Tesseract is here now: the same bytes are read again
        assert report.updated == ["karar.pdf"] or report.added == ["karar.pdf"], report.to_dict()
        assert "İtiraz süresi on beş gündür" in ctx.search.page_text(unique_name, "karar.pdf", 2)
        again = ctx.ingest.ingest([folder], unique_name)
        assert again.unchanged == ["karar.pdf"]  # and only once
    finally:
        ctx.close()


@needs_tesseract
def test_doctor_reports_ocr(env: dict[str, str]) -> None:
    import json

    from typer.testing import CliRunner

    from kaynak.cli import app

    status = ocr_status()
    assert status["available"] and {"tur", "eng"} <= set(status["languages"]) and "problem" not in status
    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert json.loads(result.stdout)["ocr"]["engine"].startswith("tesseract ")
    table = CliRunner().invoke(app, ["doctor"])
    assert re.search(r"ocr\s+tesseract \S+ \(eng\+tur\)", table.output), table.output


# ------------------------------------------------------------------------- real producers' files (issue 50)
WORLD_TIKA = Path(__file__).resolve().parents[1] / "fixtures" / "world" / "tika"


def test_skew_angle_finds_a_page_scanned_at_an_angle() -> None:
    from PIL import Image

    from kaynak.loaders.ocr.page import skew_angle

    with Image.open(WORLD_TIKA / "testRotated-10.png") as im:
        grey = im.convert("L")
    assert -10.6 <= skew_angle(grey) <= -9.4
    level = grey.rotate(skew_angle(grey), expand=True, fillcolor=255)
    assert skew_angle(level) == 0.0  # once levelled, nothing more to do
    assert skew_angle(Image.new("L", (800, 600), 255)) == 0.0  # a blank page


@needs_tesseract
def test_a_page_scanned_at_an_angle_is_read_straightened(tmp_path: Path) -> None:
    # Tika's testRotated-10.png: a page of text turned 10°; Tesseract read nothing from it as it lies.
    doc = load(WORLD_TIKA / "testRotated-10.png")
    text = doc.pages[0].text
    assert "Its had resolving otherwise she contented therefore." in text
    assert "Effect if in up no depend seemed." in text
    assert doc.metadata["ocr"]["mean_confidence"] >= 80
