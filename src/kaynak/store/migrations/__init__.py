"""Schema migrations: an ordered list of frozen SQL, applied in order, each recorded in ``kaynak_migrations``.

Each migration is a file under ``sql/`` — the SQL it ran when it shipped — or, where it must choose by server or
rewrite data, a step in ``steps.py`` whose SQL is literal text too. Nothing here imports the store's runtime SQL and
no runtime code imports a migration, so changing how kaynak searches cannot change what an old migration creates
(a fresh database and one upgraded step by step end up with the same schema: tests/store/test_migrations.py).

Add a migration by appending to ``MIGRATIONS`` (and its file to ``sql/``); never edit one that has shipped: the
test pins every file's SHA-256.

``apply`` runs what is pending. A schema step runs in one transaction under an advisory lock, so two processes
starting at once apply it exactly once. A data-rewriting migration (``Backfill``) runs its batches in their own
committed transactions, each recording how far it got in ``kaynak_migration_progress``: a stopped upgrade
resumes where it stopped, and the migration is recorded as applied only by its finishing step.
``Store`` runs small upgrades at start and refuses big ones with MigrationRequired (``kaynak migrate``);
a database from a newer kaynak is refused with SchemaTooNew (docs/adr/0027-upgrades.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from kaynak.errors import MigrationRequired, SchemaTooNew
from kaynak.store.migrations import m17_keyword_language, steps
from kaynak.store.migrations.steps import Backfill, run_file

# pg_advisory_xact_lock key for migrations: any fixed 64-bit number unique to kaynak ("kaynak" in ASCII).
_LOCK_KEY = 0x6B61796E616B

#: Postings (or other rows) rewritten per second by a data-rewriting migration, measured on this project's 2-core
#: machine: migration 12 re-keyed 38.4 M postings in 214 s (docs/adr/0022); estimates divide by this.
ROWS_PER_SECOND = 170_000

#: Upgrades at start (``Store``) run by themselves only below this many rows to rewrite (about 6 s of work);
#: bigger ones need ``kaynak migrate`` (progress, backup offered, resumable). KAYNAK_MIGRATE overrides.
AUTO_MIGRATE_ROWS = 1_000_000


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    run: Callable[[psycopg.Connection[Any]], None]
    backfill: Backfill | None = None


MIGRATIONS: list[Migration] = [
    Migration(1, "initial schema: collections, documents, pages, chunks, postings, tr_lower", steps.m1_initial),
    Migration(
        2,
        "postings primary key covers tf, dl and document_id (index-only BM25 scans)",
        run_file("0002_covering_postings.sql"),
    ),
    Migration(3, "documents.warnings and documents.origin (issue 11)", run_file("0003_document_warnings_origin.sql")),
    Migration(
        4, "ingest_failures: remembered failures of unchanged files (issue 11)", run_file("0004_ingest_failures.sql")
    ),
    Migration(
        5,
        "lexeme_stats kept by triggers on postings (df, max tf, min length per lexeme)",
        run_file("0005_lexeme_stats.sql"),
    ),
    Migration(6, "kaynak_bm25_top: exact BM25 top k with MaxScore pruning", run_file("0006_pruned_bm25.sql")),
    Migration(
        7,
        "collection_sources, documents.file_size/file_mtime_ns, sync_watchers (issue 19)",
        run_file("0007_sync_sources.sql"),
    ),
    Migration(
        8, "collection_stats: documents, chunks and tokens per collection", run_file("0008_collection_stats.sql")
    ),
    Migration(
        9,
        "kaynak_bm25_topk: pruned BM25 with per-term constants over collection_stats",
        run_file("0009_bm25_topk.sql"),
    ),
    Migration(
        10,
        "postings carry each chunk's document title terms: kaynak_header_tsv (issue 17)",
        run_file("0010_header_terms.sql"),
        steps.M10,
    ),
    Migration(11, "documents.language detected from the text (issue 17)", steps.m11_document_language),
    Migration(
        12,
        "postings keyed by a 60-bit integer chunk key, kaynak_chunk_key(id) (issue 14)",
        run_file("0012_chunk_keys.sql"),
        steps.M12,
    ),
    Migration(
        13, "access_tokens, audit_log, token_search_counts: team access (issue 31)", run_file("0013_team_access.sql")
    ),
    Migration(
        14,
        "chunk_sentences: each chunk's sentence analysis for quotes (issue 30)",
        run_file("0014_chunk_sentences.sql"),
    ),
    Migration(
        15,
        "kaynak_bm25_topk over a range of chunk keys: the keyword leg in parts (issue 30)",
        run_file("0015_bm25_key_range.sql"),
    ),
    Migration(
        16,
        "kaynak_bm25_topk completes its candidates' scores by one index scan per term (issue 30)",
        run_file("0016_bm25_array_probes.sql"),
    ),
    Migration(
        17,
        "documents.keyword_language: each document stemmed in its own language (issue 50)",
        run_file("0017_document_keyword_language.sql"),
        m17_keyword_language.M17,
    ),
]

#: The schema version this kaynak writes and reads.
LATEST = MIGRATIONS[-1].version

Progress = Callable[[Migration, int, int], None]
"""Called as batches commit: (migration, rows estimated done, rows estimated in all)."""


def _bookkeeping(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS kaynak_migrations (
            version    int PRIMARY KEY,
            name       text NOT NULL,
            applied_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE IF NOT EXISTS kaynak_migration_progress (
            version    int PRIMARY KEY,
            after_id   bigint NOT NULL DEFAULT 0,
            rows_total bigint NOT NULL DEFAULT 0,
            batches    int NOT NULL DEFAULT 0,
            started_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now()
        );
        """
    )


