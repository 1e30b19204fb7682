"""Issue 56, step 1: packed posting blocks with block-max bounds, against today's keyword leg (a prototype).

``packed_blocks.sql`` adds, beside today's ``postings``, a table of 128-posting blocks per term (``pb_blocks``:
chunk keys sorted, term frequencies and chunk lengths as arrays, key range, count, max tf and min length in plain
columns) and ``pb_bm25_topk``: today's exact MaxScore (migration 16: same θ, essential terms and candidate rule)
read from the blocks, with block-max skipping of the essential terms' blocks (the proof is in the SQL file). Nothing
in ``src/kaynak`` changes; the study's table and functions live in the bench database only.

    python benchmarks/studies/packed_blocks.py build --chunks 100000        # text-only bench collection
    python benchmarks/studies/packed_blocks.py fill --url URL --collection bench_latency_100000_text
    python benchmarks/studies/packed_blocks.py compare --url URL --collection bench_latency_100000_text \
        --queries 200 --json out.json

``compare`` runs today's ``kaynak_bm25_topk`` and the prototype (with and without block skipping) on the same
SciFact claims, interleaved claim by claim with the order rotated per claim, on one connection; it checks the
prototype's top 40 against today's (same chunk keys in the same order, scores to 1e-9 relative, ties only among
scores that equal within that tolerance), and reports p50 / p95 of each, the per-claim time ratios and the blocks
read and skipped. The result and the decision are in docs/adr/0041-packed-blocks-stop.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ (common, bench_search)
from kaynak.store.retrieval import MAX_QUERY_LEXEMES, RetrievalMixin, seed_postings

from common import read_jsonl

QUERIES = Path(__file__).resolve().parents[3] / "shared" / "data" / "retrieval" / "scifact" / "queries.jsonl"
SQL_FILE = Path(__file__).with_name("packed_blocks.sql")
K, K1, B = 40, 0.9, 0.4


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))]


def build(args: argparse.Namespace) -> None:
    import bench_search

    store = bench_search.open_store()
    t0 = time.time()
    col = bench_search.latency_collection(store, args.chunks, vectors=False, writers=args.writers)
    print(f"built {col.name}: {col.chunk_count} chunks in {time.time() - t0:.0f} s", flush=True)
    print(f"vacuum analyze {bench_search.vacuum_analyze(store):.0f} s", flush=True)
    store.close()


def collection_id(conn: psycopg.Connection, name: str) -> tuple[int, str, int]:
    row = conn.execute(
        "SELECT c.id, c.language, s.chunks FROM collections c JOIN collection_stats s ON s.collection_id = c.id "
        "WHERE c.name = %s",
        (name,),
    ).fetchone()
    if row is None:
        raise SystemExit(f"no collection {name!r}")
    return int(row[0]), str(row[1]), int(row[2])


def fill(args: argparse.Namespace) -> None:
    with psycopg.connect(args.url, autocommit=True) as conn:
        conn.execute(SQL_FILE.read_text(encoding="utf-8"))
        cid, _, _ = collection_id(conn, args.collection)
        t0 = time.time()
        blocks = conn.execute("SELECT pb_fill(%s, %s)", (cid, args.block)).fetchone()[0]
        took = time.time() - t0
        conn.execute("VACUUM ANALYZE pb_blocks")
        size = conn.execute("SELECT pg_total_relation_size('pb_blocks')").fetchone()[0]
        postings = conn.execute("SELECT count(*) FROM postings WHERE collection_id = %s", (cid,)).fetchone()[0]
        print(
            json.dumps(
                {
                    "collection": args.collection,
                    "postings": postings,
                    "blocks": blocks,
                    "fill s": round(took, 1),
                    "pb_blocks bytes (all collections)": size,
                    "postings table bytes (all collections)": conn.execute(
                        "SELECT pg_total_relation_size('postings')"
                    ).fetchone()[0],
                },
                indent=2,
            )
        )


def same_topk(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> tuple[bool, bool]:
    """(equal as sets with scores within 1e-9, identical order); order may differ only among tied scores."""
    if len(a) != len(b):
        return False, False
    sa, sb = dict(a), dict(b)
    if sa.keys() != sb.keys() or not all(math.isclose(sa[k], sb[k], rel_tol=1e-9) for k in sa):
        return False, False
    return True, [k for k, _ in a] == [k for k, _ in b]


def ties_only(a: list[tuple[int, float]], b: list[tuple[int, float]]) -> bool:
    """Exact up to the last bits of float sums: the scores rank by rank to 1e-12, the same keys wherever a score
    is above the k-th score (beyond 1e-12), and the same keys by rank wherever the neighbours' scores differ.
    The bench collection repeats its texts, so many chunks tie exactly; which of them a float sum puts a bit
    higher depends on the order the plan adds the terms in (today's function does the same between plans)."""
    if len(a) != len(b) or not all(math.isclose(x[1], y[1], rel_tol=1e-12) for x, y in zip(a, b, strict=True)):
        return False
    if not a:
        return True
    last = b[-1][1]
    above = {k for k, s in a if not math.isclose(s, last, rel_tol=1e-12)}
    if above != {k for k, s in b if not math.isclose(s, last, rel_tol=1e-12)}:
        return False
    groups: dict[int, set[int]] = {}
    for rank, ((ka, sa), (kb, _)) in enumerate(zip(a, b, strict=True)):
        g = next((r for r in groups if math.isclose(a[r][1], sa, rel_tol=1e-12)), rank)
        groups.setdefault(g, set()).add(ka)
        groups[g].add(-kb - 1)
    return all(
        {k for k in keys if k >= 0} == {-k - 1 for k in keys if k < 0}
        for g, keys in groups.items()
        if not math.isclose(a[g][1], last, rel_tol=1e-12)
    )


def compare(args: argparse.Namespace) -> None:
    min_postings, seed_base, split = RetrievalMixin.bm25_prune_limits
    with psycopg.connect(args.url, autocommit=True) as conn:
        conn.execute(SQL_FILE.read_text(encoding="utf-8"))  # the functions as in the file now
        cid, language, size = collection_id(conn, args.collection)
        seed = seed_postings(seed_base, size)
        claims = [q["text"] for q in read_jsonl(QUERIES)][: args.queries]
        lexemes = []
        for claim in claims:
            rows = conn.execute(
                "SELECT lexeme FROM unnest(to_tsvector(%s::regconfig, tr_lower(%s))) ORDER BY positions[1]",
                (language, claim),
            ).fetchall()
            lexemes.append(list(dict.fromkeys(r[0] for r in rows))[:MAX_QUERY_LEXEMES])
        pid = int(conn.execute("SELECT pg_backend_pid()").fetchone()[0])
        today = (
            "SELECT chunk_key, score FROM kaynak_bm25_topk(%s, %s, %s, %s, %s, NULL, %s, %s, %s) "
            "ORDER BY score DESC, chunk_key"
        )
        proto = (
            "SELECT chunk_key, score FROM pb_bm25_topk(%s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ORDER BY score DESC, chunk_key"
        )
        variants = {
            "today (migration 16)": (today, lambda lx: [cid, lx, K, K1, B, min_postings, seed, split]),
            "packed blocks, block-max skipping": (
                proto,
                lambda lx: [cid, lx, K, K1, B, min_postings, seed, split, True],
            ),
            "packed blocks, no skipping": (proto, lambda lx: [cid, lx, K, K1, B, min_postings, seed, split, False]),
        }
        if args.full_read:  # every posting of every term, no pruning: what a posting costs to read in each layout
            variants["today, every posting read"] = (today, lambda lx: [cid, lx, K, K1, B, 10**9, seed, split])
            variants["packed blocks, every posting read"] = (
                proto,
                lambda lx: [cid, lx, K, K1, B, 10**9, seed, split, False],
            )
        names = list(variants)
        times: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, float] = dict.fromkeys(names, 0.0)
        exact = dict.fromkeys(names[1:], 0)
        ordered = dict.fromkeys(names[1:], 0)
        exact_ties = dict.fromkeys(names[1:], 0)
        mismatches: list[dict[str, Any]] = []

        def cpu_s() -> float:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

        for lx in lexemes[:3]:
            for n in names:
                q, a = variants[n]
                conn.execute(q, a(lx)).fetchall()
        diag: dict[str, float] = {
            "essential_terms": 0,
            "terms_unskippable": 0,
            "blocks_read": 0,
            "blocks_skipped": 0,
            "postings_read": 0,
            "postings_skipped": 0,
        }
        for i, lx in enumerate(lexemes):
            order = names[i % len(names) :] + names[: i % len(names)]
            got = {}
            for _ in range(args.rounds):
                for n in order:
                    q, a = variants[n]
                    c0, t0 = cpu_s(), time.perf_counter()
                    got[n] = [(int(k), float(s)) for k, s in conn.execute(q, a(lx)).fetchall()]
                    times[n].append(time.perf_counter() - t0)
                    cpu[n] += cpu_s() - c0
            for n in names[1:]:
                same, in_order = same_topk(got[n], got[names[0]])
                noise_ties = ties_only(got[n], got[names[0]])
                exact_ties[n] += noise_ties
                exact[n] += same
                ordered[n] += in_order
                if not noise_ties:
                    mismatches.append({"claim": i, "variant": n, "today": got[names[0]][:5], "proto": got[n][:5]})
            conn.execute(
                "SELECT count(*) FROM pb_bm25_topk(%s, %s, %s, %s, %s, %s, %s, %s, true, true)",
                [cid, lx, K, K1, B, min_postings, seed, split],
            ).fetchall()
            line = conn.execute("SELECT current_setting('pb.diag', true)").fetchone()[0] or ""
            for part in line.split():
                key, _, val = part.partition("=")
                if key == "essential":
                    key, val = "essential_terms", val.split("/")[0]
                if key in diag:
                    diag[key] += float(val)
            conn.execute("SELECT set_config('pb.diag', '', false)")
        base = times[names[0]]
        report: dict[str, Any] = {
            "collection": args.collection,
            "chunks": size,
            "claims": len(lexemes),
            "rounds per claim": args.rounds,
            "load average at the end": " ".join(f"{x:.1f}" for x in os.getloadavg()),
            "exact (same keys, scores to 1e-9) / claims": {n: f"{exact[n]}/{len(lexemes)}" for n in names[1:]},
            "scores equal by rank (1e-12) and keys equal above the k-th score's ties / claims": {
                n: f"{exact_ties[n]}/{len(lexemes)}" for n in names[1:]
            },
            "same order too / claims": {n: f"{ordered[n]}/{len(lexemes)}" for n in names[1:]},
            "per claim: essential terms, those whose blocks no bound can skip (θ ≤ the other terms' bounds), blocks": {
                k: round(v / len(lexemes), 1) for k, v in diag.items()
            },
            "leg alone (top 40), ms": {
                n: {
                    "p50": round(pct(times[n], 50) * 1000, 2),
                    "p95": round(pct(times[n], 95) * 1000, 2),
                    "mean": round(statistics.fmean(times[n]) * 1000, 2),
                    "backend CPU ms/call": round(cpu[n] * 1000 / len(times[n]), 2),
                }
                for n in names
            },
            "today / variant, per call (interleaved)": {
                n: {
                    "median ratio": round(statistics.median(a / b for a, b in zip(base, times[n], strict=True)), 3),
                    "ratio of p50s": round(pct(base, 50) / pct(times[n], 50), 3),
                    "ratio of p95s": round(pct(base, 95) / pct(times[n], 95), 3),
                }
                for n in names[1:]
            },
            "mismatches (first 5)": mismatches[:5],
        }
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="the text-only bench collection (bench_search's latency collection)")
    b.add_argument("--chunks", type=int, default=100_000)
    b.add_argument("--writers", type=int, default=2)
    f = sub.add_parser("fill", help="install packed_blocks.sql and fill pb_blocks from the collection's postings")
    f.add_argument("--url", required=True)
    f.add_argument("--collection", required=True)
    f.add_argument("--block", type=int, default=128)
    c = sub.add_parser("compare", help="today's leg vs the prototype, interleaved claim by claim")
    c.add_argument("--url", required=True)
    c.add_argument("--collection", required=True)
    c.add_argument("--queries", type=int, default=200)
    c.add_argument("--rounds", type=int, default=1, help="timed calls per claim and variant")
    c.add_argument("--full-read", action="store_true", help="also both layouts reading every posting")
    c.add_argument("--json")
    args = ap.parse_args()
    {"build": build, "fill": fill, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    main()
