"""Quote selection: verbatim windows of ≤ 320 characters around the query's stems."""

from __future__ import annotations

import re

from kaynak.quotes import (
    MAX_QUOTE_CHARS,
    asked_type,
    highlight_spans,
    holds_type,
    inside_sentence,
    quotes_and_matches,
    select_quotes,
    sentence_spans,
)
from kaynak.store import Store
from kaynak.text import tr_lower


def words_of(texts: list[str]) -> list[set[str]]:
    """A stand-in for Store.lexemes_of: lower-cased words, no stemming."""
    return [set(re.findall(r"\w+", tr_lower(t))) for t in texts]


FILLER = "This sentence is only here to take up room in the chunk. "


def test_best_window_is_verbatim_and_bounded() -> None:
    text = FILLER * 3 + "The pump seals fail at high pressure. They are replaced yearly. " + FILLER * 4
    [(s, e)] = select_quotes([text], {"pump", "seals", "pressure"}, words_of)
    quote = text[s:e]
    assert "The pump seals fail at high pressure." in quote
    assert len(quote) <= MAX_QUOTE_CHARS
    assert quote == quote.strip()
    # the window is widened with whole sentences: the answer after the matching sentence comes along
    assert "They are replaced yearly." in quote


def test_more_overlap_wins_over_earlier() -> None:
    text = "Pumps are loud. " + FILLER * 8 + "Pump seals fail under pressure."
    [(s, e)] = select_quotes([text], {"pump", "seals", "pressure"}, words_of)
    assert "Pump seals fail under pressure." in text[s:e]


def test_no_overlap_gives_first_sentences() -> None:
    text = "First sentence here. Second one follows. " + FILLER * 10
    [(s, e)] = select_quotes([text], {"zebra"}, words_of)
    assert s == 0 and text[s:e].startswith("First sentence here. Second one follows.")
    assert e - s <= MAX_QUOTE_CHARS
    [(s2, e2)] = select_quotes([text], set(), words_of)
    assert (s2, e2) == (s, e)


def test_long_sentence_cut_at_word_boundaries_around_matches() -> None:
    words = [f"word{i}" for i in range(200)]
    words[150] = "needle"
    text = " ".join(words) + "."
    [(s, e)] = select_quotes([text], {"needle"}, words_of)
    quote = text[s:e]
    assert "needle" in quote and len(quote) <= MAX_QUOTE_CHARS
    assert (s == 0 or not text[s - 1].isalnum()) and not text[s].isspace()
    assert e == len(text) or not text[e].isalnum()
    centre = text.index("needle") - s
    assert 60 < centre < 260  # roughly centred, not at the edge


def test_long_sentence_without_match_starts_at_the_start() -> None:
    text = " ".join(f"w{i}" for i in range(300))
    [(s, e)] = select_quotes([text], {"absent"}, words_of)
    assert s == 0 and e <= MAX_QUOTE_CHARS and not text[e - 1].isspace()


def test_single_overlong_word() -> None:
    text = "x" * 1000
    [(s, e)] = select_quotes([text], {"y"}, words_of)
    assert e - s == MAX_QUOTE_CHARS


def test_empty_and_whitespace_texts() -> None:
    assert select_quotes(["", "   "], {"a"}, words_of) == [(0, 0), (0, 0)]
    assert sentence_spans("  \n ") == []


def test_batch_uses_few_lexeme_calls() -> None:
    calls = []

    def counting(texts: list[str]) -> list[set[str]]:
        calls.append(len(texts))
        return words_of(texts)

    texts = [FILLER * 3 + "needle here.", "needle " + "x " * 400, "nothing"]
    spans = select_quotes(texts, {"needle"}, counting)
    assert len(spans) == 3 and len(calls) <= 2
    for t, (s, e) in zip(texts, spans, strict=True):
        assert e - s <= MAX_QUOTE_CHARS and t[s:e] == t[s:e].strip()


def test_highlight_spans() -> None:
    [spans] = highlight_spans(["Kat malikleri kurulu toplanır."], {"kurulu"}, words_of)
    assert spans == [(14, 20)]
    assert highlight_spans(["abc"], set(), words_of) == [[]]


def test_turkish_stems_with_the_store(store: Store) -> None:
    text = (
        "Bu yönetmelik asansörlerin bakımını düzenler. "
        "Kat malikleri kurulu yılda bir kez toplanır ve yöneticiyi seçer. "
        "Iğdır ilinde de aynı kurallar geçerlidir."
    )
    query = set(store.query_lexemes("turkish", "KAT MALİKLERİ KURULU NE ZAMAN TOPLANIR"))
    [(s, e)] = select_quotes([text], query, lambda t: store.lexemes_of("turkish", t), max_chars=80)
    assert text[s:e] == "Kat malikleri kurulu yılda bir kez toplanır ve yöneticiyi seçer."
    query = set(store.query_lexemes("turkish", "IĞDIR"))
    [(s, e)] = select_quotes([text], query, lambda t: store.lexemes_of("turkish", t), max_chars=60)
    assert text[s:e].startswith("Iğdır ilinde")
    [spans] = highlight_spans([text], query, lambda t: store.lexemes_of("turkish", t))
    assert [text[a:b] for a, b in spans] == ["Iğdır"]


