"""The hostile corpus (testkit/hostile/make_corpus.py) through ``kaynak ingest`` under a hard memory cap.

One run over the whole corpus: it finishes, every file ends with exactly the expected outcome and reason, the
database holds no row of a rejected file, the ingest process stays under 1 GiB RSS; a second run changes nothing,
reports the same outcomes (failed files as "still failing", without parsing them again) and is fast.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kaynak.store import Store
from testkit.hostile.capped import RSS_LIMIT_MB, outcomes, reasons, remembered, run_capped, stored
from testkit.hostile.make_corpus import build


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
