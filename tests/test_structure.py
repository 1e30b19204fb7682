"""Article headings become sections; article references in queries are found and matched (kaynak.structure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaynak.structure import (
    ArticleRef,
    article_refs,
    article_sections,
    heading_key,
    promote_matching,
    section_key,
    section_matches,
)
from kaynak.types import Page, Section

DOCS = Path(__file__).resolve().parents[2] / "shared" / "data" / "docs"


@pytest.mark.parametrize(
    ("query", "keys"),
    [
        ("Kat Mülkiyeti Kanunu 27. madde ne diyor?", ["article:27"]),
        ("KMK md. 20", ["article:20"]),
        ("md.27", ["article:27"]),
        ("md 5 ne diyor", ["article:5"]),
        ("mad. 12", ["article:12"]),
        ("madde 33'te itiraz", ["article:33"]),
        ("MADDE 27", ["article:27"]),
        ("Madde 27-", ["article:27"]),
        ("27 nci maddesi", ["article:27"]),
        ("27'nci maddede", ["article:27"]),
        ("44 üncü madde", ["article:44"]),
        ("12. maddede", ["article:12"]),
        ("Ek Madde 2", ["ek:2"]),
        ("ek 2. madde", ["ek:2"]),
        ("Geçici Madde 1", ["gecici:1"]),
        ("GEÇİCİ MADDE 1", ["gecici:1"]),
        ("geçici 1. maddesi", ["gecici:1"]),
        ("madde 5/A", ["article:5/A"]),
        ("Article 27 of the law", ["article:27"]),
        ("ARTICLE 27", ["article:27"]),
        ("Art. 5", ["article:5"]),
        ("What does section 4.2 say?", ["section:4.2"]),
        ("Sec. 4.2", ["section:4.2"]),
        ("section 512(a)", ["section:512"]),
        ("§ 4", ["any:4"]),
        ("§4.2", ["any:4.2"]),
        ("madde 5 ve 27. madde", ["article:5", "article:27"]),
        ("kat malikleri kurulu ne zaman toplanır", []),
        ("3.14 sayısı", []),
        ("md5 checksum of a file", []),
        ("2007 yılında 5711 sayılı kanun", []),
        ("Markdown md files", []),
        ("", []),
    ],
)
def test_article_refs(query: str, keys: list[str]) -> None:
    assert [r.key for r in article_refs(query)] == keys


def test_article_ref_span() -> None:
    (ref,) = article_refs("KMK md. 20 ne diyor")
    assert (ref.kind, ref.number, ref.text, ref.start, ref.end) == ("article", "20", "md. 20", 4, 10)
    assert "KMK md. 20 ne diyor"[ref.start : ref.end] == "md. 20"
    headings = [
        r.heading for q in ("27. madde", "ek md. 2", "geçici 1. madde", "sec. 4.2", "Art. 5") for r in article_refs(q)
    ]
    assert headings == ["Madde 27", "Ek Madde 2", "Geçici Madde 1", "Section 4.2", "Madde 5"]


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("MADDE 27 – (1) Bu Yönetmelik", "article:27"),
        ("Madde 27- Anagayrimenkul", "article:27"),
        ("MADDE 27 -", "article:27"),
        ("Madde 27 – Genel kurul", "article:27"),
        ("Madde 27", "article:27"),
        ("Ek Madde 2 – (Ek: 13/4/1983)", "ek:2"),
        ("Geçici Madde 1 –", "gecici:1"),
        ("GEÇİCİ MADDE 1 – (1)", "gecici:1"),
        ("Article 27", "article:27"),
        ("ARTICLE 3 Definitions", "article:3"),
        ("Section 4.2", "section:4.2"),
        ("Section 4.2: Results", "section:4.2"),
        ("4.2 Results", "section:4.2"),
        ("3 Implementation", "section:3"),
        ("4.1 Evaluation Method", "section:4.1"),
        # not headings
        ("Madde 5 uyarınca yapılır", None),
        ("Ek Madde 2, Ek Madde 3", None),
        ("Article 1:dump 2:coast", None),
        ("Section 1201 contains two general savings clauses.", None),
        ("Section 411(a) of the Copyright Act", None),
        ("1. More than 2,000 National Guard troops", None),
        ("1. Foo", None),
        ("2005-09-23 Katrina New Orleans", None),
        ("12 Wages, salaries, tips", None),
        ("3 This is a long sentence that is certainly not a title", None),
        ("", None),
    ],
)
def test_heading_key(line: str, key: str | None) -> None:
    assert heading_key(line) == key


def test_section_matches() -> None:
    (r27,) = article_refs("27. madde")
    assert section_matches("Madde 27 – Genel kurul", r27)
    assert section_matches("BEŞİNCİ BÖLÜM › MADDE 27", r27)
    assert not section_matches("Madde 2 – Tarifler", r27) and not section_matches("Madde 270", r27)
    assert not section_matches("Ek Madde 27", r27) and not section_matches(None, r27) and not section_matches("", r27)
    (en27,) = article_refs("Article 27")
    assert section_matches("Madde 27", en27)  # an English question about a Turkish law
    (ek2,) = article_refs("Ek Madde 2")
    assert section_matches("Ek Madde 2 – Kullanma yerlerinin boşaltılması", ek2) and not section_matches("Madde 2", ek2)
    (sec,) = article_refs("Section 4.2")
    assert section_matches("4.2 Results", sec) and section_matches("Methods › Section 4.2", sec)
    assert not section_matches("4.2.1 Details", sec) and not section_matches("Madde 4", sec)
    (par,) = article_refs("§ 4")
    assert section_matches("Madde 4", par) and section_matches("4 Experiment and Evaluation", par)
    assert section_key("Install › From source") is None
    assert section_key("İKİNCİ BÖLÜM › Madde 27 – Genel kurul") == "article:27"
    assert ArticleRef("gecici", "1", "Geçici Madde 1", 0, 14).key == "gecici:1"


def test_promote_matching() -> None:
    hits = [("a", "Madde 22"), ("b", None), ("c", "Madde 20 – Giderler"), ("d", "Madde 20"), ("e", "Madde 2")]
    refs = article_refs("KMK md. 20")
    assert [h[0] for h in promote_matching(hits, refs, lambda h: h[1])] == ["c", "d", "a", "b", "e"]
    assert promote_matching(hits, [], lambda h: h[1]) == hits
    assert promote_matching(hits, article_refs("Madde 99"), lambda h: h[1]) == hits


LAW = """Kanun Numarası : 634

