"""Ingest: files and folders in, searchable chunks out (the write side of kaynak).

    discovery.py  finding files: folders, include/exclude globs, symbolic links, hashing
    prepare.py    one file or loaded document made ready (hashed, skipped, parsed, chunked), or why not
    pipeline.py   one run: prepare → embed → write, with bounded queues between the stages
    report.py     progress events and the report a run returns
    service.py    IngestService, the public API every face uses
    sources.py    file names (any bytes) as printable, reversible source text
    workers.py    parse workers: loaders run there, under memory and time limits

Everything importable from ``kaynak.ingest`` before it became a package still is.
"""

from __future__ import annotations

from .discovery import Discovery, FileJob, PathFilter, discover, file_sha256, supported_extensions
from .prepare import embedding_text
from .report import EventKind, IngestCrashed, IngestEvent, IngestReport
from .service import IngestService
from .sources import decode_source, display_path, encode_source
from .workers import ParsePool

__all__ = [
    "Discovery",
    "EventKind",
    "FileJob",
    "IngestCrashed",
    "IngestEvent",
    "IngestReport",
    "IngestService",
    "ParsePool",
    "PathFilter",
    "decode_source",
    "discover",
    "display_path",
    "embedding_text",
    "encode_source",
    "file_sha256",
    "supported_extensions",
]
