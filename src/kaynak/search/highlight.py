"""Highlight the words of a text that match a query's terms, stemmed with each collection's language."""

from __future__ import annotations

from collections.abc import Sequence

from kaynak.quotes import highlight_spans, word_spans
from kaynak.search.hits import lexemes_of
from kaynak.search.plan import SearchPlan
from kaynak.store import Store
from kaynak.vocabulary import Language

# how words in `simple` collections are matched for highlighting
SIMPLE_HIGHLIGHT = (Language.ENGLISH.value, Language.TURKISH.value)


def highlight_texts(
    store: Store, text: str, items: Sequence[tuple[str, str]], plan: SearchPlan | None = None
) -> list[list[tuple[int, int]]]:
    """For each ``(collection, text)``, the spans of the text's words that match the checked query ``text``'s
    terms, stemmed with the collection's language. With the search's ``plan``, its languages and lexemes are
    reused (no stemming of the query again)."""
    out: list[list[tuple[int, int]]] = [[] for _ in items]
    languages: dict[str, str] = {c.name: c.language for c in plan.collections} if plan else {}
    for collection, _ in items:
        if collection not in languages:
            languages[collection] = store.get_collection(collection).language
    for language in sorted(set(languages.values())):
        idx = [i for i, (collection, _) in enumerate(items) if languages[collection] == language]
        if not idx:
            continue
        if language == Language.SIMPLE:  # no stemming, no stop words: match as English and as Turkish words do
            texts = [items[i][1] for i in idx]
            words = [t[a:b] for t in texts for a, b in word_spans(t)]
            question = plan.text if plan else text
            qwords = [question[a:b] for a, b in word_spans(question)]
            lex = [_content(x) for x in store.lexemes_in(SIMPLE_HIGHLIGHT, [*qwords, *words])]
            qlex = set().union(*lex[: len(qwords)]) if qwords else set()

            def of_words(_words: list[str], lex: list[set[str]] = lex[len(qwords) :]) -> list[set[str]]:
                return lex

            spans = highlight_spans(texts, qlex, of_words)
        else:
            if plan is not None and language in plan.query_lexemes:
                qlex = set(plan.query_lexemes[language])
            else:  # the lexemes a search's plan would have: per-document languages too (issue 50)
                names = sorted({items[i][0] for i in idx})
                qlex = {lx for lx, _ in store.plan_facts(names, text)[1].get(language, [])}
            spans = highlight_spans([items[i][1] for i in idx], qlex, lexemes_of(store, language))
        for i, sp in zip(idx, spans, strict=True):
            out[i] = sp
    return out


def _content(tags: set[str]) -> set[str]:
    """A word's ``language:lexeme`` tags (``Store.lexemes_in``), or none when it is a stop word in any of the
    languages (it has no lexeme there)."""
    return tags if {t.split(":", 1)[0] for t in tags} >= set(SIMPLE_HIGHLIGHT) else set()
