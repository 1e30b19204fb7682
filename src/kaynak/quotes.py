"""Quote selection: the verbatim sentence window of a chunk that best matches the query, and the words to highlight.

A quote is the window of consecutive sentences (``kaynak.chunking.split_sentences``) whose lexemes overlap the
query's lexemes most, at most ``MAX_QUOTE_CHARS`` characters. Lexemes come from the caller's ``lexemes_of``
(``Store.lexemes_of`` bound to the collection's language), so quotes use exactly the keyword leg's stemming and
Turkish-aware lowering. Ties go to the shorter window, then the earlier one; the winner is then widened with
whole neighbouring sentences (next first) while it still fits, so the answer that often follows the matching
sentence comes along. A single sentence longer than the limit is cut at word boundaries around its matching
words. Without any overlap (a hit only the vector leg found) the quote is the chunk's first sentence(s).

All offsets here are local to the text given; ``SearchService`` adds the chunk's ``char_start`` so quotes point
into the page. Texts are never altered: ``text[start:end]`` is the quote.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kaynak.chunking import split_sentences

MAX_QUOTE_CHARS = 320

LexemesOf = Callable[[list[str]], list[set[str]]]

_WORD = re.compile(r"\w+", re.UNICODE)

Span = tuple[int, int]


def _trim(text: str, start: int, end: int) -> Span:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def sentence_spans(text: str) -> list[Span]:
    """Non-empty sentence spans of ``text`` with surrounding whitespace trimmed, in order."""
    spans = [_trim(text, s, e) for s, e in split_sentences(text)]
    spans = [(s, e) for s, e in spans if e > s]
    if not spans:
        s, e = _trim(text, 0, len(text))
        spans = [(s, e)] if e > s else []
    return spans


def word_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    return [m.span() for m in _WORD.finditer(text, start, len(text) if end is None else end)]


def _best_window(spans: Sequence[Span], lex: Sequence[set[str]], query: set[str], max_chars: int) -> tuple[int, int]:
    """Indices (i, j) of the best window spans[i..j] (inclusive); may be one over-long sentence."""
    best: tuple[int, int] = (0, 0)
    best_key: tuple[int, int, int] | None = None
    for i in range(len(spans)):
        matched: set[str] = set()
        for j in range(i, len(spans)):
            length = spans[j][1] - spans[i][0]
            if length > max_chars and j > i:
                break
            matched |= lex[j] & query
            key = (len(matched), 1 if length <= max_chars else 0, -length)
            if best_key is None or key > best_key:
                best_key, best = key, (i, j)
            if length > max_chars:
                break
    return best


def _widen(spans: Sequence[Span], i: int, j: int, max_chars: int) -> tuple[int, int]:
    if spans[j][1] - spans[i][0] > max_chars:
        return i, j
    while j + 1 < len(spans) and spans[j + 1][1] - spans[i][0] <= max_chars:
        j += 1
    while i > 0 and spans[j][1] - spans[i - 1][0] <= max_chars:
        i -= 1
    return i, j


def _cut(words: Sequence[Span], matches: Sequence[bool], start: int, end: int, max_chars: int) -> Span:
    """A ≤ max_chars span of [start, end) cut at word boundaries, holding as many matching words as possible."""
    if not words:
        return start, min(end, start + max_chars)
    n = len(words)
    best_p, best_count, q = 0, -1, 0
    prefix = [0]
    for m in matches:
        prefix.append(prefix[-1] + (1 if m else 0))
    for p in range(n):
        q = max(q, p)
        while q + 1 < n and words[q + 1][1] - words[p][0] <= max_chars:
            q += 1
        if words[q][1] - words[p][0] > max_chars:  # one word longer than the limit
            continue
        count = prefix[q + 1] - prefix[p]
        if count > best_count:
            best_p, best_count = p, count
    if best_count < 0:  # every word is longer than the limit
        return words[0][0], words[0][0] + max_chars
    if best_count == 0:
        p = 0
    else:
        q = best_p
        while q + 1 < n and words[q + 1][1] - words[best_p][0] <= max_chars:
            q += 1
        in_window = [x for x in range(best_p, q + 1) if matches[x]]
        m1, m2 = in_window[0], in_window[-1]
        slack = max_chars - (words[m2][1] - words[m1][0])
        target = words[m1][0] - slack // 2
        p = m1
        while p > 0 and words[p - 1][0] >= target:
            p -= 1
    q = p
    while q + 1 < n and words[q + 1][1] - words[p][0] <= max_chars:
        q += 1
    s = start if p == 0 and words[q][1] - start <= max_chars else words[p][0]
    return s, words[q][1]


def select_quotes(
    texts: Sequence[str],
    query_lexemes: set[str],
    lexemes_of: LexemesOf,
    max_chars: int = MAX_QUOTE_CHARS,
) -> list[Span]:
    """The best quote span of each text (local offsets), with one ``lexemes_of`` call for the batch: the sentences,
    and the words of every sentence longer than ``max_chars`` (a quote may have to be cut inside one; stemming
    its words in the same call saves the search a round trip)."""
    return quotes_and_matches(texts, query_lexemes, lexemes_of, max_chars)[0]


def quotes_and_matches(
    texts: Sequence[str],
    query_lexemes: set[str],
    lexemes_of: LexemesOf,
    max_chars: int = MAX_QUOTE_CHARS,
) -> tuple[list[Span], list[set[str]]]:
    """``select_quotes`` and, for each text, the query lexemes it contains anywhere (match strength's coverage),
    from the same stemming call."""
    all_spans = [sentence_spans(t) for t in texts]
    flat = [t[s:e] for t, spans in zip(texts, all_spans, strict=True) for s, e in spans]
    long_words: dict[tuple[int, int], list[Span]] = {}  # (text index, sentence start) → its words
    for idx, (t, spans) in enumerate(zip(texts, all_spans, strict=True)):
        for s, e in spans:
            if e - s > max_chars:
                long_words[(idx, s)] = word_spans(t, s, e)
    words_flat = [texts[idx][a:b] for (idx, _), ws in long_words.items() for a, b in ws]
    items = flat + words_flat
    all_lex = lexemes_of(items) if items and query_lexemes else [set() for _ in items]
    flat_lex, words_lex = all_lex[: len(flat)], all_lex[len(flat) :]
    word_lex: dict[tuple[int, int], list[set[str]]] = {}
    pos = 0
    for key, ws in long_words.items():
        word_lex[key] = words_lex[pos : pos + len(ws)]
        pos += len(ws)
    out: list[Span] = []
    matched: list[set[str]] = []
    pos = 0
    for idx, spans in enumerate(all_spans):
        lex = flat_lex[pos : pos + len(spans)]
        pos += len(spans)
        matched.append(set().union(*lex) & query_lexemes if lex else set())
        if not spans:
            out.append((0, 0))
            continue
        i, j = _best_window(spans, lex, query_lexemes, max_chars) if query_lexemes else (0, 0)
        if not any(lx & query_lexemes for lx in lex[i : j + 1]):
            i, j = 0, 0  # no overlap anywhere: the first sentence(s)
        i, j = _widen(spans, i, j, max_chars)
        s, e = spans[i][0], spans[j][1]
        if e - s > max_chars:  # one sentence over the limit (a window of several never is): cut at its words
            matches = [bool(lx & query_lexemes) for lx in word_lex[(idx, s)]]
            s, e = _cut(long_words[(idx, s)], matches, s, e, max_chars)
        out.append((s, e))
    return out, matched


def highlight_spans(texts: Sequence[str], query_lexemes: set[str], lexemes_of: LexemesOf) -> list[list[Span]]:
    """For each text, the spans of its words whose lexemes match the query's (for terminal highlighting)."""
    spans = [word_spans(t) for t in texts]
    words = [t[a:b] for t, ws in zip(texts, spans, strict=True) for a, b in ws]
    if not words or not query_lexemes:
        return [[] for _ in texts]
    lex = lexemes_of(words)
    out: list[list[Span]] = []
    pos = 0
    for ws in spans:
        out.append([w for w, lx in zip(ws, lex[pos : pos + len(ws)], strict=True) if lx & query_lexemes])
        pos += len(ws)
    return out
