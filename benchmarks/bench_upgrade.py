"""Upgrading a big database: migration 12 (every posting re-keyed) at N chunks, killed midway and resumed.

Builds a schema-11 database (the last schema before migration 12) of ``--chunks`` chunks from SciFact passages
(postings written as that schema's writer wrote them, statistics by its triggers), copies it (CREATE DATABASE …
TEMPLATE), then on one copy runs ``kaynak migrate``, SIGKILLs it at ``--kill-at`` of the way and runs it again
to the end, and on the other runs it straight through. Reports the upgrade time, the peak memory of the migrating
process and of its PostgreSQL backend, the latency of the old schema's keyword search (``kaynak_bm25_topk`` of
schema 11, what an old kaynak still serving would run) before and during the upgrade, and whether the killed and
resumed database ends in the same state as the straight one (row counts and md5 of postings and lexeme_stats).

    python benchmarks/bench_upgrade.py --chunks 1000000          # the million-chunk database (~40 M postings)
    python benchmarks/bench_upgrade.py --chunks 20000 --quick    # a smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg.conninfo import make_conninfo

from kaynak.store import migrations
from kaynak.store.server import embedded_uri, stop_embedded

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "retrieval" / "scifact" / "corpus.jsonl"
CHUNKS_PER_DOCUMENT = 10
QUERIES = [["protein"], ["cell", "cancer"], ["diet", "mice", "insulin"], ["gene", "express", "tumor", "growth"]]

# Schema 11's writer: each chunk's terms merged with its document title's, named by the chunk's text id.
SCHEMA_11_POSTINGS = """
    INSERT INTO postings (collection_id, lexeme, chunk_id, document_id, tf, dl)
    SELECT c.collection_id, u.lexeme, c.id, c.document_id, cardinality(u.positions), t.dl
    FROM chunks c
    JOIN documents d ON d.id = c.document_id
    CROSS JOIN LATERAL (SELECT c.tsv || kaynak_header_tsv(c.language, d.title) AS v) h
    CROSS JOIN LATERAL (SELECT coalesce(sum(cardinality(positions)), 0)::int AS dl FROM unnest(h.v)) t
    CROSS JOIN LATERAL unnest(h.v) u
    WHERE c.document_id BETWEEN %s AND %s
"""


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def passages() -> list[str]:
    out = []
    with CORPUS.open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            text = doc["text"]
            for start in range(0, len(text), 700):
                piece = text[start : start + 700]
                if len(piece) > 200:
                    out.append(piece)
    return out


def build(url: str, chunks: int) -> None:
    """A schema-11 database holding ``chunks`` chunks in one English collection."""
    texts = passages()
    rng = random.Random(7)
    docs = chunks // CHUNKS_PER_DOCUMENT
    with psycopg.connect(url, autocommit=True) as conn:
        migrations.apply(conn, upto=11)
        cid = conn.execute(
            "INSERT INTO collections (name, language, embedder, dim) VALUES ('big', 'english', 'hash', 8) RETURNING id"
        ).fetchone()[0]
        t0 = time.perf_counter()
        with conn.cursor().copy(
            "COPY documents (id, collection_id, source, sha256, title, page_count, chunk_count) FROM STDIN"
        ) as copy:
            for d in range(1, docs + 1):
                copy.write_row((d, cid, f"d{d:07d}.txt", "x", texts[rng.randrange(len(texts))][:80], 1, 10))
        conn.execute("SELECT setval('documents_id_seq', %s)", (docs,))
        with conn.cursor().copy(
            "COPY chunks (id, collection_id, document_id, ord, page, char_start, char_end, text, language) FROM STDIN"
        ) as copy:
            for d in range(1, docs + 1):
                for o in range(CHUNKS_PER_DOCUMENT):
                    text = texts[rng.randrange(len(texts))]
                    copy.write_row((f"c{d:07d}-{o}", cid, d, o, 1, 0, len(text), text, "english"))
        log(f"chunks written in {time.perf_counter() - t0:.0f} s")
        t0 = time.perf_counter()
        step = 5000
        for lo in range(1, docs + 1, step):
            conn.execute(SCHEMA_11_POSTINGS, (lo, lo + step - 1))
        conn.execute(
            "UPDATE documents d SET token_count = s.n FROM (SELECT document_id, sum(tf) AS n FROM postings "
            "GROUP BY document_id) s WHERE s.document_id = d.id"
        )
        conn.execute("VACUUM ANALYZE")
        n = conn.execute("SELECT count(*) FROM postings").fetchone()[0]
        log(f"{n:,} postings written in {time.perf_counter() - t0:.0f} s")


def state(url: str) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        return {
            "version": migrations.current_version(conn),
            "postings": conn.execute(
                "SELECT count(*), md5(string_agg(concat_ws(',', collection_id, lexeme, chunk_key, document_id, tf, "
                "dl), ';' ORDER BY collection_id, lexeme, chunk_key)) FROM postings"
            ).fetchone(),
            "lexeme_stats": conn.execute(
                "SELECT count(*), md5(string_agg(concat_ws(',', collection_id, lexeme, df, max_tf, min_dl), ';' "
                "ORDER BY collection_id, lexeme)) FROM lexeme_stats"
            ).fetchone(),
            "chunks": conn.execute("SELECT count(*) FROM chunks").fetchone()[0],
        }


class OldSearches(threading.Thread):
    """Schema 11's keyword search (what an old kaynak would run), every 0.2 s, until stopped."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stop, self.ms, self.errors = url, threading.Event(), [], []

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            cid = conn.execute("SELECT id FROM collections").fetchone()[0]
            i = 0
            while not self.stop.is_set():
                terms = QUERIES[i % len(QUERIES)]
                i += 1
                t0 = time.perf_counter()
                try:
                    conn.execute("SELECT * FROM kaynak_bm25_topk(%s, %s, 10, 0.9, 0.4, NULL)", (cid, terms)).fetchall()
                    self.ms.append((time.perf_counter() - t0) * 1000)
                except psycopg.Error as err:
                    self.errors.append(str(err).splitlines()[0])
                    conn.rollback() if not conn.autocommit else None
                self.stop.wait(0.2)


