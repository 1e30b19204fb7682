"""CLI command ``kaynak ingest``: a thin face over IngestService.ingest with a progress bar and a report.

Exit codes: 0 every file ingested (or unchanged), 1 some files failed (the rest were ingested), 2 usage error
(missing path, bad option, collection built with another language or embedder is 1 — a conflict, not usage),
130 interrupted (Ctrl-C: the run stops after the documents being embedded are written; run again to finish).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from kaynak.cli.common import app, console, err_console, errors_handled, make_context, print_json
from kaynak.errors import UsageError
from kaynak.types import LANGUAGES


@contextmanager
def _graceful_sigint(stop: threading.Event, quiet: bool) -> Iterator[None]:
    """First Ctrl-C sets ``stop`` (finish the current document, then stop); a second one interrupts at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        if not quiet:
            err_console.print("stopping after the current document… (Ctrl-C again to stop at once)")

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class _ProgressBar:
    """A rich progress display on stderr: files done of total with time left, chunks embedded with rate."""

    def __init__(self) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[chunks]} chunks, {task.fields[rate]} chunks/s"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=err_console,
            transient=False,
        )
        self.task = self.progress.add_task("files", total=None, chunks=0, rate="0.0")
        self._t0: float | None = None

    def __enter__(self) -> _ProgressBar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, ev: Any) -> None:
        import time

        if self._t0 is None:
            self._t0 = time.monotonic()
        elapsed = max(time.monotonic() - self._t0, 1e-6)
        self.progress.update(
            self.task,
            total=ev.files_total,
            completed=ev.files_done,
            chunks=ev.chunks_embedded,
            rate=f"{ev.chunks_embedded / elapsed:.1f}",
        )


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files and folders to ingest (folders recursively).")],
    collection: Annotated[
        str | None, typer.Option("-c", "--collection", help="Collection name (created on first use).")
    ] = None,
    language: Annotated[
        str | None,
        typer.Option(help="Language of a new collection: turkish | english | simple (default: detected)."),
    ] = None,
    embedder: Annotated[
        str | None, typer.Option(help="Embedder of a new collection: e5-small | use-m3 | st:<model> | hash.")
    ] = None,
    include: Annotated[
        list[str] | None, typer.Option(help="Only sources matching this glob (repeatable), e.g. '*.pdf'.")
    ] = None,
    exclude: Annotated[
        list[str] | None, typer.Option(help="Leave out sources matching this glob (repeatable), e.g. 'drafts'.")
    ] = None,
    prune: Annotated[
        bool, typer.Option("--prune", help="Remove documents whose files are no longer under PATHS.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON on stdout.")] = False,
) -> None:
    """Ingest files and folders into a collection; unchanged files are skipped, changed ones replaced.

    A document's identity is its path relative to the folder you name (a file's: its name). Run it again
    whenever the folder changes; --prune also drops documents whose files are gone.

    Examples:

      kaynak ingest ./belgeler -c hukuk --language turkish

      kaynak ingest ./docs -c notes --include '*.md' --exclude drafts --prune --json
    """
    with errors_handled():
        if language is not None and language not in LANGUAGES:
            raise UsageError(f"--language must be one of {', '.join(LANGUAGES)}, not {language!r}", "language")
    ctx = make_context()
    stop = threading.Event()
    show_bar = not json_out and err_console.is_terminal
    with errors_handled(), _graceful_sigint(stop, quiet=json_out):
        service = ctx.ingest
        if show_bar:
            with _ProgressBar() as bar:
                report = service.ingest(
                    paths, collection, language=language, embedder=embedder, include=include, exclude=exclude,
                    prune=prune, progress=bar, stop=stop,
                )
        else:
            report = service.ingest(
                paths, collection, language=language, embedder=embedder, include=include, exclude=exclude,
                prune=prune, stop=stop,
            )
    ctx.close()
    if json_out:
        print_json(report.to_dict())
    else:
        console.print(report.summary(), highlight=False, soft_wrap=True)
        if report.ignored:
            console.print(f"{report.ignored} files of types kaynak does not read were left out", highlight=False)
        if report.truncated:
            console.print(
                f"{report.truncated} chunks were longer than the embedder takes and were cut for embedding "
                "(their stored text is whole)",
                highlight=False,
            )
        for f in report.failed:
            err_console.print(f"[bold red]failed:[/] {f['error']}", highlight=False, soft_wrap=True)
    if report.interrupted:
        err_console.print("interrupted: stopped before every file was done; run the same command again to finish")
        sys.stdout.flush()
        raise typer.Exit(130)
    raise typer.Exit(0 if report.ok else 1)
