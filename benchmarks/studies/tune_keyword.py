"""Keyword-leg variants measured offline: chunk BM25 with the document title as extra terms, whole-document BM25,
and document-level evidence, all computed in Python from one read of a collection's postings.

It reads the postings of the query lexemes that ``benchmarks/studies/tune_fusion.py collect`` saved (the set's cache
file names the collection and each query's lexemes), plus every document's title stemmed as the keyword leg stems.
BM25 is Lucene's (k1 0.9, b 0.4; IDF ln(1 + (N − df + .5)/(df + .5)), N = chunks), as ``Store.keyword_search``
computes it; ``chunk`` must reproduce the service's keyword leg (checked: the first line of the table).

    KAYNAK_DATA_DIR=/tmp/p17a-data python benchmarks/studies/tune_keyword.py scifact-pool

Variants: ``chunk`` (today), ``title×w`` (the title's terms added w times to each chunk of its document,
BM25F-style: tf and chunk length grow, as migration 10 writes the postings), ``document`` (whole-document
BM25, the reference), ``+doc β`` (a chunk's score plus β × the best score among its document's other chunks).
docs/adr/0017-fusion-by-measurement.md.

Since migration 10 the postings already hold the title's terms (weight 1): on a migrated collection ``chunk`` is
the shipped leg and ``title×w`` adds w more; the ADR's figures were read before the migration (the SQL leg after it
gave the ``title×1`` figure exactly).
"""

from __future__ import annotations

import argparse
import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from tune_fusion import CACHE, DEPTH, K

from kaynak.evaluation import metrics as M

K1, B = 0.9, 0.4


def postings_of(conn: Any, collection_id: int, lexemes: Sequence[str]) -> list[tuple[str, str, int]]:
    """(lexeme, chunk id, tf) of every posting of ``lexemes`` in the collection."""
    return conn.execute(
        "SELECT p.lexeme, k.id, p.tf FROM postings p JOIN chunks k ON kaynak_chunk_key(k.id) = p.chunk_key "
        "WHERE p.collection_id = %s AND p.lexeme = ANY(%s)",
        (collection_id, list(lexemes)),
    ).fetchall()


class Index:
    """The postings of the query lexemes, the chunk lengths and documents, and the titles' lexemes."""

    def __init__(self, ctx: Any, collection: str, lexemes: Sequence[str]) -> None:
        col = ctx.store.get_collection(collection)
        with ctx.store._conn() as conn:
            rows = postings_of(conn, col.id, lexemes)
            chunks = conn.execute(
                "SELECT c.id, d.source, c.document_id, (SELECT coalesce(sum(cardinality(positions)), 0) "
                "FROM unnest(c.tsv)) FROM chunks c JOIN documents d ON d.id = c.document_id "
                "WHERE c.collection_id = %s",
                (col.id,),
            ).fetchall()
            titles = conn.execute(
                "SELECT d.source, u.lexeme, cardinality(u.positions) FROM documents d, "
                "unnest(to_tsvector(%s::regconfig, tr_lower(d.title))) u WHERE d.collection_id = %s",
                (col.language, col.id),
            ).fetchall()
        self.postings: dict[str, dict[str, int]] = defaultdict(dict)
        for lex, cid, tf in rows:
            self.postings[lex][cid] = int(tf)
        self.dl = {r[0]: int(r[3]) for r in chunks}
        self.doc = {r[0]: r[1] for r in chunks}
        self.chunks_of: dict[str, list[str]] = defaultdict(list)
        for cid, src in self.doc.items():
            self.chunks_of[src].append(cid)
        self.title: dict[str, dict[str, int]] = defaultdict(dict)  # lexeme → {document: tf in its title}
        self.title_len: dict[str, int] = defaultdict(int)
        for src, lex, tf in titles:
            self.title[lex][src] = int(tf)
            self.title_len[src] += int(tf)


def _bm25(tf: float, dl: float, avgdl: float, idf: float) -> float:
    return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))


def _idf(n: float, df: float) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def chunk_scores(ix: Index, lexemes: Sequence[str], w: int) -> dict[str, float]:
    """Chunk BM25 with the title's terms added ``w`` times (w = 0: today's leg)."""
    dl = {c: d + w * ix.title_len.get(ix.doc[c], 0) for c, d in ix.dl.items()}
    n = float(len(dl))
    avgdl = max(sum(dl.values()) / max(n, 1), 1.0)
    scores: dict[str, float] = defaultdict(float)
    for lex in lexemes:
        tfs = dict(ix.postings.get(lex, {}))
        for src, t in ix.title.get(lex, {}).items() if w else ():
            for c in ix.chunks_of[src]:
                tfs[c] = tfs.get(c, 0) + w * t
        if not tfs:
            continue
        idf = _idf(n, len(tfs))
        for c, tf in tfs.items():
            scores[c] += _bm25(tf, dl[c], avgdl, idf)
    return scores


