"""``kaynak migrate``: upgrade the database's schema with an estimate, a progress bar and a backup offered first."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from kaynak.cli.common import app, console, err_console, errors_handled, make_context, print_json

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]


def _describe(st: dict[str, Any]) -> str:
    fill = st.get("analyses_pending", 0)
    fill_line = (
        f"quote analyses to store for {fill:,} documents ingested before schema 14 (until then their hits are "
        "quoted as before, one statement more per search)"
    )
    if not st["pending"]:
        return f"schema version {st['version']}: up to date" + (f"; {fill_line}" if fill else "")
    lines = [f"schema version {st['version']}, this kaynak needs {st['latest']}; pending:"]
    for m in st["pending"]:
        rows = f" (rewrites about {m['rows_to_rewrite']:,} rows)" if m["rows_to_rewrite"] else ""
        under_way = (
            f" — under way, {st['in_progress'][str(m['version'])]['batches']} batches done"
            if str(m["version"]) in st["in_progress"]
            else ""
        )
        lines.append(f"  {m['version']}: {m['name']}{rows}{under_way}")
    lines.append(f"estimated time: about {max(1, round(st['estimated_seconds']))} s")
    if any(m["rows_to_rewrite"] for m in st["pending"]):
        lines.append("after the rewrite: VACUUM (ANALYZE) of the rewritten tables, so that searches are fast at once")
    if fill:
        lines.append(fill_line)
    return "\n".join(lines)


@app.command("migrate")
def migrate_cmd(
    status_only: Annotated[
        bool, typer.Option("--status", help="Only show the schema version and what is pending.")
    ] = False,
    backup: Annotated[
        Path | None, typer.Option("--backup", help="Back up to this file first (kaynak backup), then upgrade.")
    ] = None,
    no_backup: Annotated[bool, typer.Option("--no-backup", help="Upgrade without offering a backup.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Upgrade the database to this kaynak's schema: pending migrations with an estimate, then a progress bar.

    Data-rewriting migrations commit in batches: stop them at any time (Ctrl-C) and run kaynak migrate again to
    resume where they stopped. Before one runs you are offered a backup (--backup FILE takes it, --no-backup
    skips the question). Stop other kaynak processes on this database first.

    Examples:

      kaynak migrate --status

      kaynak migrate --backup ~/kaynak-before-upgrade.dump
    """
    ctx = make_context()
    st = ctx.migration_status()
    if not st["ok"]:
        with errors_handled():
            from kaynak.errors import DatabaseUnavailable

            raise DatabaseUnavailable(st["error"])
    if status_only:
        print_json(st) if json_out else console.print(_describe(st), highlight=False)
        ctx.close()
        return
    if st["version"] > st["latest"]:
        with errors_handled():
            from kaynak.errors import SchemaTooNew

            raise SchemaTooNew(
                f"the database has schema version {st['version']}, written by a newer kaynak; this kaynak reads "
                f"version {st['latest']} and never downgrades a database"
            )
    if not st["pending"]:
        with errors_handled():
            filled = _fill_analyses(ctx, quiet=json_out) if st.get("analyses_pending") else 0
        if json_out:
            print_json({**ctx.migration_status(), "applied": [], "analyses_filled": filled})
        else:
            console.print(_describe(st) if not filled else f"stored the quote analyses of {filled:,} documents")
        ctx.close()
        return
    if not json_out:
        console.print(_describe(st), highlight=False)
    rewrites = any(m["rows_to_rewrite"] for m in st["pending"]) and st["version"] > 0
    if rewrites and backup is None and not no_backup:
        if sys.stdin.isatty():
            answer = typer.prompt("back up the database first? file to write (empty: no backup)", default="")
            backup = Path(answer).expanduser() if answer.strip() else None
        else:
            err_console.print("note: no backup taken (pass --backup FILE to take one first)", highlight=False)
    s = ctx.settings
    from kaynak.store.server import resolve_url

    with errors_handled():
        url = resolve_url(s.database_url, s.data_dir)
        if backup is not None:
            from kaynak import backup as backups

            made = backups.backup(url, backup, data_dir=None if s.database_url else s.data_dir)
            err_console.print(f"backed up to {made['file']} ({made['bytes'] / 1e6:.1f} MB)", highlight=False)
        started = time.monotonic()
        applied = _run_with_progress(url, quiet=json_out)
        filled = _fill_analyses(ctx, quiet=json_out)
    seconds = round(time.monotonic() - started, 1)
    if json_out:
        print_json({**ctx.migration_status(), "applied": applied, "analyses_filled": filled, "seconds": seconds})
    else:
        done = f"applied migrations {', '.join(map(str, applied)) or 'none'}"
        if rewrites and applied:
            done += " (rewritten tables vacuumed and analysed)"
        if filled:
            done += f", stored the quote analyses of {filled:,} documents"
        console.print(f"{done} in {seconds} s", highlight=False)
    ctx.close()


def _fill_analyses(ctx: Any, quiet: bool) -> int:
    """Store the sentence analyses migration 14 left to kaynak (``Store.fill_sentences``), with a progress bar."""
    store = ctx.store
    if quiet:
        return int(store.fill_sentences())
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(),
        TimeRemainingColumn(), console=err_console, transient=False,
    ) as bar:  # fmt: skip
        task = bar.add_task("quote analyses", total=max(store.sentences_pending(), 1))
        return int(store.fill_sentences(progress=lambda done, total: bar.update(task, completed=done, total=total)))


def _run_with_progress(url: str, quiet: bool) -> list[int]:
    from kaynak.store.upgrade import migrate

    if quiet:
        return migrate(url)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
    ) as bar:
        tasks: dict[int, TaskID] = {}

        def progress(m: Any, done: int, total: int) -> None:
            if m.version not in tasks:
                tasks[m.version] = bar.add_task(f"migration {m.version}", total=max(total, 1))
            bar.update(tasks[m.version], completed=min(done, max(total, 1)))

        return migrate(url, progress=progress)