def _has_table(conn: psycopg.Connection[Any], name: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()
    return row is not None and row[0] is not None


def current_version(conn: psycopg.Connection[Any]) -> int:
    if not _has_table(conn, "kaynak_migrations"):
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM kaynak_migrations").fetchone()
    return int(row[0]) if row else 0


@dataclass(frozen=True)
class Status:
    """Where a database stands: its version, what is pending (with the rows to rewrite), what is under way."""

    version: int
    latest: int
    pending: list[tuple[int, str, int]]  # (version, name, rows to rewrite; 0 for schema-only)
    in_progress: dict[int, tuple[int, int]]  # version -> (batches committed, rows estimated in all)

    @property
    def rows(self) -> int:
        return sum(r for _, _, r in self.pending)

    @property
    def seconds(self) -> float:
        """Estimated time of the pending migrations (rewrites at ROWS_PER_SECOND; schema steps ~1 s each)."""
        return self.rows / ROWS_PER_SECOND + len(self.pending)

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "latest": self.latest,
            "pending": [{"version": v, "name": n, "rows_to_rewrite": r} for v, n, r in self.pending],
            "in_progress": {str(v): {"batches": b, "rows": r} for v, (b, r) in self.in_progress.items()},
            "estimated_seconds": round(self.seconds, 1) if self.pending else 0,
        }


def status(conn: psycopg.Connection[Any]) -> Status:
    """The database's schema version, pending migrations with their rows to rewrite, and unfinished ones."""
    done: set[int] = set()
    if _has_table(conn, "kaynak_migrations"):
        done = {int(r[0]) for r in conn.execute("SELECT version FROM kaynak_migrations")}
    version = max(done, default=0)
    under_way: dict[int, tuple[int, int]] = {}
    if _has_table(conn, "kaynak_migration_progress"):
        for v, batches, rows in conn.execute("SELECT version, batches, rows_total FROM kaynak_migration_progress"):
            under_way[int(v)] = (int(batches), int(rows))
    pending = []
    for m in MIGRATIONS:
        if m.version in done:
            continue
        rows = 0
        if m.backfill is not None:
            rows = under_way[m.version][1] if m.version in under_way else m.backfill.rows(conn)
        pending.append((m.version, m.name, rows))
    return Status(version, LATEST, pending, under_way)


def check_not_newer(conn: psycopg.Connection[Any]) -> None:
    """SchemaTooNew when the database holds migrations this kaynak does not know (a newer kaynak wrote it)."""
    version = current_version(conn)
    if version > LATEST:
        raise SchemaTooNew(
            f"the database has schema version {version}, written by a newer kaynak; this kaynak reads version "
            f"{LATEST} and never downgrades a database: install the newer kaynak again (or restore a backup made "
            "by this version)"
        )


