"""CLI commands that inspect and manage: doctor, models, collections, documents, backup, restore."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from kaynak.cli.common import (
    app,
    cell,
    console,
    err_console,
    errors_handled,
    make_context,
    outside,
    print_json,
    visible,
)
from kaynak.context import Context
from kaynak.errors import KaynakError

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]

collections_app = typer.Typer(help="List, create and delete collections.", no_args_is_help=True)
documents_app = typer.Typer(help="List, show and delete documents of a collection.", no_args_is_help=True)
app.add_typer(collections_app, name="collections")
app.add_typer(documents_app, name="documents")


def _optional_tool_notes(report: dict[str, Any]) -> None:
    """What to install for the optional tools that are missing (OCR, LibreOffice)."""
    for optional in ("ocr", "office"):
        if report[optional].get("problem"):
            err_console.print(f"[yellow]note:[/] {outside(report[optional]['problem'])}", highlight=False)


def _doctor_schema(ctx: Context, report: dict[str, Any]) -> None:
    """The schema version, pending and unfinished migrations (kaynak migrate)."""
    schema = ctx.migration_status()
    if not schema["ok"]:
        return
    report["migrations"] = {k: schema[k] for k in ("version", "latest", "pending", "in_progress")}
    if schema["in_progress"]:
        report["problems"].append("an upgrade is unfinished: run `kaynak migrate` to resume it")
    elif schema["version"] > schema["latest"]:
        report["problems"].append("the database was written by a newer kaynak")
    elif schema["pending"] and schema["version"] > 0:
        report["problems"].append("the database needs an upgrade: run `kaynak migrate`")


@app.command()
def doctor(json_out: JsonOpt = False) -> None:
    """Check the database, pgvector and the embedder; exit 0 when healthy.

    Example: kaynak doctor --json
    """
    report: dict = {"ok": True, "problems": []}
    ctx = make_context()
    s = ctx.settings
    report["data_dir"] = str(s.data_dir)
    report["database"] = "url" if s.database_url else f"embedded ({s.data_dir / 'postgres'})"
    report["embedder"] = s.embedder
    database = ctx.database_status(timeout=2.0)
    if database["ok"]:
        report.update({k: v for k, v in database.items() if k not in ("ok", "replicas")})
        try:
            report["collections"] = [
                {
                    "name": c.name,
                    "language": c.language,
                    "embedder": c.embedder,
                    "documents": c.document_count,
                    "chunks": c.chunk_count,
                }
                for c in ctx.search.list_collections()
            ]
        except KaynakError as err:
            report["problems"].append(err.message)
        if not database.get("pgvector"):
            report["problems"].append("pgvector is not installed in the database")
        _doctor_replication(ctx, database["replicas"], report)
    else:
        report["problems"].append(database["error"])
    _doctor_backup(ctx, report)
    _doctor_schema(ctx, report)
    model = ctx.model_status()
    if model["ok"]:
        report["embedder_dim"] = model["dim"]
    else:
        report["problems"].append(model["error"])
    from kaynak.loaders.ocr import ocr_status

    report["ocr"] = ocr_status()  # optional: reported, never a problem (scans are refused with what to install)
    from kaynak.loaders.legacy import office_status

    report["office"] = office_status()  # optional too: .doc/.xls/.ppt through LibreOffice
    report["ok"] = not report["problems"]
    ctx.close()
    if json_out:
        print_json(report)
    else:
        table = Table(show_header=False, box=None)
        for key in ("postgresql", "pgvector", "schema_version", "database", "data_dir", "embedder", "embedder_dim"):
            if key in report:
                table.add_row(key, cell(report[key]))
        ocr = report["ocr"]
        table.add_row("ocr", f"{ocr['engine']} ({'+'.join(ocr['languages'])})" if ocr["available"] else "not available")
        office = report["office"]
        table.add_row(".doc .xls .ppt", office["engine"] if office["available"] else "not available (LibreOffice)")
        table.add_row("collections", str(len(report.get("collections", []))))
        console.print(table)
        for c in report.get("collections", []):
            console.print(
                f"  {outside(c['name'])}: {c['documents']} documents, {c['chunks']} chunks ({c['language']}, "
                f"{outside(c['embedder'])})",
                highlight=False,
            )
        for r in report.get("replicas", []):
            state = "ok" if r.get("ok") else f"down: {outside(r.get('error'))}"
            console.print(
                f"  replica {outside(r['name'])}: {state}; lag {r.get('lag_bytes', '?')} bytes, "
                f"{r.get('lag_seconds', '?')} s; schema {r.get('schema_version', '?')}",
                highlight=False,
            )
        if "last_backup" in report:
            b = report["last_backup"]
            shown = f"  last backup: {b['at']} → {outside(b['file'])}" if b else "  last backup: never"
            console.print(shown, highlight=False)
        _optional_tool_notes(report)
        for w in report.get("warnings", []):
            err_console.print(f"[yellow]warning:[/] {outside(w)}", highlight=False)
        for p in report["problems"]:
            err_console.print(f"[bold red]problem:[/] {outside(p)}", highlight=False)
        if report["ok"]:
            console.print("[green]healthy[/]")
    raise typer.Exit(0 if report["ok"] else 1)


def _doctor_replication(ctx: Context, replicas: list[dict], report: dict) -> None:
    """Read replicas: whether each answers, its lag, and a schema behind the primary's (reported, not fatal)."""
    if not ctx.settings.read_database_urls:
        return
    report["replicas"] = replicas
    for r in replicas:
        if not r.get("ok"):
            report.setdefault("warnings", []).append(
                f"read replica {r['name']} does not answer ({r.get('error')}); reads go to the primary"
            )
        elif r.get("schema_behind"):
            report.setdefault("warnings", []).append(
                f"read replica {r['name']} is behind on schema (version {r.get('schema_version')}); "
                "it takes no reads until it has replayed the primary's migrations"
            )


