"""Regression tests on the world's files: the fidelity benchmark's corpus (benchmarks/fidelity/corpus/, files from
other projects' public test suites, see its MANIFEST.tsv and docs/fidelity.md) read by the loaders, each held to
what the benchmark measured: it must parse, its word recall against the independent reference must not fall below
``min_recall``, and its page count must stay ``pages`` where that agreed with the reference.

A representative subset (every format; the fastest files) runs always; the whole corpus — LibreOffice conversions
and OCR included, a few minutes — is marked slow. The benchmark itself (benchmarks/fidelity/run.py) measures more.
"""

from __future__ import annotations

import collections
import csv
import re
import unicodedata
from pathlib import Path

import pytest

from kaynak.errors import LoaderError
from kaynak.loaders import load

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


def _check(row: dict[str, str]) -> None:
    path = CORPUS / row["file"]
    try:
        doc = load(path)
    except LoaderError as err:
        if row.get("must_parse") == "yes":
            pytest.fail(f"{row['file']} was read by the benchmark and now fails: {err}")
        return
    texts = [p.text for p in doc.pages] + [p.text for _, part in doc.parts for p in part.pages]
    if row.get("min_recall"):
        ref = _words((REFERENCE / (row["file"] + ".txt")).read_text(encoding="utf-8"))
        got = _words("\f".join(texts))
        recall = sum((ref & got).values()) / max(1, sum(ref.values()))
        assert recall >= float(row["min_recall"]), f"{row['file']}: word recall {recall:.3f} < {row['min_recall']}"
    if row.get("pages"):
        pages = len(doc.parts) + (1 if any(p.text.strip() for p in doc.pages) else 0) if path.suffix.lower() in (
            ".mbox", ".mbx") else len(doc.pages)  # fmt: skip
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
def test_world_file_keeps_its_measured_fidelity(row: dict[str, str]) -> None:
    _check(row)


@pytest.mark.slow
@pytest.mark.parametrize("row", REST, ids=[r["file"] for r in REST])
def test_world_file_keeps_its_measured_fidelity_all(row: dict[str, str]) -> None:
    _check(row)
