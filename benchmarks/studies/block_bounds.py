"""Would per-block score bounds (block-max) make the keyword leg read fewer postings? A simulation (issue 30).

``kaynak_bm25_topk`` (migration 12) spends most of its time in phase 3, the full read of the essential terms'
postings (docs/performance-search.md, round 7). Block-max engines keep, per term and block of postings, the best
score any posting of the block can have, and skip blocks whose bounds cannot add up to θ. In SQL the natural blocks
are ranges of the chunk key shared by every term (``chunk_key >> (60 - bits)``: a side table keyed by collection,
lexeme and block, kept by the postings triggers), so that a block's bound is the sum of the terms' bounds in it.

This script computes, without changing the database, what such a leg would read for the bench collection's
SciFact claims, next to what today's leg reads: the same θ (phase 1, with the store's seed budget), the same
essential terms (phase 2), then per block size the block rows to read, the essential terms' postings left in
blocks whose bound reaches θ, and the index descents to fetch them (one per term and surviving block). Block bounds
are either the essential terms' block maxima plus the other terms' global bounds, or every term's block maxima.

    python benchmarks/studies/block_bounds.py --url URL --collection bench_latency_100000 --queries 60

Chunk keys are an MD5 of the chunk id (migration 12), so blocks are random samples of chunks: a common term has a
high posting in nearly every block and only blocks of a few chunks prune, and then there are about as many block
rows as postings. The measured result is in docs/performance-search.md, round 8.
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ (common)
from kaynak.store.retrieval import MAX_QUERY_LEXEMES, RetrievalMixin, seed_postings

from common import read_jsonl

QUERIES = Path(__file__).resolve().parents[3] / "shared" / "data" / "retrieval" / "scifact" / "queries.jsonl"
K, K1, B = 40, 0.9, 0.4


def simulate(conn: psycopg.Connection, collection: str, n_queries: int, bits: list[int]) -> dict[str, float]:
    cid, language = conn.execute("SELECT id, language FROM collections WHERE name = %s", (collection,)).fetchone()
    n, tokens = conn.execute("SELECT chunks, tokens FROM collection_stats WHERE collection_id = %s", (cid,)).fetchone()
    c2, c3 = K1 * (1 - B), K1 * B / max(tokens / n, 1.0)
    min_postings, seed_base, split = RetrievalMixin.bm25_prune_limits
    seed_budget = seed_postings(seed_base, n)
    claims = [q["text"] for q in read_jsonl(QUERIES)][:n_queries]
    tot: collections.Counter[str] = collections.Counter()
    for claim in claims:
        rows = conn.execute(
            "SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, tr_lower(%s))) ORDER BY positions[1]",
            (language, claim),
        ).fetchall()
        lexemes = list(dict.fromkeys(r[0] for r in rows))[:MAX_QUERY_LEXEMES]
        stats = conn.execute(
            "SELECT lexeme, df, max_tf, min_dl FROM lexeme_stats WHERE collection_id = %s AND lexeme = ANY(%s) "
            "AND df > 0",
            (cid, lexemes),
        ).fetchall()
        terms = []  # (bound, lexeme, c1, df), highest bound first (the function's order)
        for lexeme, df, max_tf, min_dl in stats:
            c1 = math.log(1 + (n - df + 0.5) / (df + 0.5)) * (K1 + 1)
            terms.append((c1 * max_tf / (max_tf + c2 + c3 * min_dl), lexeme, c1, df))
        terms.sort(key=lambda t: (-t[0], t[1]))
        dfs = [t[3] for t in terms]
        if sum(dfs) <= min_postings:
            tot["summed plainly"] += 1
            continue
        count = len(terms)
        rest = [0.0] * (count + 1)
        for j in range(count - 1, -1, -1):
            rest[j] = rest[j + 1] + terms[j][0]
        postings = {
            lexeme: [
                (key, c1 * tf / (tf + c2 + c3 * dl))
                for key, tf, dl in conn.execute(
                    "SELECT chunk_key, tf, dl FROM postings WHERE collection_id = %s AND lexeme = %s", (cid, lexeme)
                )
            ]
            for _, lexeme, c1, _ in terms
        }
        full: dict[int, float] = collections.defaultdict(float)
        for plist in postings.values():
            for key, s in plist:
                full[key] += s
        seed = 1  # phase 1: θ from the rarest terms' best candidates, scored fully
        while seed < count and dfs[seed] + sum(dfs[:seed]) <= seed_budget:
            seed += 1
        theta = 0.0
        if seed < count:
            part: dict[int, float] = collections.defaultdict(float)
            for t in terms[:seed]:
                for key, s in postings[t[1]]:
                    part[key] += s
            best = sorted((full[c] for c in sorted(part, key=lambda c: -part[c])[: 4 * K]), reverse=True)
            theta = best[K - 1] if len(best) >= K else 0.0
        essential = 1  # phase 2
        while essential < count and rest[essential] >= split * theta:
            essential += 1
        ess = [t[1] for t in terms[:essential]]
        tot["pruned"] += 1
        tot["postings of every term"] += sum(dfs)
        tot["today: essential postings read"] += sum(dfs[:essential])
        _blocks(tot, terms, postings, ess, rest[essential], theta, bits)
    q = max(tot["pruned"], 1)
    return {"claims": len(claims), "chunks": n, "seed budget": seed_budget, "summed plainly": tot["summed plainly"],
            **{k: round(v / q) for k, v in tot.items() if k != "summed plainly" and k != "pruned"}}  # fmt: skip


def _blocks(
    tot: collections.Counter[str],
    terms: list[tuple[float, str, float, int]],
    postings: dict[str, list[tuple[int, float]]],
    ess: list[str],
    rest: float,
    theta: float,
    bits: list[int],
) -> None:
    """Add to ``tot`` what a block-max phase 3 would read, per block size (2^bits blocks over the chunk keys)."""
    for b in bits:
        shift = 60 - b
        maxima: dict[str, dict[int, float]] = {}
        for _, lexeme, _, _ in terms:
            m: dict[int, float] = {}
            for key, s in postings[lexeme]:
                block = key >> shift
                if s > m.get(block, 0.0):
                    m[block] = s
            maxima[lexeme] = m
        blocks = set().union(*(maxima[lx].keys() for lx in ess))
        for how, alive in (
            (
                "essential",
                {x for x in blocks if sum(maxima[lx].get(x, 0.0) for lx in ess) + rest >= theta},
            ),
            ("every", {x for x in blocks if sum(maxima[t[1]].get(x, 0.0) for t in terms) >= theta}),
        ):
            read = sum(len(maxima[lx]) for lx in ess) if how == "essential" else sum(len(m) for m in maxima.values())
            tot[f"2^{b} {how}: block rows"] += read
            tot[f"2^{b} {how}: postings"] += sum(1 for lx in ess for key, _ in postings[lx] if key >> shift in alive)
            tot[f"2^{b} {how}: descents"] += sum(1 for lx in ess for x in alive if x in maxima[lx])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="database URL (opened read-only: nothing is written)")
    ap.add_argument("--collection", default="bench_latency_100000")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--bits", type=lambda v: [int(x) for x in v.split(",")], default=[8, 10, 12, 14])
    args = ap.parse_args()
    with psycopg.connect(args.url, autocommit=True) as conn:
        conn.execute("SET default_transaction_read_only = on")
        out = simulate(conn, args.collection, args.queries, args.bits)
    print(f"per pruned claim, {out['claims']} claims over {out['chunks']:,} chunks (seed budget {out['seed budget']}):")
    for key, value in out.items():
        print(f"  {key}: {value:,}")


if __name__ == "__main__":
    main()
