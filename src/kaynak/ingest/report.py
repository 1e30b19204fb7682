"""What an ingest tells its caller: progress events while it runs and the report at the end."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

EventKind = Literal["start", "reading", "document", "embedded", "removed", "stopping", "done"]


@dataclass
class IngestEvent:
    """What a progress callback receives. Callbacks run on worker threads, one at a time.

    ``reading`` events name the file being read next (``source``); ``document`` events carry ``source`` and
    ``status`` (added, updated, unchanged, partial, failed, skipped; ``error`` holds the reason of a failed or
    skipped file); ``embedded`` events follow every embedding batch; the counters are totals so far.
    ``files_total`` is None when the number of documents is not known in advance.
    """

    kind: EventKind
    source: str | None = None
    status: str | None = None
    error: str | None = None
    files_total: int | None = None
    files_done: int = 0
    chunks_embedded: int = 0
    chunks_written: int = 0


@dataclass
class IngestReport:
    """What an ingest did. ``to_dict()`` is what the CLI's ``--json``, the REST API and MCP return.

    Every file ends in exactly one of: ``added``, ``updated``, ``unchanged``, ``partial`` (stored, but something
    could not be read: its ``warnings`` say what; an unchanged partial document is reported again), ``failed``
    (``{"source", "error"}``, nothing stored) or ``skipped`` (``{"source", "reason"}``: left out on purpose, such as
    a symbolic link out of the folder). ``warnings`` lists ``{"source", "warning"}`` for partial and failed files.
    """

    collection: str
    language: str | None = None
    embedder: str | None = None
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    chunks: int = 0
    embedded: int = 0
    ignored: int = 0
    seconds: float = 0.0
    truncated: int = 0
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        """Every file was taken whole (none failed, none partial)."""
        return not self.failed and not self.partial

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ok"] = self.ok
        return d

    def summary(self) -> str:
        parts = [
            f"{len(self.added)} added",
            f"{len(self.updated)} updated",
            f"{len(self.unchanged)} unchanged",
            f"{len(self.partial)} partial",
            f"{len(self.removed)} removed",
            f"{len(self.failed)} failed",
            f"{len(self.skipped)} skipped",
        ]
        return (
            f"{self.collection}: {', '.join(parts)}; {self.chunks} chunks written, {self.embedded} embedded "
            f"in {self.seconds:.1f} s"
        )


class IngestCrashed(RuntimeError):
    """An unexpected error (a bug) stopped an ingest. ``source``: the file being processed; ``report``: what was
    done before it (every document in it is whole); ``__cause__``: the original exception."""

    def __init__(self, source: str | None, report: IngestReport, cause: BaseException) -> None:
        where = f" while processing {source}" if source else ""
        super().__init__(f"internal error{where}: {type(cause).__name__}: {cause}")
        self.source = source
        self.report = report
