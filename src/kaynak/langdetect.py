"""Language detection for new collections: is this text Turkish, English, or neither clearly?

Only the two first-class languages are told apart; anything else (or a mix) is ``None`` and the caller falls
back to the ``simple`` text-search configuration, which does not stem at all and so cannot stem wrongly.

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
from collections.abc import Iterable

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
    tr = en = 0
    for word in _WORD.findall(text[:max_chars]):
        if _TURKISH_LETTERS.search(word):  # letters only Turkish uses (of the two), looked at before lowering
            tr += 1
            continue
        low = tr_lower(word) if word[:1] == "İ" else word.lower()
        if low in ENGLISH_WORDS:
            en += 1
        elif low in TURKISH_WORDS:
            tr += 1
    return tr, en


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