def test_rare_terms_weigh_more_than_common_ones() -> None:
    filler = "Nothing to see in this sentence at all, it only fills the chunk up. " * 4
    common = "The team played the game in the city on a cold day. "
    rare = "Kuechly led the team in tackles. "
    text = common + filler + rare
    query = {"team", "game", "city", "kuechly"}
    [(s, e)] = quotes_and_matches([text], query, words_of)[0]
    assert "Kuechly" not in text[s:e]  # by count, the common sentence (three terms) wins
    spans, matched = quotes_and_matches(
        [text], query, words_of, weights={"team": 0.1, "game": 0.2, "city": 0.3, "kuechly": 5.0}
    )
    (s, e) = spans[0]
    assert "Kuechly led the team" in text[s:e] and len(text[s:e]) <= MAX_QUOTE_CHARS
    assert matched == [query]  # every query term the chunk holds, wherever (match strength's coverage)


def test_the_kind_of_answer_asked_for() -> None:
    assert asked_type("Varşova borsası ne zaman yeniden açıldı?") == "date"
    assert asked_type("Panthers savunması kaç sayı bıraktı?") == "number"
    assert asked_type("Who founded the company?") == "person" and asked_type("Kimya nedir?") is None
    assert holds_type("It reopened in April 1991.", "date", set())
    assert holds_type("They allowed 308 points.", "number", set())
    assert holds_type("The record was held by John Elway.", "person", {"record"})
    assert not holds_type("the record was held by nobody.", "person", set())
    filler = "Nothing to see in this sentence at all, it only fills the chunk up. " * 5
    text = "The exchange was closed for years. " + filler + "The exchange reopened in April 1991. "
    [(s, e)] = quotes_and_matches([text], {"exchange"}, words_of, question="When did the exchange reopen?")[0]
    assert "1991" in text[s:e]


def test_a_query_stem_matches_the_longer_stem_it_begins() -> None:
    """The stemmer leaves a suffix on one side now and then (``marş`` in the question, ``marşı`` in the text): the
    sentence holding the rare term wins over one holding only the common ones."""
    filler = "Bu cümle yalnızca yer kaplamak için burada duruyor ve başka bir şey söylemiyor. " * 4
    text = "Super Bowl maçı Şubat ayında oynandı. " + filler + "Lady Gaga ulusal marşı söyledi. "
    query = {"super", "bowl", "ulusal", "marş"}
    weights = {"super": 1.0, "bowl": 1.0, "ulusal": 0.5, "marş": 3.0}
    [(s, e)] = quotes_and_matches([text], query, words_of, weights=weights)[0]
    assert "Lady Gaga ulusal marşı söyledi." in text[s:e]
    # a short query stem (fewer than four letters) does not: "bow" would begin "bowl"
    [(s, e)] = quotes_and_matches([text], {"bow", "ulusal"}, words_of, weights={"bow": 5.0, "ulusal": 1.0})[0]
    assert "Lady Gaga" in text[s:e]
    # coverage (match strength) still counts only exact lexemes
    assert quotes_and_matches([text], query, words_of, weights=weights)[1] == [{"super", "bowl", "ulusal"}]


def test_ties_go_to_the_earlier_window() -> None:
    """Two sentences holding the same terms: the earlier one is quoted, so what follows it comes along."""
    filler = "Nothing to see in this sentence at all, it only fills the chunk up. " * 3
    text = "A turbine has rotors (rotating discs) on a shaft. " + filler + "The rotors carry blades. " + filler
    [(s, e)] = quotes_and_matches([text], {"rotors"}, words_of)[0]
    assert text[s:e].startswith("A turbine has rotors (rotating discs)")


def test_a_long_sentence_is_cut_around_the_rarest_terms_not_the_most_words() -> None:
    head = "Since 1972 the United Kingdom, Ireland and Denmark came in, "
    middle = " ".join(f"then country{i} in year{i}" for i in range(40))
    tail = ", and more states joined the union and joined the market, and joined again in 2013."
    text = head + middle + tail
    query = {"denmark", "joined"}
    [(s, e)] = quotes_and_matches([text], query, words_of, weights={"denmark": 5.0, "joined": 0.5})[0]
    assert "Denmark" in text[s:e] and "1972" in text[s:e] and e - s <= MAX_QUOTE_CHARS
    # the three "joined" at the end weigh one term's weight, not three
    [(s, e)] = quotes_and_matches([text], query, words_of, weights={"denmark": 1.2, "joined": 1.0})[0]
    assert "Denmark" in text[s:e]
    [(s, e)] = quotes_and_matches([text], query, words_of, weights={"denmark": 0.8, "joined": 1.0})[0]
    assert "Denmark" not in text[s:e] and "2013" in text[s:e]


def test_quotes_say_where_they_stop_inside_a_sentence() -> None:
    spans = [(0, 10), (11, 30)]
    assert inside_sentence(spans, 0, 30) == (False, False)
    assert inside_sentence(spans, 0, 20) == (False, True)
    assert inside_sentence(spans, 13, 30) == (True, False)
    assert inside_sentence([], 0, 0) == (False, False)
    text = FILLER * 3 + "The pump seals fail at high pressure. They are replaced yearly. " + FILLER * 4
    long = "word " * 200
    cuts: list[tuple[bool, bool]] = []
    [(s, e), (ls, le), _], _found = quotes_and_matches([text, long, "   "], {"pump", "seals"}, words_of, cuts=cuts)
    assert len(cuts) == 3 and cuts[2] == (False, False)
    spans_of_text = sentence_spans(text)
    assert cuts[0] == inside_sentence(spans_of_text, s, e)
    assert cuts[1][1] and le - ls <= MAX_QUOTE_CHARS  # one over-long sentence: cut inside it, and it says so
