"""kaynak.langdetect: a document's language from its sampled pages, the stemming it gets, a collection's."""

from __future__ import annotations

import pytest

from kaynak.langdetect import (
    OTHER,
    PAGE_CHARS,
    SAMPLE_PAGES,
    detect_collection_language,
    detect_document,
    detect_language,
    keyword_language,
    sample_indices,
    stored_language,
)

TR = (
    "Mahkeme, davacının talebini inceledi ve dosyadaki belgelere göre bir karar verdi. Taraflar duruşmaya "
    "çağrıldı; tanıkların ifadesi alındı. Bu kararın ardından itiraz süresi başladı ve dilekçe verildi."
)
EN = (
    "The court reviewed the claim and gave its decision on the documents in the file. The parties were "
    "called to the hearing, and the witnesses were heard. After this decision the time for an appeal began."
)
DE = (
    "Das Gericht prüfte den Antrag des Klägers und entschied nach den Unterlagen der Akte. Die Parteien "
    "wurden zur Verhandlung geladen, die Zeugen wurden gehört. Danach begann die Frist für die Berufung. "
)


def test_a_page_of_each_language_is_told_apart() -> None:
    assert detect_document([TR]) == "turkish"
    assert detect_document([EN]) == "english"
    assert detect_language(TR) == "turkish" and detect_language(EN) == "english"


def test_too_short_to_tell_is_none_and_takes_the_collections_language() -> None:
    for pages in ([], [""], ["12345 67890"], ["Rapor 2024"], ["Annual report"]):
        assert detect_document(pages) is None
        assert keyword_language(detect_document(pages), "english") == "english"
        assert keyword_language(detect_document(pages), "turkish") == "turkish"


def test_a_long_text_in_another_language_is_other_and_not_stemmed() -> None:
    assert detect_document([DE * 10]) == OTHER
    assert keyword_language(OTHER, "turkish") == "simple"
    assert stored_language(OTHER) is None  # documents.language stays Turkish, English or NULL
    assert detect_document([DE]) is None  # a short one is too short to tell


def test_a_german_book_is_not_english_for_its_in_an_was() -> None:
    """German shares ``in``, ``an``, ``was``, ``will``, ``also`` with English's function words and has no Turkish
    letters: all the evidence is English, but it is 1 % of the words (English prose: 20-40 %)."""
    german = (
        "Ein topologischer Raum heißt zusammenhängend, wenn er sich nicht als Vereinigung zweier disjunkter offener "
        "Mengen schreiben lässt. Jede stetige Abbildung eines zusammenhängenden Raumes nimmt mit zwei Werten auch "
        "jeden Zwischenwert an. Diese Eigenschaft verallgemeinert den Zwischenwertsatz der Analysis. Kompakte "
        "Räume sind ebenso wichtig: jede offene Überdeckung besitzt eine endliche Teilüberdeckung. Daraus folgt, "
        "dass stetige Funktionen auf kompakten Mengen ihr Maximum annehmen. "
    )
    pages = [german * 8] * 30
    assert detect_language(german * 8) == "english"  # the text-level detector (queries) is fooled …
    assert detect_document(pages) == OTHER  # … the document-level one is not
    assert detect_document([german]) is None  # too short to tell
    lorem = (
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et "
        "dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex "
        "ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu "
        "fugiat nulla pariatur. "
    ) * 10
    assert detect_document([lorem]) == OTHER


def test_detected_language_wins_over_the_collections() -> None:
    assert keyword_language("turkish", "english") == "turkish"
    assert keyword_language("english", "turkish") == "english"
    assert keyword_language("english", "simple") == "english"
    assert stored_language("turkish") == "turkish"


@pytest.mark.parametrize("pages", [0, 1, 9, 10, 11, 37, 1000])
def test_sample_indices_are_evenly_spaced_and_include_both_ends(pages: int) -> None:
    got = sample_indices(pages)
    assert got == sorted(set(got)) and len(got) == min(pages, SAMPLE_PAGES)
    if pages:
        assert got[0] == 0 and got[-1] == pages - 1
    assert sample_indices(pages) == got  # deterministic


def test_pages_beyond_the_sample_are_not_read() -> None:
    pages = [EN] + ["Der die das " * 200] * 98 + [EN]
    unread = [i for i in range(100) if i not in sample_indices(100)]
    for i in unread:
        pages[i] = TR * 20
    assert detect_document(pages) == detect_document(
        [p if i in sample_indices(100) else "" for i, p in enumerate(pages)]
    )


def test_only_the_first_page_chars_of_a_page_count() -> None:
    assert detect_document([EN[:50] + " " * PAGE_CHARS + TR * 30]) is None
    assert detect_document([TR + " " * PAGE_CHARS + EN * 30]) == "turkish"


def test_a_document_flipping_language_between_pages_gets_one_deterministic_language() -> None:
    """Hostile: pages alternate Turkish and English. Evenly mixed → None → the collection's language, the same on
    every run; mostly one language → that one."""
    flip = [TR if i % 2 == 0 else EN for i in range(40)]
    first = detect_document(flip)
    assert all(detect_document(list(flip)) == first for _ in range(3))
    assert first is None and keyword_language(first, "english") == "english"
    assert detect_document([EN] + [TR] * 39) == "turkish"  # an English cover page
    # a Turkish document whose last page is English: still Turkish
    assert detect_document([TR] * 30 + [EN]) == "turkish"


def test_collection_language_is_a_length_weighted_majority() -> None:
    assert detect_collection_language([EN * 5] * 8 + [TR * 5] * 2) == "english"
    assert detect_collection_language([EN * 5, TR * 5]) is None
