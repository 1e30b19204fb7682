"""The fidelity benchmark: parse every corpus file through kaynak's parse workers (as ingest does) and compare
what kaynak reads with an independent reference (reference/, made by make_references.py).

    python benchmarks/fidelity/run.py [--formats pdf,docx] [--out docs/fidelity.md --label AFTER]
                                      [--json benchmarks/fidelity/results/AFTER.json] [--files tika/testRTF.rtf]

Against another checkout of kaynak: ``PYTHONPATH=/tmp/before/src python benchmarks/fidelity/run.py …`` (the
kaynak that is imported is printed first).

Per format it reports: files; outcomes (ok / partial / failed / no text, as ``kaynak ingest`` would report them:
partial = stored with warnings); word recall and precision against the reference (Unicode word tokens, NFKC,
Turkish-aware case folding: ``I``→``ı``, ``İ``→``i``; multiset overlap per file, then the mean over files whose
reference has text; a file that fails counts with recall 0); how many files reach recall ≥ 0.98; page-count
agreement where the reference has a count of the same kind (PDF pages, slides, sheets, chapters, messages, UDF
page breaks; word processors' rendered page counts are shown apart, since kaynak counts explicit page breaks);
section agreement where the reference knows headings (every reference heading is a section name, or part of one,
in kaynak's pages); speed (files/s and MB/s over the parse time measured around each file) and the worker's peak
RSS (VmHWM, reset before each file).
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import json
import os
import re
import statistics
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CORPUS = HERE / "corpus"
REFERENCE = HERE / "reference"
MARK = "__fidelity__"

FORMATS: dict[str, str] = {
    ".pdf": "PDF", ".docx": "DOCX", ".odt": "ODT", ".rtf": "RTF", ".html": "HTML", ".htm": "HTML",
    ".xhtml": "HTML", ".md": "Markdown", ".txt": "text", ".xlsx": "XLSX", ".ods": "ODS", ".csv": "CSV",
    ".pptx": "PPTX", ".odp": "ODP", ".epub": "EPUB", ".eml": "EML", ".mbox": "MBOX", ".udf": "UDF",
    ".doc": "DOC", ".xls": "XLS", ".ppt": "PPT", ".png": "scans", ".jpg": "scans", ".jpeg": "scans",
    ".tif": "scans", ".tiff": "scans",
}  # fmt: skip
ORDER = ["PDF", "DOCX", "ODT", "RTF", "HTML", "Markdown", "text", "XLSX", "ODS", "CSV", "PPTX", "ODP", "EPUB",
         "EML", "MBOX", "UDF", "DOC", "XLS", "PPT", "scans"]  # fmt: skip
RECALL_GOAL = 0.98
_WORD = re.compile(r"[^\W_]+")


def fold(text: str) -> str:
    """NFKC, Turkish dotted/dotless i kept apart, then case folded."""
    text = unicodedata.normalize("NFKC", text)
    return text.replace("I", "ı").replace("İ", "i").casefold()


def words(text: str) -> collections.Counter[str]:
    return collections.Counter(_WORD.findall(fold(text)))


def overlap(ref: collections.Counter[str], got: collections.Counter[str]) -> tuple[float | None, float | None]:
    """(recall, precision): recall over the reference's words counted with repeats (a word the reference has
    three times must be there three times); precision over kaynak's distinct words (a sheet's header repeated on
    every row, a footer on every page are one word read right, not many words read wrong)."""
    nref = sum(ref.values())
    recall = sum((ref & got).values()) / nref if nref else None
    precision = sum(1 for w in got if w in ref) / len(got) if got else None
    return recall, precision


def norm_heading(text: str) -> str:
    """Words of a heading, case folded, without a leading outline number ("2.1 Example" → "example"): LibreOffice
    writes the list numbering into its export, kaynak's section names are the heading text."""
    tokens = _WORD.findall(fold(text))
    while len(tokens) > 1 and tokens[0].isdigit():
        tokens.pop(0)
    return " ".join(tokens)


def sections_agree(headings: list[str], names: set[str]) -> tuple[int, int]:
    """(found, wanted): reference headings that are a section name or part of one."""
    wanted = [h for h in (norm_heading(h) for h in headings) if h]
    found = 0
    for h in wanted:
        if h in names or any(len(h) >= 3 and h in n for n in names):
            found += 1
    return found, len(wanted)


