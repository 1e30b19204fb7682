"""Benchmark: parse speed of issue 26's formats (docs/adr/0023-more-formats.md), one process, side by side.

    python benchmarks/bench_formats.py [OUT_DIR]

Builds the sample set (testkit/format_samples.py, testkit/hostile/make_formats_corpus.py; the XQuAD bilingual DOCX from
tests/fixtures saved by LibreOffice as ODT/RTF/EPUB/DOC, a 300-slide deck as ODP/PPT and a 5,000-row workbook as
ODS/XLS where LibreOffice is installed), then times ``kaynak.loaders.load`` on each (best of 3; LibreOffice
conversions once) and prints a Markdown table: size, documents, pages, characters, seconds, MB/s, pages/s. On a
shared machine compare rows, not absolute numbers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # testkit/

from kaynak.loaders import legacy, load  # noqa: E402
from testkit.format_samples import TR_PASSAGE, make_eml, make_odt, make_udf  # noqa: E402
from testkit.hostile.make_formats_corpus import big_mbox, many_slides  # noqa: E402


def build(out: Path) -> list[Path]:
    import openpyxl

    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "tests/fixtures/docs/docx/xquad_tr_en_bilingual_GENERATED.docx", out / "x.docx")
    (out / "deck.pptx").write_bytes(many_slides(300))
    wb = openpyxl.Workbook()
    ws = wb.active
    for i in range(5000):
        ws.append([f"Satır {i}", i, i * 2.5, "İstanbul Boğaz köprüsü", f"not {i}"])
    wb.save(out / "rows.xlsx")
    rows = (f"Satır {i};{i};{i * 2.5};İstanbul Boğaz köprüsü;not {i}\n" for i in range(100_000))
    (out / "rows.csv").write_bytes("".join(rows).encode("cp1254"))
    paras = [(f"Paragraf {i}: " + TR_PASSAGE * 3, False) if i % 10 else (f"BÖLÜM {i}", True) for i in range(2000)]
    (out / "big.udf").write_bytes(make_udf(paras, page_break_after=1000))
    (out / "mails.mbox").write_bytes(big_mbox(1000, 500))
    csv_part = (out / "rows.csv").read_bytes()[:200_000]
    (out / "att.eml").write_bytes(make_eml(attachments={"plan.odt": make_odt(), "rows.csv": csv_part}))
    files = ["x.docx"]
    exe = legacy.soffice_path()
    if exe is not None:
        for source, targets in (("x.docx", "odt rtf epub doc"), ("deck.pptx", "odp ppt"), ("rows.xlsx", "ods xls")):
            for target in targets.split():
                subprocess.run(
                    [exe, f"-env:UserInstallation=file://{out}/profile", "--headless", "--convert-to", target,
                     "--outdir", str(out), str(out / source)],
                    check=True, capture_output=True, timeout=300,
                )  # fmt: skip
        files += ["x.odt", "x.rtf", "x.epub", "x.doc", "deck.pptx", "deck.odp", "deck.ppt"]
        files += ["rows.xlsx", "rows.ods", "rows.xls"]
    else:
        files += ["deck.pptx", "rows.xlsx"]
    files += ["rows.csv", "big.udf", "mails.mbox", "att.eml"]
    return [out / f for f in files]


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="kaynak-bench-formats-"))
    print("| File | Size | Result | Time | MB/s | pages/s |\n|---|---|---|---|---|---|")
    for path in build(out):
        size = os.path.getsize(path)
        reps = 1 if path.suffix in (".doc", ".xls", ".ppt") else 3
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            doc = load(path)
            best = min(best, time.perf_counter() - t0)
        pages = len(doc.pages) + sum(len(p.pages) for _, p in doc.parts)
        chars = sum(len(p.text) for p in doc.pages) + sum(len(x.text) for _, p in doc.parts for x in p.pages)
        docs = (1 if doc.pages else 0) + len(doc.parts)
        print(
            f"| {path.name} | {size / 1e6:.2f} MB | {docs} docs, {pages} pages, {chars:,} chars | {best:.2f} s "
            f"| {size / 1e6 / best:.1f} | {pages / best:.0f} |"
        )


if __name__ == "__main__":
    main()
