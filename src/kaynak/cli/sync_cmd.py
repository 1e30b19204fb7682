"""CLI commands that keep collections current: ``kaynak sync``, ``kaynak watch`` and ``kaynak status`` (thin faces
over kaynak.ingest.sync and kaynak.ingest.watch; docs/adr/0015-watch-and-sync.md).

Exit codes: 0 done (every file taken whole), 1 some files failed or an error, 2 usage error, 130 interrupted.
"""

from __future__ import annotations

import threading
import time
from typing import Annotated, Any

import typer

from kaynak.cli.common import app, console, err_console, errors_handled, make_context, print_json
from kaynak.cli.ingest_cmd import _graceful_sigint, _plain


@app.command()
def sync(
    collection: Annotated[
        list[str] | None, typer.Option("-c", "--collection", help="Collection to sync (repeatable); default: all.")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the reports as JSON on stdout.")] = False,
) -> None:
    """Bring collections up to date with the folders they were ingested from.

    New and changed files are ingested, deleted ones removed, renamed or moved ones re-pointed without being
    embedded again. Files whose size and modification time are unchanged are not read. `kaynak ingest` remembers
    each folder (with --include/--exclude) per collection.

    Examples:

      kaynak sync

      kaynak sync -c notes --json
    """
    from kaynak.ingest.sync import sync_all

    ctx = make_context()
    stop = threading.Event()
    try:
        with errors_handled(), _graceful_sigint(stop, quiet=json_out):
            names = list(collection or [])

            def waiting() -> None:
                if not json_out:
                    err_console.print("waiting for another ingest or sync of this collection to finish…")

            reports = sync_all(ctx.ingest, names, stop=stop, on_wait=waiting)
    finally:
        ctx.close()
    if json_out:
        print_json({"collections": [r.to_dict() for r in reports]})
    else:
        if not reports:
            console.print("no collection has remembered folders; ingest one with: kaynak ingest FOLDER -c NAME")
        for r in reports:
            console.print(_plain(r.summary()), highlight=False, soft_wrap=True)
            for root in r.roots:
                if root["status"] != "ok":
                    err_console.print(f"[yellow]missing:[/] {_plain(root['root'])} (nothing removed)", highlight=False)
            for f in (r.ingest.failed if r.ingest else [])[:50]:
                err_console.print(f"[bold red]failed:[/] {_plain(f['error'])}", highlight=False, soft_wrap=True)
    if any(r.interrupted for r in reports):
        raise typer.Exit(130)
    raise typer.Exit(0 if all(r.ok for r in reports) else 1)


@app.command()
def status(
    collection: Annotated[
        list[str] | None, typer.Option("-c", "--collection", help="Collection (repeatable); default: all.")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the status as JSON on stdout.")] = False,
) -> None:
    """Show per collection: its folders and last sync, files pending (changed on disk, not yet indexed), files
    failing with their reasons, and whether a watcher keeps it current.

    Examples:

      kaynak status

      kaynak status -c notes --json
    """
    from kaynak.ingest.sync import collection_status

    ctx = make_context()
    try:
        with errors_handled():
            names = list(collection or []) or [c.name for c in ctx.store.list_collections()]
            states = [collection_status(ctx.store, n) for n in names]
    finally:
        ctx.close()
    if json_out:
        print_json({"collections": states})
        return
    for s in states:
        _print_status(s)


#: Files listed per kind (pending, failing) in the human-readable status; the rest are counted.
_LISTED = 20


def _more(total: int, listed: int, what: str) -> None:
    if total > listed:
        console.print(
            f"  … and {total - listed} more {what} (kaynak status --json lists the first 100)", highlight=False
        )


def _print_status(s: dict[str, Any]) -> None:
    watch = "watched" if s["watching"] else "not watched"
    pending = "?" if s["files_pending"] is None else s["files_pending"]
    console.print(
        f"[bold]{_plain(s['collection'])}[/]: {s['documents']} documents, pending {pending}, failing "
        f"{s['files_failing']}, last sync {s['last_sync_at'] or 'never'}, {watch}",
        highlight=False,
        soft_wrap=True,
    )
    for r in s["roots"]:
        flag = "" if r["status"] in (None, "ok") else f" [yellow]({r['status']})[/]"
        console.print(f"  {_plain(r['root'])}{flag}  last sync {r['last_sync_at'] or 'never'}", highlight=False)
    if not s["roots"]:
        console.print("  no remembered folders (ingest one with kaynak ingest FOLDER -c NAME)", highlight=False)
    for source in s["pending"][:_LISTED]:
        console.print(f"  pending: {_plain(source)}", highlight=False, soft_wrap=True)
    _more(s["files_pending"] or 0, min(_LISTED, len(s["pending"])), "pending")
    for f in s["failing"][:_LISTED]:
        console.print(
            f"  [red]failing:[/] {_plain(f['source'])}: {_plain(f['reason'])}", highlight=False, soft_wrap=True
        )
    _more(s["files_failing"], min(_LISTED, len(s["failing"])), "failing")
    for w in s["watchers"]:
        mode = "polling" if w["polling"] else "events"
        console.print(
            f"  watcher pid {w['pid']} on {_plain(w['host'])} ({mode}), heartbeat {w['heartbeat_at']}", highlight=False
        )


@app.command()
def watch(
    collection: Annotated[
        list[str] | None, typer.Option("-c", "--collection", help="Collection to watch (repeatable); default: all.")
    ] = None,
    poll: Annotated[
        bool | None,
        typer.Option(
            "--poll/--events",
            help="Poll the folders, or use OS events (default: KAYNAK_WATCH_POLL, else "
            "polling only for network drives).",
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print each sync's report as one JSON line.")] = False,
) -> None:
    """Keep collections in sync with their folders until stopped (Ctrl-C or SIGTERM).

    First syncs what changed while no watcher ran, then follows file-system events: a changed file is taken once
    it has stopped changing (KAYNAK_WATCH_SETTLE_S), renames are re-pointed without embedding again, deleted files
    are removed. `kaynak status` shows that the collection is watched. Safe to stop and restart at any moment.

    Examples:

      kaynak watch

      kaynak watch -c notes --poll
    """
    import json
    import signal
    import sys

    from kaynak.ingest.watch import Watcher

    ctx = make_context()
    stop = threading.Event()

    def on_sync(report: Any) -> None:
        if json_out:
            sys.stdout.write(json.dumps(report.to_dict(), ensure_ascii=False, default=str) + "\n")
            sys.stdout.flush()
        elif (
            report.changes or (report.ingest and report.ingest.failed) or any(r["status"] != "ok" for r in report.roots)
        ):
            console.print(f"{time.strftime('%H:%M:%S')} {_plain(report.summary())}", highlight=False, soft_wrap=True)
            for f in (report.ingest.failed if report.ingest else [])[:50]:
                err_console.print(f"[bold red]failed:[/] {_plain(f['error'])}", highlight=False, soft_wrap=True)

    def on_ready(w: Watcher) -> None:
        if not json_out:
            mode = "polling" if w.polling else "file-system events"
            err_console.print(f"watching {_plain(', '.join(w.roots))} ({mode}); Ctrl-C to stop", highlight=False)

    def handler(signum: int, frame: Any) -> None:
        stop.set()

    previous = [signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)]
    try:
        with errors_handled():
            Watcher(ctx.ingest, collection or None, poll=poll, on_sync=on_sync, on_ready=on_ready).run(stop)
    finally:
        for s, h in zip((signal.SIGINT, signal.SIGTERM), previous, strict=True):
            signal.signal(s, h)
        ctx.close()