def manifest() -> list[dict[str, str]]:
    with open(CORPUS / "MANIFEST.tsv", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def parse_all(rows: list[dict[str, str]], timeout: float, memory_mb: int) -> list[dict[str, Any]]:
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])])
    sys.path.insert(0, str(HERE))
    from kaynak.config import Settings
    from kaynak.ingest.workers import ParsePool, ParseTask
    from kaynak.loaders import LoadOptions

    settings = Settings()
    options = LoadOptions(None, None, None)
    results = []
    with ParsePool(workers=1, memory_mb=memory_mb, timeout_s=timeout) as pool:
        # warm the worker (the fork server preloads the parsers) so the first file's time is its own
        warm = CORPUS / rows[0]["file"]
        pool.parse(ParseTask(str(warm), 100 * 2**20, options, settings.chunk_size, settings.chunk_overlap))
        for i, row in enumerate(rows):
            path = CORPUS / row["file"]
            task = ParseTask(str(path), 100 * 2**20, options, settings.chunk_size, settings.chunk_overlap,
                             call="fidelity_worker:measured")  # fmt: skip
            t0 = time.perf_counter()
            answer = pool.parse(task)
            wall = time.perf_counter() - t0
            results.append(summarise(row, path, answer, wall))
            r = results[-1]
            print(f"[{i + 1}/{len(rows)}] {row['file']}: {r['outcome']} {wall:.2f}s", file=sys.stderr, flush=True)
    return results


def summarise(row: dict[str, str], path: Path, answer: Any, wall: float) -> dict[str, Any]:
    warnings = list(getattr(answer, "warnings", []) or [])
    rss_kb, cpu = 0, None
    kept = []
    for w in warnings:
        if w.startswith(MARK):
            m = dict(kv.split("=", 1) for kv in w.split()[1:])
            rss_kb, cpu = int(m.get("rss_kb", 0)), float(m.get("cpu_s", 0))
        else:
            kept.append(w)
    out: dict[str, Any] = {
        "file": row["file"], "format": FORMATS.get(path.suffix.lower(), path.suffix), "bytes": path.stat().st_size,
        "wall_s": round(wall, 4), "cpu_s": cpu, "rss_mb": round(rss_kb / 1024, 1), "warnings": kept,
    }  # fmt: skip
    reason = getattr(answer, "reason", None)
    if reason is not None:
        out["outcome"] = "no text" if "no text" in reason.lower() else "failed"
        out["reason"] = reason
        out["text"] = ""
        out["pages"] = 0
        out["sections"] = []
        return out
    texts, sections, pages = [], set(), len(answer.pages)
    for p in answer.pages:
        texts.append(p.text)
        sections.update(s.path for s in p.sections)
    for _suffix, part in answer.parts:
        for p in part.pages:
            texts.append(p.text)
            sections.update(s.path for s in p.sections)
    if path.suffix.lower() in (".mbox", ".mbx"):
        pages = len(answer.parts) + (1 if answer.chunks else 0)
    out["outcome"] = "partial" if kept else "ok"
    out["text"] = "\f".join(texts)
    out["pages"] = pages
    out["sections"] = sorted(sections)
    out["title"] = answer.title
    return out


def score(results: list[dict[str, Any]], index: dict[str, Any]) -> None:
    for r in results:
        ref = index.get(r["file"], {})
        r["ref_method"] = ref.get("method")
        r["recall"] = r["precision"] = None
        if ref.get("has_text"):
            rtext = (REFERENCE / (r["file"] + ".txt")).read_text(encoding="utf-8")
            rw, gw = words(rtext), words(r["text"])
            recall, precision = overlap(rw, gw)
            r["missing"] = [w for w, _ in (rw - gw).most_common(8)]
            r["recall"] = recall if r["outcome"] in ("ok", "partial") else 0.0
            r["precision"] = precision if r["outcome"] in ("ok", "partial") else None
        r["ref_pages"], r["pages_kind"] = ref.get("pages"), ref.get("pages_kind")
        r["pages_agree"] = None if r["ref_pages"] is None else r["pages"] == r["ref_pages"]
        if r["outcome"] in ("failed", "no text") and not ref.get("has_text"):
            r["pages_agree"] = None  # nothing to read on either side (an encrypted file, blank pages)
        heads = ref.get("headings") or []
        if heads:
            names: set[str] = set()
            for s in r["sections"]:
                for piece in s.split("›"):
                    names.add(norm_heading(piece))
                names.add(norm_heading(s))
            found, wanted = sections_agree(heads, names)
            r["sections_found"], r["sections_wanted"] = found, wanted
            r["sections_agree"] = found == wanted if wanted else None
        else:
            r["sections_agree"] = None