def migrate(url: str, kill_at: float | None = None) -> dict[str, Any]:
    """``kaynak migrate --no-backup`` in a subprocess; SIGKILL once ``kill_at`` of the documents are done."""
    env = {**os.environ, "KAYNAK_DATABASE_URL": url}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaynak", "migrate", "--no-backup", "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    me = psutil.Process(proc.pid)
    peak, backend_peak, killed = 0, 0, False
    with psycopg.connect(url, autocommit=True) as watch:
        docs = watch.execute("SELECT max(id) FROM documents").fetchone()[0] or 1
        while proc.poll() is None:
            with contextlib.suppress(psutil.Error):
                peak = max(peak, me.memory_info().rss)
            for (pid,) in watch.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND application_name NOT LIKE 'pg_%%' AND state = 'active'"
            ).fetchall():
                with contextlib.suppress(psutil.Error):
                    backend_peak = max(backend_peak, psutil.Process(pid).memory_info().rss)
            if kill_at is not None and not killed:
                row = watch.execute("SELECT after_id FROM kaynak_migration_progress WHERE version = 12").fetchone()
                if row and row[0] >= kill_at * docs:
                    proc.send_signal(signal.SIGKILL)
                    killed = True
            time.sleep(0.1)
    _out, err = proc.communicate()
    return {
        "seconds": round(time.perf_counter() - t0, 1),
        "exit": proc.returncode,
        "killed": killed,
        "peak_rss_mb": round(peak / 2**20),
        "backend_peak_rss_mb": round(backend_peak / 2**20),
        "stderr": err.decode()[-300:] if proc.returncode not in (0, -9) else "",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--kill-at", type=float, default=0.4)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help="20,000 chunks")
    args = ap.parse_args()
    chunks = 20_000 if args.quick else args.chunks
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="kaynak-upgrade-"))
    base = embedded_uri(data_dir)
    try:
        with psycopg.connect(base, autocommit=True) as admin:
            for name in ("upg_a", "upg_b", "upg_template"):
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.execute("CREATE DATABASE upg_template")
        template = make_conninfo(base, dbname="upg_template")
        with psycopg.connect(template, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        log(f"building a schema-11 database of {chunks:,} chunks")
        build(template, chunks)
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute("CREATE DATABASE upg_a TEMPLATE upg_template")
            admin.execute("CREATE DATABASE upg_b TEMPLATE upg_template")
        a, b = make_conninfo(base, dbname="upg_a"), make_conninfo(base, dbname="upg_b")

        quiet = OldSearches(a)
        quiet.start()
        time.sleep(6)
        quiet.stop.set()
        quiet.join()
        log("straight upgrade (b)")
        straight = migrate(b)
        log(f"straight: {straight}")
        during = OldSearches(a)
        during.start()
        log("upgrade killed midway (a)")
        first = migrate(a, kill_at=args.kill_at)
        log(f"first run: {first}")
        during.stop.set()
        during.join()
        with psycopg.connect(a) as conn:
            midway = conn.execute("SELECT after_id, batches FROM kaynak_migration_progress").fetchall()
        second = migrate(a)
        log(f"resumed: {second}")
        sa, sb = state(a), state(b)

        def pct(ms: list[float], q: float) -> float:
            return round(statistics.quantiles(ms, n=100)[q - 1], 1) if len(ms) > 2 else float("nan")

        result = {
            "chunks": chunks,
            "postings": sb["postings"][0],
            "straight_upgrade_s": straight["seconds"],
            "killed_after_s": first["seconds"],
            "resumed_s": second["seconds"],
            "progress_when_killed": midway,
            "peak_rss_mb": max(straight["peak_rss_mb"], first["peak_rss_mb"], second["peak_rss_mb"]),
            "backend_peak_rss_mb": max(
                straight["backend_peak_rss_mb"], first["backend_peak_rss_mb"], second["backend_peak_rss_mb"]
            ),
            "old_search_before_ms": {"p50": pct(quiet.ms, 50), "p95": pct(quiet.ms, 95), "n": len(quiet.ms)},
            "old_search_during_ms": {"p50": pct(during.ms, 50), "p95": pct(during.ms, 95), "n": len(during.ms)},
            "old_search_errors_during": during.errors[:3],
            "killed_and_resumed_equals_straight": sa == sb,
            "state": sb,
            "exit_codes": [straight["exit"], first["exit"], second["exit"]],
        }
        print(json.dumps(result, indent=2, default=str))
        for key in ("straight_upgrade_s", "peak_rss_mb", "backend_peak_rss_mb"):
            print("BENCH_RESULT " + json.dumps({"item": f"upgrade {chunks}", "metric": key, "value": result[key]}))
    finally:
        if args.data_dir is None:
            stop_embedded(data_dir)


if __name__ == "__main__":
    main()
