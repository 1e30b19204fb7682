"""CLI commands ``kaynak eval DATASET`` (measure search quality and speed) and ``kaynak eval compare A B``.

``eval`` is a command group whose default command is ``run``: ``kaynak eval DIR …`` means ``kaynak eval run DIR …``,
so that both ``kaynak eval ../data/retrieval/scifact`` and ``kaynak eval compare old/ new/`` work.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from typer.core import TyperGroup

from kaynak.cli.common import app, console, err_console, errors_handled, make_context, print_json
from kaynak.errors import UsageError


class _DefaultRunGroup(TyperGroup):
    """A group that treats an unknown first word as the argument of its ``run`` command."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # click's Context (typer may vendor click)
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


eval_app = typer.Typer(
    cls=_DefaultRunGroup,
    help=(
        "Measure search quality and speed on a BEIR folder or on questions about your own documents.\n\n"
        "  kaynak eval ../data/retrieval/xquad/tr --embedder e5-small --out reports/xquad-tr\n\n"
        "  kaynak eval ../data/retrieval/xquad/en --queries ../data/retrieval/xquad/tr   (Turkish → English)\n\n"
        '  kaynak eval questions.jsonl -c notes   (lines: {"question", "source", "page"})\n\n'
        "  kaynak eval compare reports/before reports/after"
    ),
    no_args_is_help=True,
)
app.add_typer(eval_app, name="eval")


def _say(message: str) -> None:
    err_console.print(message, highlight=False, soft_wrap=True)