def _doctor_backup(ctx: Context, report: dict) -> None:
    """The embedded data folder's last backup; a warning when there has never been one and it holds documents."""
    if ctx.settings.database_url:
        return  # a server by URL is backed up by whoever runs it (or kaynak backup)
    from kaynak.backup import last_backup
    from kaynak.store.server import data_major, embedded_major

    report["embedded_major"] = {
        "data_folder": data_major(ctx.settings.data_dir / "postgres"),
        "installed": embedded_major(),
    }
    last = last_backup(ctx.settings.data_dir)
    report["last_backup"] = last
    if last is None and any(c["documents"] for c in report.get("collections", [])):
        report.setdefault("warnings", []).append(
            f"the embedded database in {ctx.settings.data_dir / 'postgres'} has never been backed up: "
            "run kaynak backup FILE (and keep FILE on another disk)"
        )


@app.command()
def models(json_out: JsonOpt = False) -> None:
    """List the embedders and rerankers, whether they are installed, their dimension and weights."""
    from kaynak.embeddings import list_models

    with errors_handled():
        rows = list_models()
    if json_out:
        print_json(rows)
        return
    table = Table("name", "kind", "installed", "dim", "weights", "notes")
    for r in rows:
        table.add_row(
            cell(r.get("name")),
            cell(r.get("kind")),
            "yes" if r.get("installed") else "no",
            str(r.get("dim") or ""),
            cell(r.get("path") or ""),
            cell(r.get("notes") or ""),
        )
    console.print(table)


@collections_app.command("list")
def collections_list(json_out: JsonOpt = False) -> None:
    """List collections with their language, embedder and counts."""
    ctx = make_context()
    with errors_handled():
        cols = ctx.search.list_collections()
    if json_out:
        print_json([c.to_dict() for c in cols])
        return
    table = Table("name", "language", "embedder", "dim", "documents", "chunks")
    for c in cols:
        table.add_row(cell(c.name), c.language, cell(c.embedder), str(c.dim), str(c.document_count), str(c.chunk_count))
    console.print(table)


