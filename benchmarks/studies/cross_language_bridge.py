"""Turkish questions about English documents: does bridging the keyword leg through the embedder's space help?

Issue 27 item 7. The bridge: every Turkish content word of the question is embedded by e5-small (as a query) beside
every word of the English collection's vocabulary (surface words of three letters or more, embedded once, as an
ingest step would); each Turkish word adds its nearest English words above a cosine threshold to the keyword
query, stemmed by the collection's English configuration. BM25 (k1 1.2, b 0.75, over the same stems PostgreSQL
gives) runs with the question's own stems (what kaynak does today: names and numbers match across languages) and
with the bridged stems; each is fused with the vector leg by RRF (k 60) and scored by nDCG@10 on the dev sets'
XQuAD tr → en questions (632 Turkish questions, the 120 English dev paragraphs). Also English → English as the
check that nothing is lost where no bridge is needed (the bridge is off there: the question's language is the
collection's).

    python benchmarks/studies/cross_language_bridge.py [--neighbours 1,2,3] [--threshold 0.80,0.85,0.90]

Needs the embedded PostgreSQL only for stemming (``Store.lexemes_of``); everything else runs in this process.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ (common)
from kaynak.embeddings import get_embedder
from kaynak.fusion import rrf
from kaynak.store import Store
from kaynak.store.server import embedded_uri

from common import RETRIEVAL as DATA
from common import mean_ndcg, read_jsonl

WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)


def fold(word: str) -> str:
    return word.replace("I", "ı").replace("İ", "i").lower()


def qrels_of(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        out.setdefault(qid, {})[doc] = int(grade)
    return out


class BM25:
    """BM25 over per-document stem counts (stems from PostgreSQL's English configuration)."""

    def __init__(self, docs: dict[str, Counter[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.docs, self.k1, self.b = docs, k1, b
        self.avg = sum(sum(c.values()) for c in docs.values()) / len(docs)
        df: Counter[str] = Counter()
        for c in docs.values():
            df.update(c.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def search(self, terms: dict[str, float], depth: int = 100) -> list[tuple[str, float]]:
        scores = []
        for doc, c in self.docs.items():
            length = sum(c.values())
            s = 0.0
            for t, w in terms.items():
                tf = c.get(t, 0)
                if tf:
                    norm = self.k1 * (1 - self.b + self.b * length / self.avg)
                    s += w * self.idf[t] * tf * (self.k1 + 1) / (tf + norm)
            if s > 0:
                scores.append((doc, s))
        scores.sort(key=lambda x: (-x[1], x[0]))
        return scores[:depth]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--neighbours", default="1,2,3")
    ap.add_argument("--threshold", default="0.80,0.85,0.88,0.90")
    args = ap.parse_args()
    corpus = read_jsonl(DATA / "xquad" / "en" / "corpus.jsonl")
    sets = {
        "tr→en": ({q["_id"]: q["text"] for q in read_jsonl(DATA / "xquad" / "tr" / "queries.jsonl")}, True),
        "en→en": ({q["_id"]: q["text"] for q in read_jsonl(DATA / "xquad" / "en" / "queries.jsonl")}, False),
    }
    qrels = qrels_of(DATA / "xquad" / "en" / "qrels" / "test.tsv")
    store = Store(embedded_uri(Path(".kaynak") / "bench-bridge"))
    emb = get_embedder("e5-small")
    t0 = time.perf_counter()
    texts = {d["_id"]: (d.get("title", "") + " " + d["text"]).strip() for d in corpus}
    doc_words = {i: WORD.findall(t) for i, t in texts.items()}
    surface = sorted({w for ws in doc_words.values() for w in ws})
    stems = dict(zip(surface, store.lexemes_of("english", surface), strict=True))
    docs = {i: Counter(s for w in ws for s in stems[w]) for i, ws in doc_words.items()}
    bm25 = BM25(docs)
    vocab = sorted({fold(w) for w in surface if stems[w]})  # content words (stop words have no stem)
    vocab_vecs = emb.embed_queries(vocab)
    doc_ids = list(texts)
    doc_vecs = emb.embed_passages([texts[i] for i in doc_ids])
    print(f"vocabulary {len(vocab)} words, {len(doc_ids)} paragraphs, {time.perf_counter() - t0:.0f} s", flush=True)
    for name, (queries, bridge) in sets.items():
        ids = [q for q in queries if q in qrels]
        qtexts = [queries[q] for q in ids]
        qvecs = emb.embed_queries(qtexts)
        sims = qvecs @ doc_vecs.T
        vector = {
            q: sorted(zip(doc_ids, map(float, sims[n]), strict=True), key=lambda x: -x[1])[:100]
            for n, q in enumerate(ids)
        }
        own = [store.lexemes_of("english", [t])[0] for t in qtexts]
        words = [[fold(w) for w in WORD.findall(t)] for t in qtexts]
        turkish = store.lexemes_of("turkish", sorted({w for ws in words for w in ws}))
        content = {w for w, lx in zip(sorted({w for ws in words for w in ws}), turkish, strict=True) if lx}
        qwords = sorted(content)
        t1 = time.perf_counter()
        word_vecs = emb.embed_queries(qwords) if qwords else np.zeros((0, vocab_vecs.shape[1]))
        embed_s = time.perf_counter() - t1
        near = word_vecs @ vocab_vecs.T
        order = np.argsort(-near, axis=1)[:, :5]
        neighbours = {w: [(vocab[j], float(near[n, j])) for j in order[n]] for n, w in enumerate(qwords)}
        configs = [("vector only", None), ("hybrid, the question's own stems", (0, 1.0))]
        if bridge:
            for k in (int(x) for x in args.neighbours.split(",")):
                for tau in (float(x) for x in args.threshold.split(",")):
                    configs.append((f"hybrid, bridged: {k} neighbours ≥ {tau}", (k, tau)))
        print(f"\n{name}: {len(ids)} questions; {len(qwords)} distinct content words embedded in {embed_s:.1f} s")
        for label, cfg in configs:
            runs: dict[str, list[str]] = {}
            for n, q in enumerate(ids):
                if cfg is None:
                    runs[q] = [d for d, _ in vector[q][:10]]
                    continue
                k, tau = cfg
                terms = {t: 1.0 for t in own[n]}
                added = set()
                for w in words[n]:
                    for en, s in neighbours.get(w, [])[:k]:
                        if s >= tau and en != w:
                            added.add(en)
                if added:
                    for lx in store.lexemes_of("english", sorted(added)):
                        for t in lx:
                            terms.setdefault(t, 0.5)
                keyword = bm25.search(terms)
                fused = rrf({"vector": vector[q], "keyword": keyword}, k=60)
                runs[q] = [f.id for f in fused[:10]]
            print(f"  {label}: nDCG@10 {mean_ndcg(runs, qrels, 10):.4f}", flush=True)
        sample = [w for w in qwords if w in ("kale", "savunma", "nüfus", "nehir", "hastalık", "yıl", "ilk")]
        for w in sample:
            print(f"    {w} → {', '.join(f'{e} {s:.2f}' for e, s in neighbours[w][:3])}")
    store.close()


if __name__ == "__main__":
    main()