def document_scores(ix: Index, lexemes: Sequence[str]) -> dict[str, float]:
    """Whole-document BM25 (the chunks' terms summed per document), keyed by each document's first chunk."""
    dl: dict[str, int] = defaultdict(int)
    for c, d in ix.dl.items():
        dl[ix.doc[c]] += d
    n = float(len(dl))
    avgdl = max(sum(dl.values()) / max(n, 1), 1.0)
    scores: dict[str, float] = defaultdict(float)
    for lex in lexemes:
        tfs: dict[str, int] = defaultdict(int)
        for c, tf in ix.postings.get(lex, {}).items():
            tfs[ix.doc[c]] += tf
        idf = _idf(n, len(tfs)) if tfs else 0.0
        for src, tf in tfs.items():
            scores[ix.chunks_of[src][0]] += _bm25(tf, dl[src], avgdl, idf)
    return scores


def with_document_evidence(ix: Index, scores: Mapping[str, float], beta: float) -> dict[str, float]:
    """Each chunk's score plus ``beta`` × the best score among its document's other chunks."""
    best: dict[str, list[float]] = defaultdict(list)
    for c, s in scores.items():
        best[ix.doc[c]].append(s)
    out = {}
    for c, s in scores.items():
        others = sorted(best[ix.doc[c]], reverse=True)
        other = others[1] if others[0] == s and len(others) > 1 else (others[0] if others[0] != s else 0.0)
        out[c] = s + beta * other
    return out


def top(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:DEPTH]


def evaluate(ix: Index, data: Mapping[str, Any], ranked: Mapping[str, list[tuple[str, float]]]) -> float:
    run = {q: M.first_rank_per_document(ix.doc[c] for c, _ in r) for q, r in ranked.items()}
    means, _ = M.evaluate(run, {q: data["qrels"][q] for q in run}, K)
    return means[f"nDCG@{K}"]


def variants(ix: Index, queries: Mapping[str, list[str]], weights: Sequence[int], betas: Sequence[float]) -> dict:
    out: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for w in weights:
        base = {q: chunk_scores(ix, lx, w) for q, lx in queries.items()}
        out["chunk" if w == 0 else f"title×{w}"] = {q: top(s) for q, s in base.items()}
        for beta in betas:
            name = ("chunk" if w == 0 else f"title×{w}") + f" +doc {beta:g}"
            out[name] = {q: top(with_document_evidence(ix, s, beta)) for q, s in base.items()}
    out["document (whole-document BM25)"] = {q: top(document_scores(ix, lx)) for q, lx in queries.items()}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set")
    ap.add_argument("--weights", default="0,1,2,3")
    ap.add_argument("--betas", default="0.1,0.25")
    ap.add_argument("--save", action="store_true", help="store each variant as keyword:<name> in the set's cache")
    args = ap.parse_args(argv)
    from kaynak.context import Context

    path = CACHE / f"{args.set}.json"
    data = json.loads(path.read_text())
    queries = {
        q: [lx for lxs in v["lexemes"].values() for lx in lxs] for q, v in data["queries"].items() if q in data["qrels"]
    }
    ctx = Context()
    try:
        ix = Index(ctx, data["collection"], sorted({lx for lxs in queries.values() for lx in lxs}))
    finally:
        ctx.close()
    service = {q: data["queries"][q]["legs"].get("keyword", []) for q in queries}
    print(f"| keyword leg on {args.set} | nDCG@10 |\n| --- | --- |")
    print(f"| service (SQL) | {evaluate(ix, data, service):.4f} |")
    ranked = variants(
        ix, queries, [int(x) for x in args.weights.split(",")], [float(x) for x in args.betas.split(",") if x]
    )
    for name, r in ranked.items():
        print(f"| {name} | {evaluate(ix, data, r):.4f} |", flush=True)
        if args.save:
            for q, lst in r.items():
                data["queries"][q]["legs"][f"keyword:{name}"] = lst
    if args.save:
        data["source"].update(ix.doc)
        path.write_text(json.dumps(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