@collections_app.command("create")
def collections_create(
    name: str,
    language: Annotated[str | None, typer.Option(help="turkish | english | simple")] = None,
    embedder: Annotated[str | None, typer.Option(help="Embedder name (kaynak models lists them).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Create an empty collection. Example: kaynak collections create hukuk --language turkish"""
    ctx = make_context()
    with errors_handled():
        col = ctx.ingest.create_collection(name, language, embedder)
    if json_out:
        print_json(col.to_dict())
    else:
        console.print(
            f"created collection {outside(col.name)} ({col.language}, {outside(col.embedder)}, dim {col.dim})",
            highlight=False,
        )


@collections_app.command("delete")
def collections_delete(
    name: str,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a collection with all its documents."""
    ctx = make_context()
    with errors_handled():
        col = ctx.search.get_collection(name)
        if not yes and not typer.confirm(f"Delete {visible(col.name)} with {col.document_count} documents?"):
            raise typer.Exit(1)
        ctx.ingest.delete_collection(name)
    console.print(f"deleted collection {outside(name)}", highlight=False)


@documents_app.command("list")
def documents_list(
    collection: Annotated[str, typer.Option("-c", "--collection", help="Collection name.")],
    prefix: Annotated[str | None, typer.Option(help="Only sources starting with this.")] = None,
    limit: int = 1000,
    json_out: JsonOpt = False,
) -> None:
    """List a collection's documents."""
    ctx = make_context()
    with errors_handled():
        docs = ctx.search.list_documents(collection, prefix, limit)
    if json_out:
        print_json([d.to_dict() for d in docs])
        return
    table = Table("source", "title", "pages", "chunks", "ingested", "warnings")
    for d in docs:
        notes = "; ".join(d.warnings[:3]) + (f" (+{len(d.warnings) - 3} more)" if len(d.warnings) > 3 else "")
        table.add_row(
            cell(d.source),
            cell(d.title),
            str(d.page_count),
            str(d.chunk_count),
            str(d.ingested_at or "")[:19],
            cell(notes),
        )
    console.print(table)


@documents_app.command("show")
def documents_show(
    source: str,
    collection: Annotated[str, typer.Option("-c", "--collection", help="Collection name.")],
    json_out: JsonOpt = False,
) -> None:
    """Show one document with its metadata."""
    ctx = make_context()
    with errors_handled():
        doc = ctx.search.get_document(collection, source)
    if json_out:
        print_json(doc.to_dict())
        return
    for key, value in doc.to_dict().items():
        if key == "warnings":
            value = "; ".join(value) if value else "none"
        console.print(f"[bold]{key}[/]: {outside(value)}", highlight=False)


@documents_app.command("delete")
def documents_delete(
    source: str,
    collection: Annotated[str, typer.Option("-c", "--collection", help="Collection name.")],
) -> None:
    """Delete one document (by its source path) from a collection."""
    ctx = make_context()
    with errors_handled():
        ctx.ingest.delete_document(collection, source)
    console.print(f"deleted {outside(source)} from {outside(collection)}", highlight=False)


UrlOpt = Annotated[
    str | None,
    typer.Option("--database-url", help="Server and database to use instead of KAYNAK_DATABASE_URL or the embedded."),
]


@app.command("backup")
def backup_cmd(
    file: Annotated[Path, typer.Argument(help="The archive to write (pg_dump custom format).")],
    database_url: UrlOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Back up kaynak's database (documents, chunks, vectors, postings, settings) to FILE with pg_dump.

    Example: kaynak backup ~/kaynak-2026-12-03.dump
    """
    from kaynak import backup as backups
    from kaynak.store.server import embedded_uri

    ctx = make_context()
    s = ctx.settings
    with errors_handled():
        url = database_url or s.database_url
        result = backups.backup(url or embedded_uri(s.data_dir), file, data_dir=None if url else s.data_dir)
    if json_out:
        print_json(result)
        return
    t = result["tables"]
    console.print(
        f"backed up {t.get('collections', 0)} collections, {t.get('documents', 0)} documents, "
        f"{t.get('chunks', 0)} chunks to {outside(result['file'])} ({result['bytes'] / 1e6:.1f} MB, "
        f"{result['seconds']} s)",
        highlight=False,
    )


@app.command("restore")
def restore_cmd(
    file: Annotated[Path, typer.Argument(help="An archive made by kaynak backup.")],
    database_url: UrlOpt = None,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite the kaynak data the target holds.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Restore a backup into the embedded data folder (KAYNAK_DATA_DIR) or into a server by URL.

    The target must hold no kaynak documents unless --replace. It runs in one transaction; afterwards any
    newer migrations are applied. Example: kaynak restore kaynak.dump --database-url postgresql://u@host/kaynak
    """
    from kaynak import backup as backups
    from kaynak.store import Store
    from kaynak.store.server import embedded_uri

    ctx = make_context()
    s = ctx.settings
    with errors_handled():
        url = database_url or s.database_url
        result = backups.restore(url or embedded_uri(s.data_dir), file, replace=replace, embedded=not url)
        with Store(url or embedded_uri(s.data_dir), pool_size=1) as store:  # applies newer migrations, if any
            result["schema_version"] = store.server_info()["schema_version"]
    if json_out:
        print_json(result)
        return
    t = result["tables"]
    console.print(
        f"restored {t.get('collections', 0)} collections, {t.get('documents', 0)} documents, "
        f"{t.get('chunks', 0)} chunks from {outside(result['file'])} ({result['seconds']} s; "
        f"schema version {result['schema_version']})",
        highlight=False,
    )
