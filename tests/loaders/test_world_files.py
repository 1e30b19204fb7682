"""Regression tests on the world's files: the fidelity benchmark's corpus (benchmarks/fidelity/corpus/, files from
other projects' public test suites, see its MANIFEST.tsv and docs/fidelity.md) read by the loaders, each held to
what the benchmark measured: it must parse, its word recall against the independent reference must not fall below
``min_recall``, and its page count must stay ``pages`` where that agreed with the reference.

Each file is parsed in a parse worker (kaynak.ingest.workers) under its memory and time limits, as ingest does.
A representative subset (every format; the fastest files) runs always; the whole corpus — LibreOffice conversions
and OCR included, a few minutes — is marked slow. The benchmark itself (benchmarks/fidelity/run.py) measures more.
"""

from __future__ import annotations

import collections
import csv
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from kaynak.config import Settings
from kaynak.ingest.workers import ParseFailure, ParsePool, ParseTask
from kaynak.loaders import LoadOptions

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "fidelity"
CORPUS = BENCH / "corpus"
REFERENCE = BENCH / "reference"

_WORD = re.compile(r"[^\W_]+")
#: formats whose loaders start another program (LibreOffice) or OCR: one file of each group in the fast subset
_GROUP = {".doc": "legacy", ".xls": "legacy", ".ppt": "legacy", ".png": "scans", ".jpg": "scans", ".jpeg": "scans",
          ".tif": "scans", ".tiff": "scans"}  # fmt: skip
_PER_FORMAT = 6  # fast files per extension
_SLOW_PER_GROUP = 1
_FAST_S = 0.5  # files the benchmark parsed faster than this (``parse_s``) are the fast subset's candidates


def _rows() -> list[dict[str, str]]:
    with open(CORPUS / "MANIFEST.tsv", encoding="utf-8") as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r.get("committable") == "yes"]


def _split() -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(fast subset, the rest): per extension the smallest quick files, one file of the LibreOffice and OCR groups."""
    by: dict[str, list[dict[str, str]]] = collections.defaultdict(list)
    for r in _rows():
        ext = Path(r["file"]).suffix.lower()
        by[_GROUP.get(ext, ext)].append(r)
    fast, rest = [], []
    for group, rows in sorted(by.items()):
        rows.sort(key=lambda r: ((CORPUS / r["file"]).stat().st_size, r["file"]))
        quick = [r for r in rows if not r.get("parse_s") or float(r["parse_s"]) < _FAST_S]
        take = quick[: _SLOW_PER_GROUP if group in ("legacy", "scans") else _PER_FORMAT]
        fast += take
        rest += [r for r in rows if r not in take]
    return fast, rest


FAST, REST = _split()


def _words(text: str) -> collections.Counter[str]:
    text = unicodedata.normalize("NFKC", text).replace("I", "ı").replace("İ", "i").casefold()
    return collections.Counter(_WORD.findall(text))


@pytest.fixture(scope="module")
def pool() -> Iterator[ParsePool]:
    """Files are parsed as ingest parses them: in a worker process under the memory and time limits."""
    with ParsePool(workers=1, timeout_s=300) as p:
        yield p


def _check(pool: ParsePool, row: dict[str, str]) -> None:
    path = CORPUS / row["file"]
    settings = Settings()
    task = ParseTask(str(path), 100 * 2**20, LoadOptions(), settings.chunk_size, settings.chunk_overlap)
    answer = pool.parse(task)
    if isinstance(answer, ParseFailure):
        if row.get("must_parse") == "yes":
            pytest.fail(f"{row['file']} was read by the benchmark and now fails: {answer.reason}")
        return
    texts = [p.text for p in answer.pages] + [p.text for _, part in answer.parts for p in part.pages]
    if row.get("min_recall"):
        ref = _words((REFERENCE / (row["file"] + ".txt")).read_text(encoding="utf-8"))
        got = _words("\f".join(texts))
        recall = sum((ref & got).values()) / max(1, sum(ref.values()))
        assert recall >= float(row["min_recall"]), f"{row['file']}: word recall {recall:.3f} < {row['min_recall']}"
    if row.get("pages"):
        mailbox = path.suffix.lower() in (".mbox", ".mbx")
        pages = len(answer.parts) + (1 if answer.chunks else 0) if mailbox else len(answer.pages)
        assert pages == int(row["pages"]), f"{row['file']}: {pages} pages, expected {row['pages']}"


def test_the_manifest_names_every_file_with_its_origin_and_licence() -> None:
    rows = _rows()
    assert len(rows) >= 200
    on_disk = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file() and p.name != "MANIFEST.tsv"}
    assert {r["file"] for r in rows} <= on_disk
    with open(CORPUS / "MANIFEST.tsv", encoding="utf-8") as f:
        listed = {r["file"] for r in csv.DictReader(f, delimiter="\t")}
    assert on_disk - {".gitignore"} <= listed
    for r in rows:
        assert r["repo"] and r["path"] and r["licence"], r["file"]


@pytest.mark.parametrize("row", FAST, ids=[r["file"] for r in FAST])
def test_world_file_keeps_its_measured_fidelity(pool: ParsePool, row: dict[str, str]) -> None:
    _check(pool, row)


@pytest.mark.slow
@pytest.mark.parametrize("row", REST, ids=[r["file"] for r in REST])
def test_world_file_keeps_its_measured_fidelity_all(pool: ParsePool, row: dict[str, str]) -> None:
    _check(pool, row)