def pct(n: int, d: int) -> str:
    return f"{n}/{d}" if d else "–"


def table(results: list[dict[str, Any]]) -> str:
    by: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in results:
        by[r["format"]].append(r)
    head = (
        "| format | files | ok / partial / failed / no text | word recall | precision | recall ≥ 0.98 "
        "| pages agree | rendered pages agree | sections agree | files/s | MB/s | peak RSS MB |"
    )
    lines = [head, "|" + "---|" * 12]
    total: list[dict[str, Any]] = []
    for fmt in ORDER + sorted(set(by) - set(ORDER)):
        rs = by.get(fmt)
        if not rs:
            continue
        total += rs
        lines.append(row_line(fmt, rs))
    lines.append(row_line("**all**", total))
    return "\n".join(lines)


def row_line(fmt: str, rs: list[dict[str, Any]]) -> str:
    c = collections.Counter(r["outcome"] for r in rs)
    rec = [r["recall"] for r in rs if r["recall"] is not None]
    prec = [r["precision"] for r in rs if r.get("precision") is not None]
    same = [r["pages_agree"] for r in rs if r["pages_agree"] is not None and r["pages_kind"] != "rendered"]
    rend = [r["pages_agree"] for r in rs if r["pages_agree"] is not None and r["pages_kind"] == "rendered"]
    secs = [r["sections_agree"] for r in rs if r["sections_agree"] is not None]
    wall = sum(r["wall_s"] for r in rs) or 1e-9
    mb = sum(r["bytes"] for r in rs) / 2**20
    rss = max((r["rss_mb"] for r in rs), default=0)
    cells = [
        fmt,
        str(len(rs)),
        f"{c['ok']} / {c['partial']} / {c['failed']} / {c['no text']}",
        f"{statistics.mean(rec):.3f}" if rec else "–",
        f"{statistics.mean(prec):.3f}" if prec else "–",
        pct(sum(1 for x in rec if x >= RECALL_GOAL), len(rec)),
        pct(sum(same), len(same)),
        pct(sum(rend), len(rend)),
        pct(sum(secs), len(secs)),
        f"{len(rs) / wall:.1f}",
        f"{mb / wall:.2f}",
        f"{rss:.0f}",
    ]
    return "| " + " | ".join(cells) + " |"


def defects(results: list[dict[str, Any]], limit: int = 12) -> str:
    """Per format: the files that failed or read no text, then the lowest recall, wrong page counts and sections."""
    out = []
    by: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in results:
        by[r["format"]].append(r)
    for fmt in ORDER + sorted(set(by) - set(ORDER)):
        rs = by.get(fmt)
        if not rs:
            continue
        items = []
        for r in rs:
            name = r["file"]
            if r["outcome"] in ("failed", "no text"):
                if r["recall"] is not None:
                    items.append((0, f"`{name}`: {r['outcome']} (the reference has text): {r.get('reason', '')[:200]}"))
                else:  # the reference reads nothing either: only the message matters
                    items.append(
                        (4, f"`{name}`: {r['outcome']} (no reference text either): {r.get('reason', '')[:160]}")
                    )
            elif r["recall"] is not None and r["recall"] < RECALL_GOAL:
                missing = ", ".join(r.get("missing") or [])
                text = f"`{name}`: recall {r['recall']:.2f}, precision {r['precision'] or 0:.2f}; missing: {missing}"
                items.append((1 + r["recall"], text))
            if r["outcome"] == "partial":
                items.append((3, f"`{name}`: partial: {'; '.join(r['warnings'])[:200]}"))
            if r["pages_agree"] is False and r["pages_kind"] != "rendered":
                items.append(
                    (2, f"`{name}`: {r['pages']} pages, the reference has {r['ref_pages']} ({r['pages_kind']})")
                )
            if r["sections_agree"] is False:
                items.append((2.5, f"`{name}`: sections found {r['sections_found']}/{r['sections_wanted']} headings"))
        if not items:
            continue
        items.sort(key=lambda x: x[0])
        out.append(f"**{fmt}**\n")
        out += [f"- {t}" for _, t in items[:limit]]
        if len(items) > limit:
            out.append(f"- … and {len(items) - limit} more")
        out.append("")
    return "\n".join(out)


