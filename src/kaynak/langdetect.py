"""Language detection of documents and collections: is this text Turkish, English, or neither clearly?

Only the two first-class languages are told apart; anything else (or a mix) is ``None`` and the caller falls
back to the ``simple`` text-search configuration, which does not stem at all and so cannot stem wrongly.

Each document's keyword postings are stemmed in its own language (``detect_document``, ``keyword_language``,
docs/adr/0038): Turkish or English when its text says so; ``simple`` when it is long and has almost none of
either language's evidence (another language); the collection's language when it is too short to tell or mixes
the two (so a document whose language flips between pages gets one language, the same on every run).

The signal is deliberately simple and fast (a few microseconds per kilobyte, no model):

* very common function words of each language (``ve``, ``bir``, ``için`` … / ``the``, ``and``, ``of`` …);
* words containing a letter that only Turkish uses among the two (``ı``, ``ğ``, ``ş``, ``İ``), counted for
  Turkish (``I`` is not one: it is English's capital i).

A text is Turkish or English when that language has at least ``min_share`` of the evidence and there are at
least ``min_evidence`` hits; otherwise it is undecided. A collection is decided by the detected documents,
weighted by their length: one language must hold ``min_share`` of the decided text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kaynak.text import tr_lower

_TURKISH = """
ve bir bu da de için ile olarak daha çok gibi olan ama ne mi mı mu mü değil kadar sonra şey veya
ki ben sen biz siz onlar yok ise nasıl neden hangi göre tarafından üzerinde içinde arasında ancak
fakat çünkü yani şu böyle olduğu olduğunu ayrıca bile hem henüz sadece yalnızca diğer tüm bazı birçok
olur eğer yada bunu buna bunun şunu onun ona onu kendi zaman önce ilk iki üç yeni
"""

_ENGLISH = """
the and of to in is that for it with as was on are by this be from or an at which not have has had can
you will were been their they there these those but if its into than then also such when what who would
should could may more most other some any all each about between after before over under through we our
"""

TURKISH_WORDS = frozenset(_TURKISH.split())
ENGLISH_WORDS = frozenset(_ENGLISH.split())

_TURKISH_LETTERS = re.compile("[ığşİĞŞ]")
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


def language_evidence(text: str, max_chars: int = 20_000) -> tuple[int, int]:
    """(Turkish hits, English hits) in the first ``max_chars`` characters of ``text``."""
    tr, en, _ = _evidence(text[:max_chars])
    return tr, en


def _evidence(text: str) -> tuple[int, int, int]:
    """(Turkish hits, English hits, words) of ``text``."""
    tr = en = 0
    words = _WORD.findall(text)
    for word in words:
        if _TURKISH_LETTERS.search(word):  # letters only Turkish uses (of the two), looked at before lowering
            tr += 1
            continue
        low = tr_lower(word) if word[:1] == "İ" else word.lower()
        if low in ENGLISH_WORDS:
            en += 1
        elif low in TURKISH_WORDS:
            tr += 1
    return tr, en, len(words)


def _decide(tr: float, en: float, min_evidence: float, min_share: float) -> str | None:
    total = tr + en
    if total < min_evidence:
        return None
    if tr / total >= min_share:
        return "turkish"
    if en / total >= min_share:
        return "english"
    return None


def detect_language(text: str, *, min_evidence: int = 5, min_share: float = 0.75) -> str | None:
    """'turkish', 'english', or None when the text is too short, mixed, or another language."""
    tr, en = language_evidence(text)
    return _decide(tr, en, min_evidence, min_share)


def detect_collection_language(texts: Iterable[str], *, min_share: float = 0.8) -> str | None:
    """The language of a set of documents: each document votes with its length; None when no clear majority."""
    weight = {"turkish": 0.0, "english": 0.0}
    for text in texts:
        lang = detect_language(text)
        if lang is not None:
            weight[lang] += min(len(text), 20_000)
    return _decide(weight["turkish"], weight["english"], 1.0, min_share)


#: The result of ``detect_document`` for a long text with almost no Turkish or English evidence.
OTHER = "other"
#: Pages of a document whose text decides its language: this many, evenly spaced, the first and last included.
SAMPLE_PAGES = 10
#: Characters of each sampled page looked at (10 pages: 40,000 characters at most, well under a millisecond).
PAGE_CHARS = 4_000
#: A document is Turkish or English only when at least this share of its (sampled) words is evidence: English
#: prose has 20-40 % of its words among the function words, Turkish prose 25-50 % words with ı ğ ş or function
#: words (XQuAD, SciFact, the shared documents: 7 % at the least), while a German book has 1 % (``in``, ``an``,
#: ``was``…) and lorem ipsum 3 % (docs/adr/0038).
MIN_EVIDENCE_SHARE = 0.05
#: Below that share, a document of at least this many words is ``OTHER`` (another language); a shorter one is
#: too short to tell.
OTHER_MIN_WORDS = 300


def sample_indices(pages: int) -> list[int]:
    """The 0-based indices of the pages of a ``pages``-page document whose text ``detect_document`` reads: all of
    them up to ``SAMPLE_PAGES``, else ``SAMPLE_PAGES`` evenly spaced, first and last included (integer
    arithmetic: the store's migration picks the same pages in SQL)."""
    if pages <= SAMPLE_PAGES:
        return list(range(max(pages, 0)))
    return sorted({j * (pages - 1) // (SAMPLE_PAGES - 1) for j in range(SAMPLE_PAGES)})


def detect_document(pages: Sequence[str]) -> str | None:
    """A document's language from its pages' texts (all pages, in order; only ``sample_indices`` of them, the
    first ``PAGE_CHARS`` characters of each, are read): ``turkish``, ``english``, ``OTHER`` (long, and almost no
    evidence of either: another language), or None (too short to tell, or both languages without a clear
    majority, as in a document whose language flips between pages)."""
    tr = en = words = 0
    for i in sample_indices(len(pages)):
        t, e, w = _evidence(pages[i][:PAGE_CHARS])
        tr, en, words = tr + t, en + e, words + w
    if tr + en < MIN_EVIDENCE_SHARE * words:
        return OTHER if words >= OTHER_MIN_WORDS else None
    return _decide(tr, en, 5, 0.75)


def keyword_language(detected: str | None, default: str) -> str:
    """The text search configuration a document's keyword postings are stemmed with: its detected language
    (``turkish``, ``english``; ``OTHER`` → ``simple``, which does not stem), else ``default`` (the collection's
    language)."""
    if detected in ("turkish", "english"):
        return detected
    if detected == OTHER:
        return "simple"
    return default


def stored_language(detected: str | None) -> str | None:
    """What ``documents.language`` holds for ``detected``: Turkish or English, else NULL (ADR 0017's
    cross-language rule compares it with the query's language)."""
    return detected if detected in ("turkish", "english") else None
