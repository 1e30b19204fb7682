"""Ingest: files and folders in, searchable chunks out (the write side of kaynak).

    discovery.py  finding files: folders, include/exclude globs, symbolic links, hashing
    pipeline.py   one run: prepare → embed → write, with bounded queues between the stages
    report.py     progress events and the report a run returns
    service.py    IngestService, the public API every face uses

Everything importable from ``kaynak.ingest`` before it became a package still is.
"""

from __future__ import annotations

from .discovery import Discovery, FileJob, PathFilter, discover, file_sha256, supported_extensions
from .pipeline import embedding_text
from .report import EventKind, IngestEvent, IngestReport
from .service import IngestService

__all__ = [
    "Discovery",
    "EventKind",
    "FileJob",
    "IngestEvent",
    "IngestReport",
    "IngestService",
    "PathFilter",
    "discover",
    "embedding_text",
    "file_sha256",
    "supported_extensions",
]
