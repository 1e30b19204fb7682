"""CLI command ``kaynak ingest``: a thin face over IngestService.ingest with a progress bar and a report.

Exit codes: 0 every file ingested whole (or unchanged), 1 some files failed or are partial (the rest were
ingested; a collection built with another language or embedder is 1 too — a conflict, not usage), 2 usage error
(missing path, bad option), 3 internal error (a bug: the message names the file being processed, and the report
of what was done before it is still printed), 130 interrupted (Ctrl-C: the run stops after the documents being
embedded are written; run again to finish).
"""

from __future__ import annotations

import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from kaynak.cli.common import (
    app,
    console,
    err_console,
    errors_handled,
    make_context,
    outside,
    print_json,
)
from kaynak.errors import KaynakError, UsageError
from kaynak.ingest import IngestCrashed, IngestReport
from kaynak.ingest.shard import parse_shard
from kaynak.vocabulary import LANGUAGES

#: Exit code of an internal error (a bug), told apart from 1 (some files failed) and 2 (usage).
EXIT_INTERNAL = 3
#: Warnings and failures printed one per line before the rest are summed up (all of them are in --json).
_MAX_LISTED = 50


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
            TextColumn("{task.fields[current]}"),
            console=err_console,
            transient=False,
        )
        self.task = self.progress.add_task("files", total=None, chunks=0, rate="0.0", current="")
        self._t0: float | None = None
        self._current = ""

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
        if ev.kind == "reading" and ev.source:
            name = ev.source
            self._current = name if len(name) <= 60 else "…" + name[-59:]
        elif ev.kind == "done":
            self._current = ""
        self.progress.update(
            self.task,
            total=ev.files_total,
            completed=ev.files_done,
            chunks=ev.chunks_embedded,
            rate=f"{ev.chunks_embedded / elapsed:.1f}",
            current=self._current,
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
        str | None, typer.Option(help="Embedder of a new collection (kaynak models lists them).")
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
    shard: Annotated[
        str | None, typer.Option(help="Only this machine's share i/n of the files (e.g. 0/4), for n workers.")
    ] = None,
    wait_replicas: Annotated[
        bool, typer.Option("--wait-replicas", help="Return once the read replicas show what was written.")
    ] = False,
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
        shard_spec = parse_shard(shard) if shard else None
    ctx = make_context()
    stop = threading.Event()
    show_bar = not json_out and err_console.is_terminal
    report: IngestReport | None = None
    crash: IngestCrashed | None = None
    failure: KaynakError | None = None
    waited: dict[str, Any] | None = None  # --wait-replicas: what the read replicas replayed
    try:
        with _graceful_sigint(stop, quiet=json_out):
            kwargs: dict[str, Any] = dict(
                language=language,
                embedder=embedder,
                include=include,
                exclude=exclude,
                prune=prune,
                stop=stop,
                shard=shard_spec,
                remember=True,  # remembered for kaynak sync / kaynak watch
            )
            if show_bar:
                with _ProgressBar() as bar:
                    report = ctx.ingest.ingest(paths, collection, progress=bar, **kwargs)
            else:
                report = ctx.ingest.ingest(paths, collection, **kwargs)
        if wait_replicas:
            waited = ctx.store.wait_for_replicas()
    except IngestCrashed as err:
        crash, report = err, err.report
    except KaynakError as err:
        failure, report = err, getattr(err, "report", None)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise typer.Exit(130) from None
    finally:
        ctx.close()
    if failure is not None and report is None:
        with errors_handled():
            raise failure
    assert report is not None
    _show(report, crash, failure, waited, json_out)
    _exit_for(report, crash, failure, waited)


def _show(
    report: IngestReport,
    crash: IngestCrashed | None,
    failure: KaynakError | None,
    waited: dict[str, Any] | None,
    json_out: bool,
) -> None:
    """The report (JSON on stdout, or the summary and the problems), and replicas left behind."""
    if json_out:
        out = report.to_dict()
        if crash is not None:
            out["internal_error"] = str(crash)
        if failure is not None:
            out["error"] = failure.message
        if waited is not None:
            out["replicas"] = waited
        print_json(out)
    else:
        _print_report(report)
        if waited is not None and waited["ok"]:
            console.print(f"{len(waited['replicas'])} read replicas show these writes", highlight=False)
    if waited is not None and not waited["ok"]:
        err_console.print(f"[bold red]replicas behind:[/] {waited['replicas']}", highlight=False, soft_wrap=True)


def _exit_for(
    report: IngestReport, crash: IngestCrashed | None, failure: KaynakError | None, waited: dict[str, Any] | None
) -> NoReturn:
    """Leave with the exit code the outcome calls for (after a crash, with the traceback and what to do)."""
    if crash is not None:
        cause = crash.__cause__
        if cause is not None:
            err_console.print("".join(traceback.format_exception(cause)).rstrip(), highlight=False, markup=False)
        err_console.print(
            f"[bold red]{crash}[/] — this is a bug in kaynak, please report it with the text above; the documents "
            "listed as done are stored whole, run the command again to continue",
            highlight=False,
            soft_wrap=True,
        )
        sys.stdout.flush()
        raise typer.Exit(EXIT_INTERNAL)
    if failure is not None:
        with errors_handled():
            raise failure
    if report.interrupted:
        err_console.print("interrupted: stopped before every file was done; run the same command again to finish")
        sys.stdout.flush()
        raise typer.Exit(130)
    raise typer.Exit(0 if report.ok and (waited is None or waited["ok"]) else 1)


def _print_report(report: IngestReport) -> None:
    """The summary on stdout; partial files with their warnings, failures and skips on stderr."""
    console.print(_plain(report.summary()), highlight=False, soft_wrap=True)
    if report.ignored:
        console.print(f"{report.ignored} files of types kaynak does not read were left out", highlight=False)
    if report.truncated:
        console.print(
            f"{report.truncated} chunks were longer than the embedder takes and were cut for embedding "
            "(their stored text is whole)",
            highlight=False,
        )
    by_source: dict[str, list[str]] = {}
    for w in report.warnings:
        by_source.setdefault(w["source"], []).append(w["warning"])
    listed = 0
    for source in report.partial:
        if listed >= _MAX_LISTED:
            break
        notes = "; ".join(by_source.get(source, [])) or "stored with warnings"
        line = f"[bold yellow]partial:[/] {_plain(source)}: {_plain(notes)}"
        err_console.print(line, highlight=False, soft_wrap=True)
        listed += 1
    for f in report.failed:
        if listed >= _MAX_LISTED:
            break
        err_console.print(f"[bold red]failed:[/] {_plain(f['error'])}", highlight=False, soft_wrap=True)
        listed += 1
    for f in report.skipped:
        if listed >= _MAX_LISTED:
            break
        err_console.print(f"skipped: {_plain(f['source'])}: {_plain(f['reason'])}", highlight=False, soft_wrap=True)
        listed += 1
    rest = len(report.partial) + len(report.failed) + len(report.skipped) - listed
    if rest > 0:
        err_console.print(f"… and {rest} more (all of them are in --json)", highlight=False)


def _plain(text: str) -> str:
    """Text shown as is (rich would read [brackets] as markup; control and bidi characters show as \\uXXXX)."""
    return outside(text)
