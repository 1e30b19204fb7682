"""Words and hyphenation: the document's own vocabulary rejoins words split by justified spacing or line-end hyphens."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from kaynak.text import tr_lower

from .lines import Line

_WORD_RE = re.compile(r"[^\W\d_]+")
# A match starts only at a word's start and never backtracks into it: linear, not quadratic, in a long run of
# letters (a crafted line once froze the server for minutes).
_HYPHENATED_RE = re.compile(r"(?<![^\W\d_])[^\W\d_]++-[^\W\d_]+")
HYPHENS = "-\u2010\u00ad"
_SPLIT_LETTER_RE = re.compile(r"(?<![^\W\d_])([^\W\d_]{2,}) ([^\W\d_])(?![^\W\d_])")


@dataclass
class DocumentWords:
    """Word counts of a document, used to decide hyphenation and split words the way the document spells them."""

    words: Counter[str] = field(default_factory=Counter)
    hyphenated: Counter[str] = field(default_factory=Counter)

    @classmethod
    def from_lines(cls, pages: list[list[Line]]) -> DocumentWords:
        vocab = cls()
        for lines in pages:
            for i, line in enumerate(lines):
                text = line.text.strip()
                if text[-1:] in HYPHENS:
                    text = text[: len(text) - len(trailing_word(text)) - 1]
                if i > 0 and lines[i - 1].text.rstrip()[-1:] in HYPHENS:
                    text = text[len(leading_word(text)) :]
                low = tr_lower(text)
                vocab.words.update(_WORD_RE.findall(low))
                vocab.hyphenated.update(_HYPHENATED_RE.findall(low))
        return vocab


def trailing_word(text: str) -> str:
    """The letters right before a line-final hyphen ('' when the hyphen follows a non-letter)."""
    m = re.search(r"(?<![^\W\d_])([^\W\d_]*+)[" + HYPHENS + r"]\s*$", text)  # linear (see _HYPHENATED_RE)
    return m.group(1) if m else ""


def leading_word(text: str) -> str:
    m = re.match(r"\s*([^\W\d_]*)", text)
    return m.group(1) if m else ""


_LINE_END_LETTER_RE = re.compile(r"(?<![^\W\d_])([^\W\d_]+) ([^\W\d_])$")
_LINE_END_SPACED_HYPHEN_RE = re.compile(r"(?<![^\W\d_])([^\W\d_]++) [-\u2010]$")


def join_split_letters(text: str, vocab: DocumentWords) -> str:
    """``preven t`` → ``prevent``, ``WIP O`` → ``WIPO``: letters that justified spacing pushed off their word.

    Inside a line the joined word must clearly be the document's spelling; at the end of a line (where such
    splits nearly always happen) it is enough that the document knows the joined word, or that the head occurs
    nowhere else and the letter is not a one-letter word.
    """

    def fix(m: re.Match[str]) -> str:
        head, letter = m.group(1), m.group(2)
        joined = tr_lower(head + letter)
        if vocab.words[joined] >= 2 and vocab.words[joined] >= 2 * vocab.words[tr_lower(head)]:
            return head + letter
        return m.group(0)

    text = _SPLIT_LETTER_RE.sub(fix, text)
    m = _LINE_END_LETTER_RE.search(text)
    if m:
        head, letter = m.group(1), m.group(2)
        joined = tr_lower(head + letter)
        if vocab.words[joined] >= 1 or (vocab.words[tr_lower(head)] <= 1 and letter.islower() and letter not in "ao"):
            text = text[: m.start()] + head + letter
    return text


_SPACE_BEFORE_PUNCT_RE = re.compile(r"(?<=[^\W_]) +([,.)\]”’»])(?=[\s”’\"»)]|$)")
_SPACE_AFTER_OPEN_RE = re.compile(r"([(\[“‘«]) +(?=\w)")


def tidy_spacing(text: str) -> str:
    """Remove the spaces PDF extraction puts before closing punctuation and after opening brackets/quotes."""
    return _SPACE_AFTER_OPEN_RE.sub(r"\1", _SPACE_BEFORE_PUNCT_RE.sub(r"\1", text))


def starts_lower(text: str) -> bool:
    m = re.match(r"[\s\"'“‘(«]*([^\W\d_])", text)
    return m is not None and m.group(1).islower()


def join_lines(a: str, b: str, vocab: DocumentWords) -> str:
    """Join two lines of one paragraph, repairing a line-end hyphen when it is hyphenation."""
    a = a.rstrip()
    b = b.lstrip()
    if not a:
        return b
    if not b:
        return a
    spaced = _LINE_END_SPACED_HYPHEN_RE.search(a)
    if spaced and starts_lower(b):
        w2 = leading_word(b)
        if w2 and vocab.words[tr_lower(spaced.group(1) + w2)]:
            return a[: spaced.end(1)] + b  # "imple -" + "mented" → "implemented"
    if a[-1] in HYPHENS:
        w1 = trailing_word(a)
        w2 = leading_word(b)
        if a[-1] == "\u00ad" and w1 and w2:
            return a[:-1] + b
        if not w1:
            if a[-2:-1].isdigit() and b[:1].isdigit():
                return a + b  # a number range or a law reference: "13/4/1983-" + "2814/1"
            return a + " " + b  # a dash after a space: "Madde 1 -"
        if not w2:
            return a + b if b[:1].isdigit() else a + " " + b
        joined = tr_lower(w1 + w2)
        hyphenated = tr_lower(w1 + "-" + w2)
        if vocab.hyphenated[hyphenated] and vocab.hyphenated[hyphenated] >= vocab.words[joined]:
            return a + b
        if vocab.words[joined]:
            return a[:-1] + b
        if w2[0].isupper() or len(w1) == 1:
            return a + b
        return a[:-1] + b
    return a + " " + b
