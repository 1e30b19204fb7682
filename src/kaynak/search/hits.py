"""Turn fused candidates into hits: query syntax, grouping, quotes, duplicates collapsed, match strength, marks.

Quotes are the best sentence window of each chunk (``kaynak.quotes``), verbatim, with page offsets; hits whose
quotes overlap in one document collapse into the better one (its ``scores["merged_rank"]``); each hit gets its
match strength (``kaynak.match``), its OCR confidence and whether its file changed on disk since it was indexed.
Query syntax (``kaynak.syntax``): ``"exact phrase"`` keeps only the candidates holding the phrase, ``-word`` drops
those with the word.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from kaynak.fusion import Fused
from kaynak.match import (
    features,
    match_of,
    model_name,
    no_good_match,
    passage_language,
    stub,
    weighted_coverage,
    wordless,
)
from kaynak.quotes import MAX_QUOTE_CHARS, decode, quotes_and_matches
from kaynak.search.plan import SearchPlan
from kaynak.staleness import stale_files
from kaynak.store import Store
from kaynak.store.catalogue import HitChunk
from kaynak.syntax import ParsedQuery
from kaynak.types import ChunkRecord, Hit, Quote
from kaynak.vocabulary import Language, Leg, SearchMode

DUPLICATE_SPARE = 5  # candidates quoted beyond k, so that hits whose quotes overlap can collapse and k remain
# collection languages a query's language can differ from ("simple": any)
LANGUAGE_NAMES = (Language.TURKISH.value, Language.ENGLISH.value)


class SearchResults(list[Hit]):
    """The hits of one search (a list, best first) with the plan that produced them (``.plan``): faces show the
    mode and collections and highlight with the plan's lexemes instead of planning or stemming again.
    ``no_good_match``: no hit is likely to answer (every hit's match is ``weak``, or there are none)."""

    def __init__(
        self, hits: Sequence[Hit] = (), plan: SearchPlan | None = None, features: Sequence[dict[str, float]] = ()
    ) -> None:
        super().__init__(hits)
        self.plan = plan
        self.features = list(features)  # each hit's match-strength features (benchmarks/studies/match_calibration.py)

    @property
    def no_good_match(self) -> bool:
        return no_good_match([h.match or {} for h in self])


def lexemes_of(store: Store, language: str) -> Callable[[list[str]], list[set[str]]]:
    """Stems texts' words with ``language`` (what the quotes and highlighting match against the query's lexemes)."""
    return lambda texts: store.lexemes_of(language, texts)


def admitted(
    fused: list[Fused], records: Mapping[str, ChunkRecord], syntax: ParsedQuery, plan: SearchPlan
) -> list[Fused]:
    """Only the candidates holding every quoted phrase and none of the excluded words. When none holds the
    phrase, as web search engines do: say so in the plan and keep the candidates without it."""
    kept = [f for f in fused if f.id in records and syntax.admits(records[f.id].text)]
    if not kept and syntax.phrases:
        loose = ParsedQuery(syntax.text, [], syntax.excluded)
        kept = [f for f in fused if f.id in records and loose.admits(records[f.id].text)]
        plan.phrase_missing = True
        plan.reason += "; no passage holds the quoted phrase: hits without it"
    return kept


def best_per_document(fused: list[Fused], records: Mapping[str, ChunkRecord]) -> tuple[list[Fused], dict[str, int]]:
    """Each document's best candidate, in order, and how many candidates each document had."""
    best: dict[int, Fused] = {}
    counts: dict[int, int] = {}
    for f in fused:
        if f.id not in records:
            continue
        doc = records[f.id].document_id
        best.setdefault(doc, f)
        counts[doc] = counts.get(doc, 0) + 1
    return list(best.values()), {f.id: counts[doc] for doc, f in best.items()}


def hit_marks(ids: Sequence[str], facts: Mapping[str, HitChunk]) -> tuple[dict[str, float], set[str]]:
    """The OCR confidence of the chunks on OCR'd pages and the chunks whose file changed on disk, from the facts
    fetched with the chunks (``Store.hit_chunks``)."""
    ocr = {i: c for i in ids if i in facts and (c := facts[i].ocr) is not None}
    stale = stale_files({i: facts[i].file for i in ids if i in facts})
    return ocr, stale


def build_hits(
    store: Store,
    top: list[Fused],
    records: Mapping[str, ChunkRecord],
    plan: SearchPlan,
    rerank_scores: Mapping[str, float],
    ocr: Mapping[str, float],
    stale: set[str],
    k: int | None = None,
    features_out: list[dict[str, float]] | None = None,
    sentences: Mapping[str, str | None] | None = None,
) -> list[Hit]:
    """The hits of the candidates ``top`` (best first): quotes, match strength, OCR (``ocr``: chunk id → page
    confidence) and stale marks; hits whose quotes overlap in one document collapse into the better one; at most
    ``k`` (default: all). Each hit's match-strength features go to ``features_out``. ``sentences``: chunk id → its
    sentence analysis stored at ingest (``HitChunk.sentences``); the chunks without one are analysed here."""
    sentences = sentences or {}
    language_of = {c.name: c.language for c in plan.collections}
    embedder_of = {c.name: c.embedder for c in plan.collections}
    quotes: dict[str, tuple[int, int]] = {}
    cut: dict[str, tuple[bool, bool]] = {}  # the quote starts / ends inside a sentence
    matched: dict[str, set[str]] = {}
    for language in sorted(set(language_of.values())):
        ids = [f.id for f in top if language_of.get(records[f.id].collection) == language]
        if not ids:
            continue
        cuts: list[tuple[bool, bool]] = []
        spans, found = quotes_and_matches(
            [records[i].text for i in ids],
            set(plan.query_lexemes.get(language, [])),
            lexemes_of(store, language),
            MAX_QUOTE_CHARS,
            plan.term_weights.get(language),
            plan.text,
            [decode(sentences.get(i)) for i in ids],
            cuts,
        )
        quotes.update(zip(ids, spans, strict=True))
        cut.update(zip(ids, cuts, strict=True))
        matched.update(zip(ids, found, strict=True))
    asks = not wordless(plan.text)
    hits: list[Hit] = []  # the real passages so far (duplicates collapse into them)
    built: list[tuple[Hit, dict[str, float]]] = []
    stubs: list[tuple[Hit, dict[str, float]]] = []  # headings and scraps: only after the real passages
    for rank, f in enumerate(top, start=1):
        rec = records[f.id]
        s, e = quotes.get(f.id, (0, min(len(rec.text), MAX_QUOTE_CHARS)))
        first = next((h for h in hits if _overlaps(h, rec, s, e)), None)
        if first is not None:  # the same passage as a better hit: remember where it ranked
            first.scores.setdefault("merged_rank", rank)
            continue
        if k is not None and len(hits) >= k:
            continue
        tiny = stub(rec.text)  # a heading or a few characters: after every real passage, weak (issue 51)
        scores = _scores(f, rerank_scores)
        language = language_of.get(rec.collection, "")
        coverage = weighted_coverage(matched.get(f.id, set()), plan.term_weights.get(language, {}))
        scores["coverage"] = round(coverage, 4)  # the IDF-weighted share of the query's terms in the chunk
        # the passage's own language (a collection may hold both): a Turkish question about a Turkish page of an
        # "english" collection is not a cross-language match (issue 51)
        written = passage_language(rec.text, language)
        cross = plan.query_language is not None and written in LANGUAGE_NAMES and written != plan.query_language
        feats = features(scores, coverage, plan.keyword_coverage, plan.vector_reference, cross)
        has_vector = plan.mode != SearchMode.KEYWORD and scores["vector"] is not None
        match = match_of(feats, model_name(embedder_of.get(rec.collection), has_vector), asks and not tiny)
        hit = (
            Hit(
                chunk_id=rec.id,
                collection=rec.collection,
                source=rec.source,
                title=rec.title,
                page=rec.page,
                section=rec.section,
                char_start=rec.char_start,
                char_end=rec.char_end,
                score=rerank_scores.get(f.id, f.score) if rerank_scores else f.score,
                scores=scores,
                quote=Quote(rec.text[s:e], rec.char_start + s, rec.char_start + e, *cut.get(f.id, (False, False))),
                text=rec.text,
                document_id=rec.document_id,
                ocr={"confidence": ocr[rec.id]} if rec.id in ocr else None,
                stale=rec.id in stale,
                match=match,
            ),
            feats,
        )
        (stubs if tiny else built).append(hit)
        if not tiny:
            hits.append(hit[0])
    built += stubs[: max(0, k - len(built))] if k is not None else stubs
    if features_out is not None:
        features_out.extend(f for _, f in built)
    return [h for h, _ in built]


def _scores(f: Fused, rerank_scores: Mapping[str, float]) -> dict[str, float | int | None]:
    """A hit's per-leg ranks and scores, the fused score (whatever the fusion: RRF or convex) and the reranker's."""
    return {
        "vector": f.scores.get(Leg.VECTOR),
        "vector_rank": f.ranks.get(Leg.VECTOR),
        "keyword": f.scores.get(Leg.KEYWORD),
        "keyword_rank": f.ranks.get(Leg.KEYWORD),
        "fused": f.score,
        "rerank": rerank_scores.get(f.id),
    }


def _overlaps(hit: Hit, rec: ChunkRecord, start: int, end: int) -> bool:
    """Whether the quote ``rec.text[start:end]`` overlaps ``hit``'s quote on the same page of the same document."""
    if hit.document_id != rec.document_id or hit.page != rec.page or hit.collection != rec.collection:
        return False
    a, b = rec.char_start + start, rec.char_start + end
    return a < hit.quote.char_end and hit.quote.char_start < b
