"""Quote selection: the verbatim sentence window of a chunk that best matches the query, and the words to highlight.

A quote is the window of consecutive sentences (``kaynak.chunking.split_sentences``) whose lexemes overlap the
query's lexemes most, at most ``MAX_QUOTE_CHARS`` characters. Lexemes come from the caller's ``lexemes_of``
(``Store.lexemes_of`` bound to the collection's language), so quotes use exactly the keyword leg's stemming and
Turkish-aware lowering. A query term counts by its IDF (``weights``) times its rarity among the chunk's sentences (a
term in every sentence does not tell them apart); one-letter lexemes that are not digits (suffixes split off at an
apostrophe: ``Marş'ı`` → ``ı``) do not count, and a query lexeme of four letters or more also matches a sentence
lexeme it begins (the stemmer left a suffix on one side: ``marş`` / ``marşı``). Ties go to the earlier window (what
follows it then comes along), then the shorter one. The winner is then widened with whole following sentences while
they fit, with whole preceding ones only when nothing follows, and the room left is filled with the start of the
next sentence (or the end of the previous one), cut at a word: the answer that often follows the matching words
comes along. A single sentence longer than the limit is cut at word boundaries around the most weight of distinct
query terms. Without any overlap (a hit only the vector leg found) the quote is the chunk's first sentence(s).

All offsets here are local to the text given; ``SearchService`` adds the chunk's ``char_start`` so quotes point
into the page. Texts are never altered: ``text[start:end]`` is the quote.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kaynak.chunking import split_sentences

MAX_QUOTE_CHARS = 320
MIN_FILL_CHARS = 25  # the room left in a quote is filled with part of a neighbouring sentence when this much fits
MIN_PREFIX_CHARS = 4  # a query lexeme this long also matches the sentence lexemes it begins

LexemesOf = Callable[[list[str]], list[set[str]]]

_WORD = re.compile(r"\w+", re.UNICODE)
_NAME = re.compile(r"[^\W\d_][\w'’]*", re.UNICODE)
ANSWER_BONUS = 0.5  # a window holding the kind of answer asked for gains this share of the mean term weight
_ASKS = {
    "date": re.compile(
        r"\b(ne zaman|hangi yıl|hangi tarih|hangi yüzyıl|kaç yılında|when|what year|which year|what date|"
        r"what century|what decade|in what year)",
        re.IGNORECASE,
    ),
    "number": re.compile(
        r"\b(kaç|ne kadar|yüzde kaç|how many|how much|how long|how old|how far|how large|how big|how tall|"
        r"what percentage|what percent)",
        re.IGNORECASE,
    ),
    "person": re.compile(r"\b(kim|kimdir|kimin|kime|kimi|kimler|who|whom|whose)\b", re.IGNORECASE),
}
_NUMBER = re.compile(
    r"\d|\b(bir|iki|üç|dört|beş|altı|yedi|sekiz|dokuz|on|yirmi|otuz|kırk|elli|yüz|bin|milyon|milyar|one|two|"
    r"three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand|million|"
    r"billion|dozen)\b",
    re.IGNORECASE,
)
_DATE = re.compile(
    r"\b(1\d{3}|20\d{2})|\b(ocak|şubat|mart|nisan|mayıs|haziran|temmuz|ağustos|eylül|ekim|kasım|aralık|january|"
    r"february|march|april|may|june|july|august|september|october|november|december|yüzyıl|century)",
    re.IGNORECASE,
)

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


def asked_type(question: str) -> str | None:
    """What kind of answer a question asks for — ``number``, ``date``, ``person`` — from its question words
    (Turkish and English), or None."""
    for kind, pattern in _ASKS.items():
        if pattern.search(question):
            return kind
    return None


def holds_type(sentence: str, kind: str | None, question_words: set[str]) -> bool:
    """Whether ``sentence`` holds something of the ``kind`` a question asks for (a number, a date, a name that is
    not one of the question's own words)."""
    if kind == "number":
        return bool(_NUMBER.search(sentence))
    if kind == "date":
        return bool(_DATE.search(sentence))
    if kind == "person":
        words = _NAME.findall(sentence)
        return any(fold_word(w) not in question_words for w in words[1:] if w[:1].isupper())
    return False


def fold_word(word: str) -> str:
    return word.replace("I", "ı").replace("İ", "i").lower()


def _best_window(
    spans: Sequence[Span],
    lex: Sequence[set[str]],
    query: set[str],
    max_chars: int,
    weights: Mapping[str, float] | None = None,
    typed: Sequence[bool] | None = None,
) -> tuple[int, int]:
    """Indices (i, j) of the best window spans[i..j] (inclusive); may be one over-long sentence. A window scores
    the weights of the query lexemes it holds (1 each without ``weights``), plus ``ANSWER_BONUS`` of the mean
    weight when one of its sentences holds the kind of answer the question asks for (``typed``)."""
    best: tuple[int, int] = (0, 0)
    best_key: tuple[float, int, int, int] | None = None
    w = weights or {}
    bonus = ANSWER_BONUS * (sum(w.get(t, 1.0) for t in query) / len(query)) if query else 0.0
    for i in range(len(spans)):
        matched: set[str] = set()
        has_type = False
        for j in range(i, len(spans)):
            length = spans[j][1] - spans[i][0]
            if length > max_chars and j > i:
                break
            matched |= lex[j] & query
            has_type = has_type or bool(typed and typed[j])
            score = sum(w.get(t, 1.0) for t in matched) + (bonus if has_type and matched else 0.0)
            key = (round(score, 9), 1 if length <= max_chars else 0, -i, -length)
            if best_key is None or key > best_key:
                best_key, best = key, (i, j)
            if length > max_chars:
                break
    return best


def _widen(spans: Sequence[Span], i: int, j: int, max_chars: int) -> tuple[int, int]:
    """Whole following sentences while they fit; whole preceding ones only when no sentence follows (the room
    is then better spent on the start of the next one, ``_fill``)."""
    if spans[j][1] - spans[i][0] > max_chars:
        return i, j
    while j + 1 < len(spans) and spans[j + 1][1] - spans[i][0] <= max_chars:
        j += 1
    if j + 1 < len(spans):
        return i, j
    while i > 0 and spans[j][1] - spans[i - 1][0] <= max_chars:
        i -= 1
    return i, j


def _fill(text: str, spans: Sequence[Span], i: int, j: int, max_chars: int) -> Span:
    """The window spans[i..j] with the room left up to ``max_chars`` filled by the start of the next sentence (or,
    at the chunk's end, the end of the previous one), cut at a word; unchanged when less than ``MIN_FILL_CHARS``
    would be gained."""
    s, e = spans[i][0], spans[j][1]
    if max_chars - (e - s) < MIN_FILL_CHARS:
        return s, e
    if j + 1 < len(spans):
        start, end = spans[j + 1]
        ends = [b for _, b in word_spans(text, start, end) if b <= s + max_chars]
        if ends and ends[-1] - start >= MIN_FILL_CHARS:
            return s, ends[-1]
    elif i > 0:
        start, end = spans[i - 1]
        starts = [a for a, _ in word_spans(text, start, end) if a >= e - max_chars]
        if starts and end - starts[0] >= MIN_FILL_CHARS:
            return starts[0], e
    return s, e


def _within_chunk(weights: Mapping[str, float] | None, query: set[str], lex: Sequence[set[str]]) -> dict[str, float]:
    """Each query term's weight (IDF, or 1) times its rarity among the chunk's sentences, log((n + 1) / (sf + 0.5))
    for a term in sf of n sentences: a term every sentence holds says little about which one answers."""
    w = weights or {}
    n = len(lex)
    out: dict[str, float] = {}
    for t in query:
        sf = sum(1 for lx in lex if t in lx)
        out[t] = w.get(t, 1.0) * (math.log((n + 1) / (sf + 0.5)) if sf and n > 1 else 1.0)
    return out


def _extended(lexemes: Sequence[set[str]], query: set[str]) -> list[set[str]]:
    """Each sentence's lexemes plus the query lexemes (of ``MIN_PREFIX_CHARS`` or more) that begin one of them: the
    stemmer leaves a suffix on one side now and then (``marş`` / ``marşı``, ``yap`` / ``yapar``)."""
    by_head: dict[str, list[str]] = {}  # the first MIN_PREFIX_CHARS letters → the query lexemes that start so
    for t in query:
        if len(t) >= MIN_PREFIX_CHARS:
            by_head.setdefault(t[:MIN_PREFIX_CHARS], []).append(t)
    if not by_head:
        return list(lexemes)
    out = []
    for lx in lexemes:
        more = {
            t
            for x in lx
            if len(x) > MIN_PREFIX_CHARS and (ts := by_head.get(x[:MIN_PREFIX_CHARS]))
            for t in ts
            if len(x) > len(t) and x.startswith(t)
        }
        out.append(lx | more if more else lx)
    return out


def _counts(lexeme: str) -> bool:
    """Whether a query lexeme counts for quotes: not a lone non-digit letter (a suffix split off at an
    apostrophe, ``Marş'ı`` → ``ı``, or a stemmer's stub)."""
    return len(lexeme) > 1 or lexeme.isdigit()


def _cut(
    words: Sequence[Span],
    terms: Sequence[set[str]],
    start: int,
    end: int,
    max_chars: int,
    weights: Mapping[str, float] | None = None,
) -> Span:
    """A ≤ max_chars span of [start, end) cut at word boundaries, holding the most weight of distinct query terms
    (``terms``: each word's query lexemes; ``weights``: 1 each without), then the most matching words."""
    if not words:
        return start, min(end, start + max_chars)
    w = weights or {}
    n = len(words)
    matches = [bool(t) for t in terms]
    best_p, best_count, q = 0, -1.0, 0
    at = [x for x in range(n) if matches[x]]  # the matching words' indices
    prefix = [0]
    for m in matches:
        prefix.append(prefix[-1] + (1 if m else 0))
    for p in at or range(n):  # a best window can start at a matching word: it then reaches furthest
        q = max(q, p)
        while q + 1 < n and words[q + 1][1] - words[p][0] <= max_chars:
            q += 1
        if words[q][1] - words[p][0] > max_chars:  # one word longer than the limit
            continue
        hits = prefix[q + 1] - prefix[p]
        count = 0.0
        if hits:
            held = set().union(*(terms[x] for x in at[bisect.bisect_left(at, p) : bisect.bisect_right(at, q)]))
            count = round(sum(w.get(t, 1.0) for t in held), 9) + 1e-6 * hits
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


@dataclass(frozen=True)
class Analysis:
    """What quote selection needs of one text besides the query, from one stemming: its sentence spans, each
    sentence's lexemes, and the words (spans and lexemes) of every sentence longer than the quote limit (a quote
    may have to be cut inside one). It does not depend on the query, so ingest stores it with the chunk
    (``encode`` / ``decode``) and a search reads it instead of splitting and stemming again."""

    spans: list[Span]
    lexemes: list[set[str]]
    long_words: dict[int, tuple[list[Span], list[set[str]]]]  # sentence start → its words and their lexemes


#: Version of the stored analysis: bump it when ``split_sentences``, ``word_spans`` or what a sentence's lexemes
#: are changes, so that analyses stored by an older kaynak are recomputed at search instead of trusted.
ANALYSIS_VERSION = 1


def analyse(texts: Sequence[str], lexemes_of: LexemesOf, max_chars: int = MAX_QUOTE_CHARS) -> list[Analysis]:
    """The ``Analysis`` of each text, with one ``lexemes_of`` call for the batch (none when nothing to stem)."""
    all_spans = [sentence_spans(t) for t in texts]
    flat = [t[s:e] for t, spans in zip(texts, all_spans, strict=True) for s, e in spans]
    long_words: list[dict[int, list[Span]]] = []
    for t, spans in zip(texts, all_spans, strict=True):
        long_words.append({s: word_spans(t, s, e) for s, e in spans if e - s > max_chars})
    words_flat = [t[a:b] for t, lw in zip(texts, long_words, strict=True) for ws in lw.values() for a, b in ws]
    items = flat + words_flat
    all_lex = lexemes_of(items) if items else []
    sentence_lex, word_lex = iter(all_lex[: len(flat)]), iter(all_lex[len(flat) :])
    out: list[Analysis] = []
    for spans, lw in zip(all_spans, long_words, strict=True):
        lex = [next(sentence_lex) for _ in spans]
        words = {start: (ws, [next(word_lex) for _ in ws]) for start, ws in lw.items()}
        out.append(Analysis(spans, lex, words))
    return out


def encode(analysis: Analysis, max_chars: int = MAX_QUOTE_CHARS) -> str:
    """``analysis`` as the JSON text ingest stores beside a chunk (``decode`` reads it back)."""
    sentences = [
        [s, e, sorted(lx)]
        + (
            [[[a, b, sorted(wl)] for (a, b), wl in zip(*analysis.long_words[s], strict=True)]]
            if s in analysis.long_words
            else []
        )
        for (s, e), lx in zip(analysis.spans, analysis.lexemes, strict=True)
    ]
    return json.dumps(
        {"v": ANALYSIS_VERSION, "max": max_chars, "s": sentences}, ensure_ascii=False, separators=(",", ":")
    )


def decode(stored: str | None, max_chars: int = MAX_QUOTE_CHARS) -> Analysis | None:
    """The ``Analysis`` in ``stored`` (``encode``'s text), or None when there is none or it was made by another
    version or for another quote limit (the caller then analyses the text itself)."""
    if not stored:
        return None
    data = json.loads(stored)
    if data.get("v") != ANALYSIS_VERSION or data.get("max") != max_chars:
        return None
    spans: list[Span] = []
    lexemes: list[set[str]] = []
    long_words: dict[int, tuple[list[Span], list[set[str]]]] = {}
    for row in data["s"]:
        spans.append((row[0], row[1]))
        lexemes.append(set(row[2]))
        if len(row) > 3:
            long_words[row[0]] = ([(w[0], w[1]) for w in row[3]], [set(w[2]) for w in row[3]])
    return Analysis(spans, lexemes, long_words)


def _unstemmed(text: str) -> Analysis:
    spans = sentence_spans(text)
    return Analysis(spans, [set() for _ in spans], {})


def quotes_and_matches(
    texts: Sequence[str],
    query_lexemes: set[str],
    lexemes_of: LexemesOf,
    max_chars: int = MAX_QUOTE_CHARS,
    weights: Mapping[str, float] | None = None,
    question: str | None = None,
    stored: Sequence[Analysis | None] | None = None,
    cuts: list[tuple[bool, bool]] | None = None,
) -> tuple[list[Span], list[set[str]]]:
    """``select_quotes`` and, for each text, the query lexemes it contains anywhere (match strength's coverage),
    from the same stemming call. ``weights`` (the query lexemes' IDF) make rare terms count for more than common
    ones; ``question`` (the query text) tells what kind of answer is asked for (``asked_type``). ``stored``: the
    texts' analyses where ingest stored them (None for a text without one): only the others are analysed, in one
    ``lexemes_of`` call, or none when every text has its analysis. ``cuts`` (when given) gets, for each text,
    whether its quote starts and whether it ends inside a sentence (``inside_sentence``): faces show "…" there."""
    analyses: list[Analysis | None] = list(stored) if stored is not None else [None] * len(texts)
    if query_lexemes:
        missing = [i for i, a in enumerate(analyses) if a is None]
        if missing:
            for i, a in zip(missing, analyse([texts[i] for i in missing], lexemes_of, max_chars), strict=True):
                analyses[i] = a
    kind = asked_type(question) if question else None
    scoring = {t for t in query_lexemes if _counts(t)} or query_lexemes
    question_words = {fold_word(w) for w in _NAME.findall(question or "")}
    out: list[Span] = []
    matched: list[set[str]] = []
    for idx, text in enumerate(texts):
        a = analyses[idx] or _unstemmed(text)  # none only without query lexemes: nothing can match
        spans, lex = a.spans, a.lexemes
        matched.append(set().union(*lex) & query_lexemes if lex else set())
        if not spans:
            out.append((0, 0))
            if cuts is not None:
                cuts.append((False, False))
            continue
        lex = _extended(lex, scoring)
        typed = [holds_type(text[s:e], kind, question_words) for s, e in spans] if kind else None
        local = _within_chunk(weights, scoring, lex)
        i, j = _best_window(spans, lex, scoring, max_chars, local, typed) if scoring else (0, 0)
        if not any(lx & scoring for lx in lex[i : j + 1]):
            i, j = 0, 0  # no overlap anywhere: the first sentence(s)
        i, j = _widen(spans, i, j, max_chars)
        s, e = _fill(text, spans, i, j, max_chars)
        if e - s > max_chars:  # one sentence over the limit (a window of several never is): cut at its words
            words, word_lex = a.long_words.get(s) or (word_spans(text, s, e), [])
            word_lex = word_lex or [set() for _ in words]
            s, e = _cut(words, [lx & scoring for lx in word_lex], s, e, max_chars, local)
        out.append((s, e))
        if cuts is not None:
            cuts.append(inside_sentence(spans, s, e))
    return out, matched


def inside_sentence(spans: Sequence[Span], start: int, end: int) -> tuple[bool, bool]:
    """Whether the quote ``[start, end)`` starts inside a sentence of ``spans`` (not at its first character) and
    whether it ends inside one (before its last): a face shows "…" on that side; the offsets stay exact."""
    starts = {a for a, _ in spans}
    ends = {b for _, b in spans}
    return (bool(spans) and start not in starts, bool(spans) and end not in ends)


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