def _default_out(key: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("eval-out") / f"{re.sub(r'[^A-Za-z0-9]+', '-', key).strip('-') or 'eval'}-{stamp}"


def _print_report(report: dict[str, Any], paths: dict[str, Path]) -> None:
    from kaynak.evaluation.report import metrics_table

    ds = report["dataset"]
    header, rows = metrics_table(report)
    table = Table(*header, title=f"{ds.get('key') or ds.get('name')} — {report['collection'].get('embedder')}")
    for r in rows:
        cells = [f"{c:.3f}" if isinstance(c, float) else str(c) for c in r[:-2]]
        cells += [f"{c:.1f}" if isinstance(c, float) else str(c) for c in r[-2:]]
        table.add_row(*cells)
    console.print(table)
    refs = report.get("reference") or []
    if refs:
        rt = Table("reference system", "nDCG@10", "conditions", title="reference figures")
        for ref in refs:
            rt.add_row(ref["system"], f"{ref['nDCG@10']:.3f}", ref.get("conditions", ""))
        console.print(rt)
    problems = ds.get("problems") or {}
    for key, n in problems.items():
        err_console.print(f"[yellow]note:[/] {key.replace('_', ' ')}: {n}", highlight=False)
    for m in report["modes"]:
        if m.get("errors"):
            err_console.print(f"[yellow]note:[/] mode {m['mode']}: {m['errors']} queries failed", highlight=False)
    misses = report.get("misses") or {}
    for mode, items in misses.items():
        if items:
            console.print(f"{mode}: {len(items)} missed (see report.md)", highlight=False)
    console.print(f"report: {paths['md']}  ({paths['json'].name}, {paths['png'].name})", highlight=False)


@eval_app.command("run")
def eval_run(
    dataset: Annotated[Path, typer.Argument(help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/) or a .jsonl")],
    queries: Annotated[Path | None, typer.Option(help="Take queries and qrels from this BEIR folder.")] = None,
    split: Annotated[str | None, typer.Option(help="qrels split (default: test, else dev, else train).")] = None,
    modes: Annotated[
        str | None,
        typer.Option(help="Comma list: keyword, keyword-ts_rank_cd, vector, hybrid, hybrid+rerank … (default: all)."),
    ] = None,
    embedder: Annotated[str | None, typer.Option(help="Embedder name (kaynak models lists them).")] = None,
    k: Annotated[int, typer.Option("--k", help="Cutoff of nDCG, Recall, MRR and hit@k.")] = 10,
    out: Annotated[Path | None, typer.Option(help="Report folder (default: ./eval-out/<set>-<time>).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print report.json on stdout.")] = False,
    language: Annotated[str | None, typer.Option(help="turkish | english | simple (default: from the folder).")] = None,
    max_docs: Annotated[int | None, typer.Option(help="Pool: relevant documents + a random sample up to N.")] = None,
    max_queries: Annotated[int | None, typer.Option(help="Evaluate at most N queries (seeded sample).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for --max-docs / --max-queries sampling.")] = 13,
    collection: Annotated[
        str | None, typer.Option("-c", "--collection", help="Collection to question (questions file only).")
    ] = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Drop and re-ingest the evaluation collection.")] = False,
    query_cache: Annotated[
        bool,
        typer.Option(help="Embed queries once, batched, for every mode (latency then excludes query embedding)."),
    ] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
) -> None:
    """Evaluate search on DATASET; write report.md, report.json and report.png.

    A BEIR folder is ingested into a collection of its own (reused while corpus and settings are unchanged) and
    every query runs in every mode: nDCG@10, Recall@10, Recall@100, MRR@10, MAP@100 and latency p50/p95.
    A .jsonl file of questions runs against an existing collection (-c): hit@k and MRR by source and by page.
    """
    from kaynak.evaluation.datasets import load_beir, load_questions, pool
    from kaynak.evaluation.report import write_report
    from kaynak.evaluation.runner import evaluate_beir, evaluate_questions

    progress = None if quiet else _say
    ctx = make_context(embedder=embedder)
    try:
        with errors_handled():
            if dataset.is_file() or dataset.suffix == ".jsonl":
                if collection is None:
                    raise UsageError(
                        f"{dataset} is a questions file: name the collection holding your documents with -c",
                        "collection",
                    )
                qs = load_questions(dataset)
                if max_queries is not None:
                    qs = qs[:max_queries]
                report = evaluate_questions(
                    ctx,
                    qs,
                    collection,
                    modes=modes,
                    k=k,
                    dataset_path=str(dataset),
                    cache_queries=query_cache,
                    progress=progress,
                )
            else:
                ds = pool(load_beir(dataset, queries_dir=queries, split=split), max_docs, max_queries, seed)
                report = evaluate_beir(
                    ctx,
                    ds,
                    modes=modes,
                    k=k,
                    language=language,
                    rebuild=rebuild,
                    cache_queries=query_cache,
                    progress=progress,
                )
            paths = write_report(report, out or _default_out(str(report["dataset"].get("key") or dataset.name)))
    finally:
        ctx.close()
    if json_out:
        print_json(report)
    else:
        _print_report(report, paths)


@eval_app.command("compare")
def eval_compare(
    a: Annotated[Path, typer.Argument(metavar="A", help="The earlier report folder (or its report.json).")],
    b: Annotated[Path, typer.Argument(metavar="B", help="The later report folder (or its report.json).")],
    tolerance: Annotated[
        float, typer.Option(help="A drop larger than this in a quality metric is a regression.")
    ] = 0.005,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 when there is a regression.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print a Markdown table (for docs).")] = False,
    only: Annotated[
        str | None,
        typer.Option(help="Keep metrics whose name contains one of these comma-separated words (e.g. nDCG,hit@1)."),
    ] = None,
) -> None:
    """Print the differences between two evaluation reports, B against A, and mark regressions.

    Example: kaynak eval compare eval-out/scifact-before eval-out/scifact-after
    """
    from kaynak.evaluation.report import compare_reports, comparison_markdown, load_report

    with errors_handled():
        ra, rb = load_report(a), load_report(b)
        diffs, warnings = compare_reports(ra, rb, tolerance=tolerance)
    if only:
        words = [w.strip() for w in only.split(",") if w.strip()]
        diffs = [d for d in diffs if any(w in d.metric for w in words)]
    regressions = [d for d in diffs if d.regression]
    if json_out:
        print_json(
            {
                "a": str(a),
                "b": str(b),
                "warnings": warnings,
                "differences": [d.to_dict() for d in diffs],
                "regressions": len(regressions),
            }
        )
    elif markdown:
        for w in warnings:
            err_console.print(f"[yellow]warning:[/] {w}", highlight=False)
        print(comparison_markdown(diffs, tolerance))
    else:
        _print_comparison(diffs, warnings, f"{a} → {b}", tolerance)
    if strict and regressions:
        raise typer.Exit(1)


def _print_comparison(diffs: list[Any], warnings: list[str], title: str, tolerance: float) -> None:
    for w in warnings:
        err_console.print(f"[yellow]warning:[/] {w}", highlight=False)
    table = Table("mode", "metric", "A", "B", "Δ", "", title=title)
    marks = {"regression": "[bold red]REGRESSION[/]", "better": "[green]better[/]", "": ""}
    for d in diffs:
        a, b, delta = d.formatted()
        table.add_row(d.mode, d.metric, a, b, delta, marks[d.mark(tolerance)])
    console.print(table)
    n = sum(1 for d in diffs if d.regression)
    console.print(f"{n} regression(s)" if n else "no regressions", highlight=False)


__all__ = ["eval_app"]
