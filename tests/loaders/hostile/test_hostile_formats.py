"""Issue 26's hostile corpus (testkit/hostile/make_formats_corpus.py) through ``kaynak ingest`` under a hard memory cap,
and the mbox of 10,000 messages with one broken message.

Every file ends with exactly the expected outcome and reason, the database holds no row of a rejected file, the
ingest process stays under 1.5 GiB RSS (issue 26's bound), a second run changes nothing. The mbox run stores
9,999 documents in one transaction and reports the broken message as a warning of the mailbox.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kaynak.store import Store
from testkit.hostile.capped import outcomes, reasons, remembered, run_capped, stored
from testkit.hostile.make_formats_corpus import big_mbox, build

RSS_LIMIT_MB = 1536
ENV = {
    "KAYNAK_PARSE_MEMORY_MB": "2048",
    "KAYNAK_PARSE_TIMEOUT_S": "300",
    "KAYNAK_PARSE_WORKERS": "2",
    "KAYNAK_MAX_FILE_MB": "300",  # the 200 MB CSV line reaches the loader instead of the size limit
}


def test_hostile_formats_under_a_memory_cap(
    tmp_path: Path, env: dict[str, str], store: Store, unique_name: str
) -> None:
    root = tmp_path / "root"
    expected = build(root)
    proc_env = dict(os.environ, **ENV)
    args = ["ingest", str(root), "-c", unique_name, "--language", "turkish", "--json"]

    code, report, stats = run_capped(args, proc_env, tmp_path / "first.json")
    print(f"\nhostile formats, first run: {stats}")
    assert code == 1 and stats["exit"] == 1
    got = outcomes(report)
    want = {s: e.outcome for s, e in expected.items()}
    assert got == want
    why = reasons(report)
    for source, e in expected.items():
        if e.says:
            assert e.says.casefold() in why.get(source, "").casefold(), (source, why.get(source))
    rows = stored(store, unique_name)
    assert set(rows) == {s for s, o in want.items() if o in ("added", "partial")}
    for source, e in expected.items():
        if e.text:
            assert e.text in rows[source][3], source
    assert remembered(store, unique_name) == {s for s, o in want.items() if o == "failed"}
    assert stats["peak_rss_mb"] < RSS_LIMIT_MB

    _, report2, stats2 = run_capped(args, proc_env, tmp_path / "second.json")
    print(f"hostile formats, second run: {stats2}")
    assert report2["added"] == report2["updated"] == [] and report2["embedded"] == 0
    assert stored(store, unique_name) == rows


def test_mbox_of_ten_thousand_messages_one_broken(
    tmp_path: Path, env: dict[str, str], store: Store, unique_name: str
) -> None:
    root = tmp_path / "mail"
    root.mkdir()
    (root / "big.mbox").write_bytes(big_mbox())
    args = ["ingest", str(root), "-c", unique_name, "--language", "turkish", "--json"]
    _, report, stats = run_capped(args, dict(os.environ, **ENV), tmp_path / "mbox.json")
    print(f"\nmbox of 10,000 messages: {stats}")
    assert not report["failed"], report["failed"]
    added = report["added"]
    assert len(added) == 9_999 and "big.mbox#5000" not in added and "big.mbox#10000" in added
    assert any(w["source"] == "big.mbox" and "message 5000" in w["warning"] for w in report["warnings"])
    rows = stored(store, unique_name)
    assert len(rows) == 9_999 and "Bu 9999. mesajın metni" in rows["big.mbox#9999"][3]
    assert stats["peak_rss_mb"] < RSS_LIMIT_MB
    json.dumps(report)  # the report of 10,000 documents is still one JSON document


if not hasattr(os, "fork"):  # pragma: no cover
    pytest.skip("needs POSIX", allow_module_level=True)
