"""Query syntax people already know: ``"exact phrase"`` requires the phrase, ``-word`` leaves out passages with it.

Everything else is free text. A phrase matches when the passage holds its words in that order, Turkish case-folded
(``I`` → ``ı``, ``İ`` → ``i``) and across any run of whitespace (a line break inside the phrase still matches).
A ``-word`` (a minus at the start of the query or after a space, then a letter) leaves out every passage with a
word that begins with it, case-folded the same way, so ``-madde`` also leaves out ``maddesi`` and ``Maddede``
(Turkish adds suffixes). A hyphen inside a word (``e-posta``) or before a digit (``-5``) is text. The phrase's
words stay in the free text (they also rank); excluded words do not. Straight and typographic quotes (“ ” „ « »)
both work; an unpaired quote is text. When no candidate holds a quoted phrase (a phrase in another language than
the documents, a misspelling), the search shows the hits without it and its plan says so (``phrase_missing``),
as web search engines do; excluded words are always honoured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PHRASE = re.compile(r'["“„«]([^"“”„«»]*)["”“»]')
_EXCLUDE = re.compile(r"(?:(?<=\s)|^)-(\w[\w'’]*)", re.UNICODE)
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+", re.UNICODE)


def fold(text: str) -> str:
    """Turkish-aware case folding with whitespace runs collapsed to one space."""
    return _SPACE.sub(" ", text.replace("I", "ı").replace("İ", "i").lower()).strip()


@dataclass
class ParsedQuery:
    """A query split into its free ``text`` (what is embedded and stemmed), required ``phrases`` and ``excluded``
    words (both case-folded)."""

    text: str
    phrases: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)

    @property
    def restricts(self) -> bool:
        return bool(self.phrases or self.excluded)

    def admits(self, passage: str) -> bool:
        """Whether ``passage`` holds every phrase and no word beginning with an excluded word."""
        if not self.restricts:
            return True
        folded = fold(passage)
        if any(p not in folded for p in self.phrases):
            return False
        if self.excluded:
            words = _WORD.findall(folded)
            if any(w.startswith(x) for w in words for x in self.excluded):
                return False
        return True


def parse_query(query: str) -> ParsedQuery:
    """The query's phrases and excluded words; ``text`` is the query without the excluded words."""
    phrases = [fold(m.group(1)) for m in _PHRASE.finditer(query)]
    phrases = [p for p in dict.fromkeys(phrases) if p]
    # minus words outside phrases only
    masked = _PHRASE.sub(lambda m: " " * len(m.group(0)), query)
    excluded: list[str] = []
    spans: list[tuple[int, int]] = []
    for m in _EXCLUDE.finditer(masked):
        if m.group(1)[0].isalpha():
            excluded.append(fold(m.group(1)))
            spans.append(m.span())
    text = query
    for s, e in reversed(spans):
        text = text[:s] + text[e:]
    return ParsedQuery(_SPACE.sub(" ", text).strip(), phrases, list(dict.fromkeys(excluded)))
