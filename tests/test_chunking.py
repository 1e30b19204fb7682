"""Chunker tests: the sentence splitter on Turkish and English, packing and overlap, and hypothesis properties
(offsets always true, nothing crosses a page or section, every sentence covered, overlaps whole sentences)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kaynak.chunking import chunk_pages, segments, split_sentences, units
from kaynak.types import Chunk, Page, Section

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "docs"


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


# --------------------------------------------------------------------------------------------- splitter


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Dr. Ahmet geldi. Prof. Dr. Ayşe Yılmaz konuştu. Doç. Dr. Can da oradaydı.",
            ["Dr. Ahmet geldi.", "Prof. Dr. Ayşe Yılmaz konuştu.", "Doç. Dr. Can da oradaydı."],
        ),
        (
            "Elma, armut vb. meyveler satıldı. Masa, sandalye vs. eşyalar da. Bkz. Ek 3 ve örn. tablo.",
            ["Elma, armut vb. meyveler satıldı.", "Masa, sandalye vs. eşyalar da.", "Bkz. Ek 3 ve örn. tablo."],
        ),
        (
            "Use a tool, e.g. Ruff. It checks code, i.e. style. Apples, pears, etc. are fruit.",
            ["Use a tool, e.g. Ruff.", "It checks code, i.e. style.", "Apples, pears, etc. are fruit."],
        ),
        (
            "Pi is 3.14 here. Türkçede 1.000,5 yazılır. Fiyat 2.500 TL oldu.",
            ["Pi is 3.14 here.", "Türkçede 1.000,5 yazılır.", "Fiyat 2.500 TL oldu."],
        ),
        (
            "Madde 5. Bu Kanun yayımı tarihinde yürürlüğe girer. Article 12. This applies.",
            ["Madde 5. Bu Kanun yayımı tarihinde yürürlüğe girer.", "Article 12. This applies."],
        ),
        (
            "II. Dünya Savaşı 1945'te bitti. 1946'da ülke şampiyon oldu.",
            ["II. Dünya Savaşı 1945'te bitti.", "1946'da ülke şampiyon oldu."],
        ),
        (
            "Adımlar:\n1. Paketi kurun.\n2. Çalıştırın.\na) birinci madde\nb) ikinci madde\n- tire ile",
            ["Adımlar:", "1. Paketi kurun.", "2. Çalıştırın.", "a) birinci madde", "b) ikinci madde", "- tire ile"],
        ),
        (
            "Başlık\n\nBirinci paragraf burada. İkinci cümle mi? Evet!\nYeni satır burada başlar.",
            ["Başlık", "Birinci paragraf burada.", "İkinci cümle mi?", "Evet!", "Yeni satır burada başlar."],
        ),
        (
            "A hard-wrapped paragraph of plain text that goes on\nand on across the line break. Then another.",
            ["A hard-wrapped paragraph of plain text that goes on\nand on across the line break.", "Then another."],
        ),
        (
            'He said "Stop." Then he left. J. R. R. Tolkien wrote it. See No. 5 and Fig. 3 for it.',
            ['He said "Stop."', "Then he left.", "J. R. R. Tolkien wrote it.", "See No. 5 and Fig. 3 for it."],
        ),
        (
            "Kat malikleri (Değişik: 13/4/1983-2814/1 md.) Bir arsa üzerinde. The U.S. economy grew. A.Ş. kuruldu.",
            [
                "Kat malikleri (Değişik: 13/4/1983-2814/1 md.) Bir arsa üzerinde.",
                "The U.S. economy grew.",
                "A.Ş. kuruldu.",
            ],
        ),
        ("Ne dedi? hiçbir şey. Bekle... Tamam.", ["Ne dedi? hiçbir şey.", "Bekle...", "Tamam."]),
        ("", []),
        ("   \n\n  ", []),
        ("no punctuation at all", ["no punctuation at all"]),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_split_sentences_code_is_not_merged_with_prose() -> None:
    text = "Run this command:\n\nfunction f() {\n  return 1;\n}\n\nThen read the output."
    got = sentences(text)
    assert got[0] == "Run this command:" and got[-1] == "Then read the output."
    assert all("Run this" not in s and "Then read" not in s for s in got[1:-1])


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('aAbğİı. ,!?\n\t1("')), max_size=120))
def test_split_sentences_cover_every_character_once(text: str) -> None:
    spans = split_sentences(text)
    covered = [False] * len(text)
    prev_end = 0
    for s, e in spans:
        assert prev_end <= s < e <= len(text)
        assert not text[s].isspace() and not text[e - 1].isspace()
        for i in range(s, e):
            covered[i] = True
        prev_end = e
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))


# --------------------------------------------------------------------------------------------- chunker


def test_chunk_basics_offsets_pages_and_ord() -> None:
    pages = [
        Page(1, "Birinci cümle. İkinci cümle. Üçüncü cümle."),
        Page(2, ""),
        Page(3, "Son sayfa tek cümle."),
    ]
    chunks = chunk_pages(pages, chunk_size=30, overlap=1)
    assert [c.ord for c in chunks] == list(range(len(chunks)))
    assert [(c.page, c.text) for c in chunks] == [
        (1, "Birinci cümle. İkinci cümle."),
        (1, "İkinci cümle. Üçüncü cümle."),
        (3, "Son sayfa tek cümle."),
    ]
    for c in chunks:
        assert pages[c.page - 1 if c.page < 3 else 2].text[c.char_start : c.char_end] == c.text
        assert c.section is None


def test_overlap_zero_and_two() -> None:
    page = Page(1, "A bir. B iki. C üç. D dört. E beş. F altı.")
    no_overlap = chunk_pages([page], chunk_size=14, overlap=0)
    assert [c.text for c in no_overlap] == ["A bir. B iki.", "C üç. D dört.", "E beş. F altı."]
    two = chunk_pages([page], chunk_size=20, overlap=2)
    # Two sentences are repeated while they fit; before "F altı." only one does.
    assert [c.text for c in two] == ["A bir. B iki. C üç.", "B iki. C üç. D dört.", "C üç. D dört. E beş.",
                                     "E beş. F altı."]  # fmt: skip


def test_long_sentence_split_at_word_boundaries_without_overlap() -> None:
    long = " ".join(f"kelime{i}" for i in range(60)) + "."
    page = Page(1, f"Kısa giriş. {long} Kısa son.")
    chunks = chunk_pages([page], chunk_size=100, overlap=1)
    assert all(len(c.text) <= 100 for c in chunks)
    assert chunks[0].text.startswith("Kısa giriş. kelime0")  # pieces pack with their neighbours
    pieces = [c for c in chunks if "kelime" in c.text]
    for a, b in itertools.pairwise(pieces):
        assert a.char_end <= b.char_start  # pieces of one sentence never overlap
        assert page.text[a.char_end : b.char_start].isspace()
    joined = " ".join(c.text for c in pieces).replace("Kısa giriş.", "").replace("Kısa son.", "")
    assert " ".join(joined.split()) == long  # no word lost or cut
    assert chunks[-1].text.endswith("Kısa son.")


def test_word_longer_than_chunk_is_hard_cut() -> None:
    page = Page(1, "x" * 25 + " y.")
    chunks = chunk_pages([page], chunk_size=10, overlap=1)
    assert [c.text for c in chunks] == ["x" * 10, "x" * 10, "x" * 5 + " y."]


def test_chunks_follow_sections_and_never_cross_them() -> None:
    text = "Giriş metni.\n\nKurulum\n\nPip ile kurun. Kolaydır.\n\nKaynaktan\n\nDerleyin. Test edin."
    start_install = text.index("Kurulum")
    start_source = text.index("Kaynaktan")
    page = Page(
        1,
        text,
        [Section(start_install, start_source - 2, "Kurulum"), Section(start_source, len(text), "Kurulum › Kaynaktan")],
    )
    chunks = chunk_pages([page], chunk_size=800, overlap=1)
    assert [(c.section, c.text) for c in chunks] == [
        (None, "Giriş metni."),
        ("Kurulum", "Kurulum\n\nPip ile kurun. Kolaydır."),
        ("Kurulum › Kaynaktan", "Kaynaktan\n\nDerleyin. Test edin."),
    ]
    assert segments(page)[0] == (0, start_install, None)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError):
        chunk_pages([Page(1, "x.")], chunk_size=0)
    with pytest.raises(ValueError):
        chunk_pages([Page(1, "x.")], overlap=-1)
    assert chunk_pages([]) == []


def test_real_documents_chunk_cleanly() -> None:
    from kaynak.loaders import load

    for rel in (
        "md/tr/your-first-component.md",
        "html/tr/shared_guide_pasting.html",
        "txt/tr-formfeed-pages-warsaw.txt",
    ):
        doc = load(FIXTURES / rel)
        chunks = chunk_pages(doc.pages, chunk_size=800, overlap=1)
        assert chunks
        check_invariants(doc.pages, chunks, 800, 1)


# --------------------------------------------------------------------------------------------- properties


def check_invariants(pages: list[Page], chunks: list[Chunk], size: int, overlap: int) -> None:
    assert [c.ord for c in chunks] == list(range(len(chunks)))
    order = [p.number for p in pages]
    assert [c.page for c in chunks] == sorted((c.page for c in chunks), key=order.index)  # page order
    for page in pages:
        page_chunks = [c for c in chunks if c.page == page.number]
        segs = segments(page)
        assert sum(e - s for s, e, _ in segs) == len(page.text)  # segments tile the page
        for c in page_chunks:
            # Offsets are true, chunks are trimmed and never longer than chunk_size (over-long sentences are cut).
            assert page.text[c.char_start : c.char_end] == c.text
            assert c.text and not c.text[0].isspace() and not c.text[-1].isspace()
            assert len(c.text) <= size
        for seg_start, seg_end, path in segs:
            seg_units = units(page.text, seg_start, seg_end, size)
            seg_chunks = [c for c in page_chunks if seg_start <= c.char_start < seg_end]
            for c in seg_chunks:
                # Never across a section boundary; the chunk carries its segment's section path.
                assert c.char_end <= seg_end and c.section == path
            starts = {u.start for u in seg_units}
            ends = {u.end for u in seg_units}
            for c in seg_chunks:
                assert c.char_start in starts and c.char_end in ends  # chunks are made of whole units
            # Every sentence (or piece of an over-long one) lies inside at least one chunk.
            k = 0
            for u in seg_units:
                while k < len(seg_chunks) and seg_chunks[k].char_end < u.end:
                    k += 1
                assert k < len(seg_chunks) and seg_chunks[k].char_start <= u.start
            # Overlaps are whole sentences, at most ``overlap`` of them, and chunks move forward.
            for a, b in itertools.pairwise(seg_chunks):
                assert b.char_start > a.char_start and b.char_end > a.char_end
                if b.char_start < a.char_end:
                    shared = [u for u in seg_units if b.char_start <= u.start and u.end <= a.char_end]
                    assert shared and all(u.whole for u in shared)
                    assert shared[0].start == b.char_start and shared[-1].end == a.char_end
                    assert len(shared) <= overlap
        assert not [c for c in page_chunks if not any(s <= c.char_start < e for s, e, _ in segs)]


_WORDS = [
    "kat", "malikleri", "yönetim", "planı", "İstanbul", "ılık", "Işık", "çay", "the", "owner", "shall", "vote",
    "Dr.", "Prof.", "vb.", "e.g.", "i.e.", "etc.", "3.14", "1.000,5", "Madde", "5.", "(1)", "a)", "II.", "“alıntı”",
    "x" * 40, "uzun" * 30, "—", "-", "½",
]  # fmt: skip
_ENDS = [".", "!", "?", "...", ":", ";", ""]
_SEPS = [" ", " ", " ", "\n", "\n\n", "\n\n\n", "  "]


_SENTENCE = st.tuples(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=10), st.sampled_from(_ENDS), st.sampled_from(_SEPS)
)


@st.composite
def page_texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(_SENTENCE, max_size=25))
    return "".join(" ".join(words) + end + sep for words, end, sep in parts).strip()


@st.composite
def documents(draw: st.DrawFn) -> list[Page]:
    pages: list[Page] = []
    for number in range(1, draw(st.integers(1, 3)) + 1):
        text = draw(page_texts())
        sections: list[Section] = []
        if text and draw(st.booleans()):
            cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=6))))
            bounds = [0, *cuts, len(text)] if draw(st.booleans()) else [*cuts, len(text)]
            for i, (s, e) in enumerate(itertools.pairwise(bounds)):
                if e > s and draw(st.booleans()):
                    sections.append(Section(s, e, f"Bölüm {i} › Alt"))
        pages.append(Page(number, text, sections))
    return pages


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.integers(min_value=8, max_value=400), st.integers(min_value=0, max_value=3))
def test_chunk_properties(pages: list[Page], size: int, overlap: int) -> None:
    chunks = chunk_pages(pages, chunk_size=size, overlap=overlap)
    check_invariants(pages, chunks, size, overlap)
    assert chunk_pages(pages, chunk_size=size, overlap=overlap) == chunks  # deterministic


@settings(max_examples=40, deadline=None)
@given(page_texts(), st.integers(min_value=20, max_value=300))
def test_every_non_blank_character_is_in_a_chunk(text: str, size: int) -> None:
    page = Page(1, text)
    chunks = chunk_pages([page], chunk_size=size, overlap=1)
    covered = [False] * len(text)
    for c in chunks:
        for i in range(c.char_start, c.char_end):
            covered[i] = True
    assert all(covered[i] or text[i].isspace() for i in range(len(text)))