def apply(
    conn: psycopg.Connection[Any],
    *,
    upto: int | None = None,
    progress: Progress | None = None,
    max_rows: int | None = None,
) -> list[int]:
    """Apply every migration not yet recorded (up to version ``upto``); return the versions applied now.

    ``max_rows``: refuse (MigrationRequired) when the pending migrations would rewrite more rows than this, or when
    one is under way (a stopped ``kaynak migrate``): what ``Store`` does at start. ``conn`` must be in autocommit
    mode or outside a transaction: batches commit one by one.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        _bookkeeping(conn)
        check_not_newer(conn)
        if max_rows is not None:
            st = status(conn)
            if st.pending and st.version > 0 and (st.in_progress or st.rows > max_rows):
                raise _required(st)
    applied_now: list[int] = []
    for m in MIGRATIONS:
        if upto is not None and m.version > upto:
            break
        if _apply_one(conn, m, progress):
            applied_now.append(m.version)
    if any(m.backfill is not None and m.version in applied_now for m in MIGRATIONS):
        settle(conn)
    return applied_now


#: The tables a data-rewriting migration rewrites: what the keyword leg reads.
REWRITTEN_TABLES = ("postings", "lexeme_stats", "documents")


def settle(conn: psycopg.Connection[Any]) -> list[str]:
    """``VACUUM (ANALYZE)`` of the tables a data-rewriting migration rewrote (the ones present); their names.

    A rewrite leaves their pages not yet marked all-visible, so the keyword leg's index-only scans read the heap
    for every posting, and their statistics stale or, for a table made anew, missing, until autovacuum comes by
    (minutes at a million chunks). Measured at 100,000 chunks: a whole hybrid search took 59 ms p50 on postings
    without a visibility map and 29 ms after ``VACUUM`` (docs/performance-search.md, round 7). On a connection
    in a transaction (VACUUM cannot run there) only ``ANALYZE`` runs."""
    present = [t for t in REWRITTEN_TABLES if _has_table(conn, t)]
    for table in present:
        verb = "VACUUM (ANALYZE)" if conn.autocommit else "ANALYZE"
        conn.execute(f"{verb} {table}")
    return present


def _required(st: Status) -> MigrationRequired:
    under_way = ", ".join(str(v) for v in sorted(st.in_progress))
    what = (
        f"an upgrade of this database is under way (migration {under_way}); finish it with `kaynak migrate`"
        if st.in_progress
        else f"this database needs an upgrade from schema {st.version} to {st.latest} that rewrites about "
        f"{st.rows:,} rows (about {max(1, round(st.seconds / 60))} min): run `kaynak migrate` (it shows progress, "
        "offers a backup first and can be stopped and resumed)"
    )
    return MigrationRequired(what + ", then start kaynak again")


def _apply_one(conn: psycopg.Connection[Any], m: Migration, progress: Progress | None) -> bool:
    """Apply ``m`` if it is not recorded yet; True when it was applied now."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        if conn.execute("SELECT 1 FROM kaynak_migrations WHERE version = %s", (m.version,)).fetchone():
            return False
        started = conn.execute("SELECT 1 FROM kaynak_migration_progress WHERE version = %s", (m.version,)).fetchone()
        if m.backfill is None:
            m.run(conn)
            _record(conn, m)
            return True
        if not started:
            rows = m.backfill.rows(conn)
            m.run(conn)
            conn.execute(
                "INSERT INTO kaynak_migration_progress (version, rows_total) VALUES (%s, %s)", (m.version, rows)
            )
    while _one_batch(conn, m, progress):
        pass
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        if conn.execute("SELECT 1 FROM kaynak_migrations WHERE version = %s", (m.version,)).fetchone():
            return False  # another process finished it meanwhile
        m.backfill.finish(conn)
        conn.execute("DELETE FROM kaynak_migration_progress WHERE version = %s", (m.version,))
        _record(conn, m)
    return True


def _one_batch(conn: psycopg.Connection[Any], m: Migration, progress: Progress | None) -> bool:
    """Rewrite and commit the next batch of ``m``; False when nothing was left."""
    assert m.backfill is not None
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        row = conn.execute(
            "SELECT after_id, rows_total FROM kaynak_migration_progress WHERE version = %s FOR UPDATE",
            (m.version,),
        ).fetchone()
        if row is None:  # another process finished it meanwhile
            return False
        after, total = int(row[0]), int(row[1])
        upto = m.backfill.batch(conn, after)
        if upto is None:
            return False
        conn.execute(
            "UPDATE kaynak_migration_progress SET after_id = %s, batches = batches + 1, updated_at = now() "
            "WHERE version = %s",
            (upto, m.version),
        )
    if progress is not None:
        progress(m, _done_rows(conn, upto, total), total)
    return True


def _done_rows(conn: psycopg.Connection[Any], upto: int, total: int) -> int:
    """Rows done so far, estimated from the share of documents at or below ``upto``."""
    row = conn.execute("SELECT count(*) FILTER (WHERE id <= %s), count(*) FROM documents", (upto,)).fetchone()
    if not row or not row[1]:
        return total
    return int(total * int(row[0]) / int(row[1]))


def _record(conn: psycopg.Connection[Any], m: Migration) -> None:
    conn.execute("INSERT INTO kaynak_migrations (version, name) VALUES (%s, %s)", (m.version, m.name))