A) Genel kurul:

Madde 27 – Anagayrimenkul, kat malikleri kurulunca yönetilir.

B) Yönetim planı:

Madde 28 – Yönetim planı yönetim tarzını düzenler.

Yönetim planı bütün kat maliklerini bağlar."""


def test_article_sections_on_plain_pages() -> None:
    p1 = Page(1, LAW)
    p2 = Page(2, "planında hüküm bulunmıyan hallerde uygulanır.\n\nMADDE 29 -(1) Toplantı yılda bir kez.")
    out = article_sections([p1, p2])
    s1 = out[0].sections
    assert [s.path for s in s1] == ["Madde 27 – Genel kurul", "Madde 28 – Yönetim planı"]
    assert LAW[s1[0].start :].startswith("A) Genel kurul:") and LAW[s1[1].start :].startswith("B) Yönetim planı:")
    assert s1[0].end == s1[1].start and s1[1].end == len(LAW)
    assert LAW[: s1[0].start].strip() == "Kanun Numarası : 634"  # text before the first article has no section
    s2 = out[1].sections
    assert [s.path for s in s2] == ["Madde 28 – Yönetim planı", "MADDE 29"]  # article 28 runs on to page 2
    assert s2[0].start == 0 and s2[-1].end == len(p2.text)
    assert out[0].text == LAW and out[0].number == 1


def test_article_sections_leave_other_pages_alone() -> None:
    plain = Page(1, "No headings here.\n\nJust text about 3 things.")
    assert article_sections([plain]) == [plain]
    marked = Page(1, "Intro\n\n1 Background\n\ntext", [Section(0, 25, "Intro")])
    assert article_sections([marked]) == [marked]  # numbered lines count only on pages without heading markup
    md = "Birinci Bölüm\n\nGiriş metni.\n\nMadde 3 – Tanımlar burada.\n\nMadde 4 – Kapsam."
    out = article_sections([Page(1, md, [Section(0, len(md), "Birinci Bölüm")])])[0]
    assert [s.path for s in out.sections] == ["Birinci Bölüm", "Birinci Bölüm › Madde 3", "Birinci Bölüm › Madde 4"]
    assert out.sections[0].end == out.sections[1].start == md.index("Madde 3")


def test_bare_article_words_in_a_table_are_no_heading() -> None:
    table = "Maddeleri\n\n2, 3, 8, Ek Madde 1,\n\nEk Madde 2, Ek Madde 3, Ek\n\nMadde 4\n\n14/4/1983\n\nMadde 9\n\n1985"
    assert article_sections([Page(31, table)])[0].sections == []
    (page,) = article_sections([Page(1, "Giriş\n\nMadde 5\n\nBu Kanun yayımı tarihinde yürürlüğe girer.")])
    assert [s.path for s in page.sections] == ["Madde 5 – Giriş"]


def test_numbered_headings_in_an_english_paper() -> None:
    text = "Abstract text.\n\n3.5 Metaclustering\n\nFinally, we cluster.\n\n4 Experiment and Evaluation\n\nWe ran it."
    (page,) = article_sections([Page(6, text)])
    assert [s.path for s in page.sections] == ["3.5 Metaclustering", "4 Experiment and Evaluation"]


@pytest.mark.skipif(not (DOCS / "pdf" / "kat-mulkiyeti.pdf").is_file(), reason="../shared/data/docs is absent")
def test_real_law_gets_article_sections() -> None:
    """Through the loader: Kat Mülkiyeti Kanunu's articles and the elevator regulation's MADDE headings."""
    from kaynak.loaders import load

    doc = load(DOCS / "pdf" / "kat-mulkiyeti.pdf")
    page11 = next(p for p in doc.pages if p.number == 11)
    paths = [s.path for s in page11.sections]
    assert "Madde 27 – Genel kurul" in paths and "Madde 28 – Yönetim planı" in paths
    s27 = next(s for s in page11.sections if s.path.startswith("Madde 27"))
    assert "kat malikleri kurulunca yönetilir" in page11.text[s27.start : s27.end]
    reg = load(DOCS / "pdf" / "asansor_yonetmeligi.pdf")
    keys = {section_key(s.path) for p in reg.pages for s in p.sections}
    assert {f"article:{n}" for n in range(1, 22)} <= keys and "gecici:1" in keys


def test_loader_gives_text_and_markdown_articles_sections(tmp_path: Path) -> None:
    """Through kaynak.loaders.load: a form-feed text law and a Markdown law get article sections."""
    from kaynak.loaders import load

    txt = tmp_path / "yonetmelik.txt"
    txt.write_text(
        "ASANSÖR YÖNETMELİĞİ\n\nAmaç\nMADDE 1 – (1) Bu Yönetmeliğin amacı güvenliktir.\n\n"
        "Kapsam\nMADDE 2 – (1) Bu Yönetmelik asansörleri kapsar.\n\fdevamı burada.\n\n"
        "Geçici Madde 1 – Eski asansörler bir yıl içinde tescil edilir.\n",
        encoding="utf-8",
    )
    doc = load(txt)
    assert [[s.path for s in p.sections] for p in doc.pages] == [
        ["MADDE 1 – Amaç", "MADDE 2 – Kapsam"],
        ["MADDE 2 – Kapsam", "Geçici Madde 1"],
    ]
    md = tmp_path / "kanun.md"
    md.write_text("# Birinci Bölüm\n\nGenel hükümler.\n\nMadde 3 – Tanımlar şunlardır.\n\n# İkinci Bölüm\n\nSon.\n")
    paths = [s.path for s in load(md).pages[0].sections]
    assert paths == ["Birinci Bölüm", "Birinci Bölüm › Madde 3", "İkinci Bölüm"]
    plain = tmp_path / "notes.txt"
    plain.write_text("1 Background\n\nSome notes.\n\n2 Method\n\nMore.\n")  # numbered headings in a text file
    assert [s.path for s in load(plain).pages[0].sections] == ["1 Background", "2 Method"]
