"""``kaynak ingest``: exit codes, --json, --prune, and real processes — two at once, SIGKILL mid-run, SIGINT."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kaynak.cli import app
from kaynak.errors import CollectionNotFound
from kaynak.store import Store
from kaynak.store.store import chunk_id

_WORDS = """
river town lake bridge market water century people walk side street house garden road station tower window
light morning evening winter summer harbour island mountain valley forest field village
"""
WORDS = _WORDS.split()


def make_files(root: Path, n: int, paragraphs: int = 4) -> list[str]:
    """``n`` English Markdown files of a few distinct paragraphs each (deterministic)."""
    sources = []
    for i in range(n):
        rel = f"part{i % 3}/note{i:03d}.md"
        paras = []
        for p in range(paragraphs):
            words = [WORDS[(i * 7 + p * 3 + k) % len(WORDS)] for k in range(60)]
            paras.append(f"The {words[0]} and the {words[1]} of note {i} are in this {p}. " + " ".join(words) + ".")
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")
        sources.append(rel)
    return sorted(sources)


def check_store_matches(store: Store, collection: str, root: Path, sources: list[str]) -> None:
    """Document by document: sha256 of the file, every chunk present and true to its page, nothing else."""
    col = store.get_collection(collection)
    assert sorted(store.document_hashes(col)) == sorted(sources)
    total = 0
    for source in sources:
        doc = store.get_document(col, source)
        assert doc.sha256 == hashlib.sha256((root / source).read_bytes()).hexdigest()
        chunks = store.get_chunks([chunk_id(col.name, source, doc.sha256, i) for i in range(doc.chunk_count)])
        assert len(chunks) == doc.chunk_count > 0
        pages: dict[int, str] = {}
        for c in chunks.values():
            if c.page not in pages:
                pages[c.page] = store.get_page(col, source, c.page)
            assert pages[c.page][c.char_start : c.char_end] == c.text
        total += doc.chunk_count
    assert store.chunk_count(col) == total


def doc_count(store: Store, name: str) -> int:
    try:
        return len(store.document_hashes(store.get_collection(name)))
    except CollectionNotFound:
        return 0


def kaynak(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kaynak", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


# ------------------------------------------------------------------------------------------------ in process
def test_json_report_exit_codes_and_prune(env: dict[str, str], store: Store, tmp_path: Path, unique_name: str) -> None:
    runner = CliRunner()
    sources = make_files(tmp_path, 4, paragraphs=1)
    res = runner.invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--language", "english", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert sorted(report["added"]) == sources and report["ok"] is True and report["chunks"] > 0

    (tmp_path / sources[0]).unlink()
    (tmp_path / "empty.md").write_text("", encoding="utf-8")
    res = runner.invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--prune", "--json"])
    assert res.exit_code == 1, res.output  # one file failed, the rest went in
    report = json.loads(res.stdout)
    assert report["removed"] == [sources[0]] and [f["source"] for f in report["failed"]] == ["empty.md"]
    assert sorted(report["unchanged"]) == sources[1:]
    check_store_matches(store, unique_name, tmp_path, sources[1:])

    # A file named on its own is its own root: its source is its name.
    res = runner.invoke(app, ["ingest", str(tmp_path / sources[1]), "-c", unique_name, "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["added"] == [Path(sources[1]).name]


def test_usage_errors_exit_2_and_conflicts_exit_1(env: dict[str, str], tmp_path: Path, unique_name: str) -> None:
    runner = CliRunner()
    make_files(tmp_path, 1, paragraphs=1)
    res = runner.invoke(app, ["ingest", str(tmp_path / "missing"), "-c", unique_name])
    assert res.exit_code == 2 and "does not exist" in res.stderr
    res = runner.invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--language", "latin"])
    assert res.exit_code == 2 and "--language" in res.stderr
    res = runner.invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--language", "english"])
    assert res.exit_code == 0
    res = runner.invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--language", "turkish"])
    assert res.exit_code == 1 and "'english'" in res.stderr and "'turkish'" in res.stderr
    res = runner.invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--embedder", "no-such-model"])
    assert res.exit_code == 1 and "no-such-model" in res.stderr


def test_partial_skipped_and_failed_are_counted_and_listed(
    env: dict[str, str], store: Store, tmp_path: Path, unique_name: str
) -> None:
    runner = CliRunner()
    make_files(tmp_path, 2, paragraphs=1)
    (tmp_path / "nul.md").write_bytes(b"# Nul\n\nThe river\x00side market opens at nine in the morning.\n")
    (tmp_path / "binary.txt").write_bytes(bytes(range(256)) * 8)
    os.symlink("/etc/hostname", tmp_path / "out.md")
    res = runner.invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--language", "english"])
    assert res.exit_code == 1, res.output
    assert "2 added, 0 updated, 0 unchanged, 1 partial, 0 removed, 1 failed, 1 skipped" in res.stdout
    assert "partial: nul.md: 1 NUL byte dropped" in res.stderr
    assert "failed: binary.txt: not text (unknown encoding or binary)" in res.stderr
    assert "skipped: out.md: symbolic link to /etc/hostname" in res.stderr
    res = runner.invoke(app, ["documents", "show", "nul.md", "-c", unique_name, "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["warnings"] == ["1 NUL byte dropped"]
    res = runner.invoke(app, ["documents", "list", "-c", unique_name], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "1 NUL byte dropped" in res.stdout
    res = runner.invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--json"])
    report = json.loads(res.stdout)
    assert res.exit_code == 1 and report["partial"] == ["nul.md"] and report["ok"] is False
    assert report["warnings"] == [{"source": "nul.md", "warning": "1 NUL byte dropped"}]


def test_internal_error_exits_3_names_the_file_and_prints_the_report(
    env: dict[str, str], tmp_path: Path, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = make_files(tmp_path, 3, paragraphs=1)
    real = Store.replace_document

    def broken(self: Store, collection, source, *args, **kwargs):  # type: ignore[no-untyped-def]
        if source == sources[1]:
            raise ZeroDivisionError("a bug")
        return real(self, collection, source, *args, **kwargs)

    monkeypatch.setattr(Store, "replace_document", broken)
    res = CliRunner().invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--language", "english"])
    assert res.exit_code == 3, res.output
    assert f"internal error while processing {sources[1]}: ZeroDivisionError: a bug" in res.stderr
    assert "this is a bug in kaynak" in res.stderr and "Traceback" in res.stderr
    assert f"{unique_name}: " in res.stdout and "added" in res.stdout  # the report of what was done


# ------------------------------------------------------------------------------------------------ processes
def test_two_processes_at_once_end_like_one(
    env: dict[str, str], store: Store, tmp_path: Path, unique_name: str
) -> None:
    sources = make_files(tmp_path, 40, paragraphs=2)
    procs = [kaynak("ingest", str(tmp_path), "-c", unique_name, "--json") for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    reports = [json.loads(out) for out, _ in outs]
    added = sorted(reports[0]["added"] + reports[1]["added"])
    assert added == sources  # every document added exactly once, by one or the other
    for r in reports:
        assert sorted(r["added"] + r["unchanged"]) == sources and not r["failed"]
    check_store_matches(store, unique_name, tmp_path, sources)


def _wait_for_documents(store: Store, name: str, proc: subprocess.Popen[str], at_least: int) -> int:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        n = doc_count(store, name)
        if n >= at_least or proc.poll() is not None:
            return n
        time.sleep(0.02)
    pytest.fail("the ingest wrote no document in 90 s")


def test_sigkill_mid_run_leaves_whole_documents_and_rerun_completes(
    env: dict[str, str], store: Store, tmp_path: Path, unique_name: str
) -> None:
    sources = make_files(tmp_path, 120, paragraphs=2)
    proc = kaynak("ingest", str(tmp_path), "-c", unique_name, "--language", "english")
    _wait_for_documents(store, unique_name, proc, 5)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    present = sorted(store.document_hashes(store.get_collection(unique_name)))
    assert 0 < len(present) < len(sources), "the kill came after the run ended; nothing was tested"
    check_store_matches(store, unique_name, tmp_path, present)  # no half document

    again = kaynak("ingest", str(tmp_path), "-c", unique_name, "--json")
    out, err = again.communicate(timeout=180)
    assert again.returncode == 0, err
    report = json.loads(out)
    assert sorted(report["unchanged"]) == present
    assert sorted(report["added"]) == sorted(set(sources) - set(present))
    check_store_matches(store, unique_name, tmp_path, sources)


def test_sigint_stops_cleanly_and_says_so(env: dict[str, str], store: Store, tmp_path: Path, unique_name: str) -> None:
    sources = make_files(tmp_path, 120, paragraphs=2)
    proc = kaynak("ingest", str(tmp_path), "-c", unique_name, "--language", "english")
    _wait_for_documents(store, unique_name, proc, 1)
    # Searches keep answering while the ingest writes.
    col = store.get_collection(unique_name)
    assert store.keyword_search([col], "river bridge", k=3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    present = sorted(store.document_hashes(store.get_collection(unique_name)))
    assert 0 < len(present) < len(sources)
    check_store_matches(store, unique_name, tmp_path, present)
    assert os.path.exists(tmp_path / sources[-1])


def test_progress_bar_shows_the_current_file() -> None:
    from kaynak.cli.ingest_cmd import _ProgressBar
    from kaynak.ingest import IngestEvent

    bar = _ProgressBar()
    bar(IngestEvent("reading", source="klasör/" + "uzun-ad-" * 20 + "rapor.pdf", files_total=3))
    current = bar.progress.tasks[0].fields["current"]
    assert current.endswith("rapor.pdf") and current.startswith("…") and len(current) <= 60
    bar(IngestEvent("done", files_total=3, files_done=3))
    assert bar.progress.tasks[0].fields["current"] == ""
