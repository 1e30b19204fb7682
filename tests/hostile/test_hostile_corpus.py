"""The hostile corpus (tests/hostile/make_corpus.py) through ``kaynak ingest`` under a hard memory cap.

One run over the whole corpus: it finishes, every file ends with exactly the expected outcome and reason, the
database holds no row of a rejected file, the ingest process stays under 1 GiB RSS; a second run changes nothing,
reports the same outcomes (failed files as "still failing", without parsing them again) and is fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kaynak.store import Store

sys.path.insert(0, str(Path(__file__).parent))
from make_corpus import build

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


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX symbolic links and named pipes")
def test_hostile_corpus_under_a_memory_cap(tmp_path: Path, env: dict[str, str], store: Store, unique_name: str) -> None:
    root = tmp_path / "root"
    expected = build(root)
    proc_env = dict(os.environ, KAYNAK_PARSE_MEMORY_MB="1024", KAYNAK_PARSE_TIMEOUT_S="120", KAYNAK_PARSE_WORKERS="2")
    args = ["ingest", str(root), "-c", unique_name, "--language", "turkish", "--json"]

    code, report, stats = run_capped(args, proc_env, tmp_path / "first.json")
    print(f"\nhostile corpus, first run: {stats}")
    assert code == 1 and stats["exit"] == 1  # some files failed or are partial
    got = outcomes(report)
    want = {s: e.outcome for s, e in expected.items() if e.outcome != "ignored"}
    assert got == want
    assert report["ignored"] == sum(e.outcome == "ignored" for e in expected.values())
    why = reasons(report)
    for source, e in expected.items():
        if e.says:
            assert e.says.casefold() in why.get(source, "").casefold(), (source, why.get(source))
    for f in report["failed"]:
        assert f["error"].startswith(f["source"] + ": ") and len(f["error"]) > len(f["source"]) + 5

    # The database holds the stored files only, with their text; a rejected file left no row.
    rows = stored(store, unique_name)
    assert set(rows) == {s for s, o in want.items() if o in ("added", "partial")}
    for source, e in expected.items():
        if e.text:
            assert e.text in rows[source][3], source
    assert remembered(store, unique_name) == {s for s, o in want.items() if o == "failed"}
    assert stats["peak_rss_mb"] < RSS_LIMIT_MB

    # Second run: nothing changes, the same verdicts, failed files not parsed again, fast.
    code2, report2, stats2 = run_capped(args, proc_env, tmp_path / "second.json")
    print(f"hostile corpus, second run: {stats2}")
    assert code2 == 1
    again = {s: ("added" if o == "unchanged" else o) for s, o in outcomes(report2).items()}
    assert again == want
    assert report2["added"] == report2["updated"] == [] and report2["embedded"] == 0
    assert all("still failing" in f["error"] for f in report2["failed"])
    assert {w["source"] for w in report2["warnings"]} >= set(report2["partial"])
    assert stored(store, unique_name) == rows
    assert report2["seconds"] < max(5.0, report["seconds"] / 3)
