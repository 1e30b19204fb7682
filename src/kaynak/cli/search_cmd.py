"""CLI command ``kaynak search``: a thin face over SearchService.search that prints each hit's place and quote.

Each hit shows its source, page and section, then the verbatim quote with the words that matched the query
highlighted (on a terminal; plain text when piped), and how likely it answers (``strong`` / ``partial`` /
``weak`` match, kaynak.match); when no hit is likely to answer, a line says so first. ``--json`` prints
``{"query", "mode", "no_good_match", "hits": [Hit, …]}``. ``"exact phrase"`` in the query requires the phrase,
``-word`` excludes passages with the word.
Exit codes: 0 (also when nothing matched), 1 failure (unknown collection, database), 2 usage error.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.padding import Padding
from rich.text import Text

from kaynak.cli.common import (
    app,
    console,
    err_console,
    errors_handled,
    make_context,
    outside,
    print_json,
)
from kaynak.rules import parse_collections
from kaynak.search import parse_metadata_pairs
from kaynak.vocabulary import KEYWORD_RANKINGS, MAX_K, SEARCH_MODES


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="Words or a question, in Turkish or English.")],
    collection: Annotated[
        list[str] | None,
        typer.Option(
            "--collection", "-c", help="Collection to search (repeatable; '*' = all). Default: the configured one."
        ),
    ] = None,
    mode: Annotated[str, typer.Option(help=f"{' | '.join(SEARCH_MODES)}")] = "auto",
    k: Annotated[int, typer.Option("-k", "--k", help=f"Number of hits (1–{MAX_K}).")] = 10,
    ranking: Annotated[
        str | None,
        typer.Option("--ranking", help=f"Keyword ranking: {' | '.join(KEYWORD_RANKINGS)} (default: setting)."),
    ] = None,
    rerank: Annotated[
        bool | None, typer.Option("--rerank/--no-rerank", help="Rerank the top hits (default: when configured).")
    ] = None,
    source: Annotated[str | None, typer.Option("--source", help="Only sources starting with this path.")] = None,
    glob: Annotated[
        str | None,
        typer.Option("--glob", help="Only sources matching this glob ('*' in a folder, '**' across): 'docs/**/*.pdf'."),
    ] = None,
    meta: Annotated[
        list[str] | None, typer.Option("--meta", help="Only documents whose metadata has KEY=VALUE (repeatable).")
    ] = None,
    group_by: Annotated[
        str | None,
        typer.Option("--group-by", help="chunk | document: 'document' shows each document's best hit only."),
    ] = None,
    scores: Annotated[bool, typer.Option("--scores", help="Show per-retriever ranks and scores.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the hits as JSON.")] = False,
) -> None:
    """Find the passages that answer QUERY and quote them with file, page and section.

    "exact phrase" requires the phrase; -word leaves out passages with the word.

    Examples:

      kaynak search 'kat malikleri kurulu ne zaman toplanır' -c notes

      kaynak search 'E11000' --mode keyword -k 3 --json
    """
    ctx = make_context()
    try:
        with errors_handled():
            filters: dict[str, Any] = {
                "source_prefix": source,
                "source_glob": glob,
                "metadata": parse_metadata_pairs(meta),
            }
            svc = ctx.search
            cols = parse_collections(collection)  # -c a -c b, -c a,b or -c '*', as on every face
            hits = svc.search(
                query,
                cols,
                mode=mode,
                k=k,
                filters=filters,
                rerank=rerank,
                keyword_ranking=ranking,
                group_by=group_by,
            )
            plan = hits.plan  # the search's own plan: nothing is planned or stemmed twice
            assert plan is not None
            if json_out:
                print_json(
                    {
                        "query": query,
                        "mode": plan.mode,
                        "no_good_match": hits.no_good_match,
                        "hits": [h.to_dict() for h in hits],
                    }
                )
                return
            marks = svc.highlights(query, hits) if hits else []
    finally:
        ctx.close()
    if not hits:
        names = outside(", ".join(c.name for c in plan.collections))
        err_console.print(f"no matches ({plan.mode} search of {names})", highlight=False)
        return
    if plan.phrase_missing:
        err_console.print("no passage holds the quoted phrase; showing hits without it", style="yellow")
    if hits.no_good_match:
        err_console.print(
            "no good match: none of these passages is likely to answer; the documents searched may not say",
            style="yellow",
        )
    for n, (hit, spans) in enumerate(zip(hits, marks, strict=True), start=1):
        place = Text(f"{n}. ", style="bold")
        place.append(hit.source, style="bold cyan")
        place.append(f"  p. {hit.page}")
        if hit.section:
            place.append(f"  § {hit.section}", style="magenta")
        if len(plan.collections) > 1:
            place.append(f"  [{hit.collection}]", style="dim")
        if hit.ocr:  # a scanned page: the quote is OCR text, not the original's glyphs
            place.append(f"  OCR {hit.ocr.get('confidence', 0):.0f} %", style="yellow")
        if hit.match:  # how likely the passage answers (kaynak.match)
            style = {"strong": "green", "partial": "yellow"}.get(hit.match["label"], "dim")
            place.append(f"  {hit.match['label']} match", style=style)
        if hit.stale:  # the file changed on disk after it was indexed: the quote may no longer be there
            place.append("  changed on disk since indexed", style="red")
        console.print(place, soft_wrap=True)
        quote = Text(hit.quote.text.replace("\n", " "))
        for a, b in spans:
            quote.stylize("bold yellow", a, b)
        if hit.quote.cut_start:  # the quote starts / ends inside a sentence (kaynak.quotes.inside_sentence)
            quote = Text("…") + quote
        if hit.quote.cut_end:
            quote.append("…")
        console.print(Padding(quote, (0, 0, 0, 3)))
        if scores:
            parts = [
                f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}"
                for key, value in hit.scores.items()
                if value is not None
            ]
            console.print("   " + "  ".join(parts), style="dim", highlight=False)
        console.print()
