"""Long single-page documents are split into pages at ingest (kaynak.ingest.paging): by heading, else blank line,
line or space; slices of the original text; stable; never for PDFs or documents that have pages."""

from __future__ import annotations

from pathlib import Path

from kaynak.ingest.paging import PAGE_CHARS, paginate, split_page
from kaynak.ingest.workers import Parsed, ParseTask, parse_file
from kaynak.types import LoadedDocument, Page, Section


def _markdown(sections: int = 12) -> str:
    parts = []
    for i in range(sections):
        body = "\n\n".join(f"Paragraf {i}.{j}: kat malikleri kurulu toplanır, aidat ödenir. " * 6 for j in range(5))
        parts.append(f"# Bölüm {i}\n\n{body}\n\n")
    return "".join(parts)


def _sections(text: str) -> list[Section]:
    starts = [i for i in range(len(text)) if text.startswith("# ", i) and (i == 0 or text[i - 1] == "\n")]
    ends = [*starts[1:], len(text)]
    return [Section(a, b, text[a + 2 : text.index("\n", a)]) for a, b in zip(starts, ends, strict=True)]


def test_a_long_page_splits_at_headings_into_slices_of_the_text() -> None:
    text = _markdown()
    page = Page(1, text, _sections(text))
    pages = split_page(page)
    assert len(pages) > 1 and [p.number for p in pages] == list(range(1, len(pages) + 1))
    assert "".join(p.text for p in pages) == text  # nothing dropped, nothing added
    assert all(len(p.text) <= PAGE_CHARS for p in pages)
    assert all(p.text.startswith("# Bölüm") for p in pages)  # each page begins at a heading
    for p in pages:  # sections rebased onto their page, paths kept
        assert p.sections and all(0 <= s.start < s.end <= len(p.text) for s in p.sections)
        assert p.text[p.sections[0].start :].startswith("# " + p.sections[0].path)
    assert split_page(page) == pages  # the same text splits the same way every time


def test_without_headings_it_cuts_at_blank_lines_then_lines_then_spaces() -> None:
    paragraphs = "\n\n".join("kelime " * 150 for _ in range(20))
    pages = split_page(Page(1, paragraphs))
    assert "".join(p.text for p in pages) == paragraphs
    assert all(p.text.endswith("\n\n") for p in pages[:-1])
    lines = "\n".join("satır " * 30 for _ in range(200))
    assert all(p.text.endswith("\n") for p in split_page(Page(1, lines))[:-1])
    words = "kelime " * 3000
    cut = split_page(Page(1, words))
    assert all(p.text.endswith(" ") for p in cut[:-1]) and "".join(p.text for p in cut) == words
    solid = "x" * (PAGE_CHARS * 2 + 5)
    assert [len(p.text) for p in split_page(Page(1, solid))] == [PAGE_CHARS, PAGE_CHARS, 5]


def test_only_long_single_pages_of_unpaged_formats_split() -> None:
    long = "kelime " * 3000
    short = LoadedDocument("t", [Page(1, "kısa")])
    assert paginate(short, "a.md") is short
    pdf = LoadedDocument("t", [Page(1, long)])
    assert paginate(pdf, "scan.PDF") is pdf  # a PDF's page is the file's own
    paged = LoadedDocument("t", [Page(1, long), Page(2, long)])
    assert paginate(paged, "slides.pptx") is paged  # documents with pages keep them
    for name in ("one-sheet.xlsx", "legacy.xls", "sheet.ods", "data.csv", "one-slide.pptx", "deck.odp", "book.epub"):
        one = LoadedDocument("t", [Page(1, long)])
        assert paginate(one, name) is one, name  # a sheet, a slide, a chapter is the page, even alone
    for name in ("a.md", "b.html", "c.txt", "d.docx"):
        assert len(paginate(LoadedDocument("t", [Page(1, long)]), name).pages) > 1, name
    mailbox = LoadedDocument("box", [Page(1, "")], parts=[("#1", LoadedDocument("m", [Page(1, long)]))])
    assert len(paginate(mailbox, "box.mbox").parts[0][1].pages) > 1


def test_the_parse_worker_splits_markdown_html_and_text(tmp_path: Path) -> None:
    text = _markdown()
    html = "<html><body>" + "".join(f"<h2>Bölüm {i}</h2><p>{'Aidat ödenir. ' * 120}</p>" for i in range(8))
    files = {"doc.md": text, "doc.html": html + "</body></html>", "doc.txt": "Aidat ödenir.\n" * 2500}
    for name, content in files.items():
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        first = parse_file(ParseTask(str(path), 10 * 2**20, None, 1000, 100))
        again = parse_file(ParseTask(str(path), 10 * 2**20, None, 1000, 100))
        assert isinstance(first, Parsed) and isinstance(again, Parsed), name
        assert len(first.pages) > 1 and all(len(p.text) <= PAGE_CHARS for p in first.pages), name
        assert [p.text for p in first.pages] == [p.text for p in again.pages], name  # stable across re-ingests
        assert {c.page for c in first.chunks} == {p.number for p in first.pages}, name
