"""Running ``kaynak ingest`` under a hard memory cap and reading what it did: the outcome and reason of every file
from its JSON report, and what the database holds or remembers for a collection (the hostile corpus tests)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kaynak.store import Store

HERE = Path(__file__).parent
CAP_MB = 3072  # RLIMIT_AS of the ingest process (virtual memory; threads and libraries reserve a lot of it)
RSS_LIMIT_MB = 1024


def run_capped(args: list[str], env: dict[str, str], stats: Path) -> tuple[int, dict, dict]:
    proc = subprocess.run(
        [sys.executable, str(HERE / "run_capped.py"), str(CAP_MB), str(stats), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.stdout.strip(), proc.stderr[-3000:]
    return proc.returncode, json.loads(proc.stdout), json.loads(stats.read_text())


def outcomes(report: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    for status in ("added", "updated", "unchanged", "partial"):
        for source in report[status]:
            assert source not in out, f"{source} has two outcomes"
            out[source] = status
    for f in report["failed"]:
        assert f["source"] not in out, f"{f['source']} has two outcomes"
        out[f["source"]] = "failed"
    for f in report["skipped"]:
        assert f["source"] not in out, f"{f['source']} has two outcomes"
        out[f["source"]] = "skipped"
    return out


def reasons(report: dict) -> dict[str, str]:
    text: dict[str, str] = {}
    for f in report["failed"]:
        text[f["source"]] = f["error"]
    for f in report["skipped"]:
        text[f["source"]] = f["reason"]
    for w in report["warnings"]:
        text[w["source"]] = text.get(w["source"], "") + " " + w["warning"]
    return text


def stored(store: Store, collection: str) -> dict[str, tuple[int, str, str, str]]:
    """source → (id, sha256, ingested_at, all page text) straight from the tables."""
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT d.source, d.id, d.sha256, d.ingested_at::text, "
            "coalesce((SELECT string_agg(p.text, ' ' ORDER BY p.number) FROM pages p WHERE p.document_id = d.id), '') "
            "FROM documents d JOIN collections c ON c.id = d.collection_id WHERE c.name = %s",
            (collection,),
        ).fetchall()
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


def remembered(store: Store, collection: str) -> set[str]:
    with store._conn() as conn:
        rows = conn.execute(
            "SELECT f.source FROM ingest_failures f JOIN collections c ON c.id = f.collection_id WHERE c.name = %s",
            (collection,),
        ).fetchall()
    return {r[0] for r in rows}