def write_markdown(path: Path, label: str, body: str) -> None:
    start, end = f"<!-- fidelity:{label} -->", f"<!-- /fidelity:{label} -->"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Fidelity benchmark\n"
    block = f"{start}\n{body.rstrip()}\n{end}"
    heading = re.search(rf"(?m)^##+ {re.escape(label)}\b.*$", text)
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    elif heading:  # under the heading that names the label ("### BEFORE (code at c966fb4)")
        text = text[: heading.end()] + "\n\n" + block + "\n" + text[heading.end() :]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--formats", default="", help="comma-separated extensions or format names (pdf,DOCX,scans)")
    ap.add_argument("--files", nargs="*", default=None, help="corpus-relative files only")
    ap.add_argument("--out", type=Path, default=None, help="write the table into this Markdown file")
    ap.add_argument("--label", default="latest", help="the block of --out to replace (BEFORE, AFTER, …)")
    ap.add_argument("--json", type=Path, default=None, help="per-file results (without texts)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--memory-mb", type=int, default=2048)
    ap.add_argument("--save", type=Path, default=None, help="keep the parsed texts too (.json.gz), for --rescore")
    ap.add_argument("--rescore", type=Path, default=None, help="score a --save file again instead of parsing")
    ap.add_argument("--note", default="", help="a line written above the table (the commit measured, the machine)")
    args = ap.parse_args()
    import kaynak

    print(f"kaynak from {Path(kaynak.__file__).parent}", file=sys.stderr)
    wanted = {w.strip().lower().lstrip(".") for w in args.formats.split(",") if w.strip()}
    rows = [
        r for r in manifest()
        if (not wanted or Path(r["file"]).suffix.lower().lstrip(".") in wanted
            or FORMATS.get(Path(r["file"]).suffix.lower(), "").lower() in wanted)
        and (args.files is None or r["file"] in args.files)
        and (CORPUS / r["file"]).exists()  # files kept out of git (people's mail) exist only where they were built
    ]  # fmt: skip
    index = json.loads((REFERENCE / "INDEX.json").read_text(encoding="utf-8"))
    t0 = time.perf_counter()
    if args.rescore:
        with gzip.open(args.rescore, "rt", encoding="utf-8") as f:
            saved = json.load(f)
        keep = {r["file"] for r in rows}
        results, elapsed = [r for r in saved["results"] if r["file"] in keep], saved["elapsed"]
    else:
        results = parse_all(rows, args.timeout, args.memory_mb)
        elapsed = time.perf_counter() - t0
    if args.save:
        with gzip.open(args.save, "wt", encoding="utf-8") as f:
            json.dump({"elapsed": elapsed, "results": results}, f, ensure_ascii=False)
    score(results, index)
    tab = table(results)
    print(tab)
    found = defects(results)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        slim = [{k: v for k, v in r.items() if k != "text"} for r in results]
        args.json.write_text(json.dumps(slim, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    if args.out:
        note = args.note or f"{len(results)} files, {elapsed:.0f} s, one parse worker"
        lost = [r["file"] for r in results if r["outcome"] in ("failed", "no text") and r["recall"] is not None]
        rec = [r["recall"] for r in results if r["recall"] is not None]
        below = sum(1 for x in rec if x < RECALL_GOAL)
        tab += (
            f"\n\nFiles whose reference has text that kaynak stored nothing for: {len(lost)}"
            + (f" ({', '.join(f'`{f}`' for f in lost)})" if lost else "")
            + f"; files below recall {RECALL_GOAL}: {below} of {len(rec)}."
        )
        summary = f"<details><summary>what the {args.label} run found, per format</summary>"
        body = f"{note}\n\n{tab}\n\n{summary}\n\n{found}\n</details>\n"
        write_markdown(args.out, args.label, body)


if __name__ == "__main__":
    main()
