"""The KaynakError hierarchy: every error a user can cause or meet is one of these.

Each message says what went wrong and what to do about it, naming the file, field or setting involved.
Interfaces translate them: the CLI prints the message on one line (exit 1, or 2 for usage errors), the REST API
answers RFC 9457 problem+json with ``status`` below, the MCP server returns a tool error.

    KaynakError
    ├── ConfigError                 a setting is wrong or missing                  (400)
    ├── UsageError                  a request or argument is invalid               (400 / 422)
    │   └── InvalidQuery            empty query, k out of range, bad mode …
    ├── NotFound                    (404)
    │   ├── CollectionNotFound
    │   ├── DocumentNotFound
    │   └── ChunkNotFound
    ├── Conflict                    (409)
    │   └── CollectionMismatch      collection built with another language or embedder
    ├── StoreError                  the database cannot be used                    (503)
    │   ├── DatabaseUnavailable     unreachable server, wrong password
    │   ├── ExtensionMissing        the server lacks pgvector
    │   ├── DataDirError            the embedded server's data folder is unusable
    │   └── DocumentRejected        the database refused one document's rows         (422)
    ├── LoaderError                 one file could not be read (names the file)   (422)
    │   ├── UnsupportedFileType
    │   ├── FileTooLarge
    │   ├── EncryptedFile
    │   ├── CorruptFile
    │   └── NoText                  empty file, or a PDF without a text layer
    ├── ModelError                  an embedder or reranker cannot be used         (400)
    │   ├── UnknownModel
    │   ├── MissingExtra            an optional extra is not installed
    │   └── ModelLoadError
    └── DatasetError                an evaluation data set is malformed            (400)
"""

from __future__ import annotations

from pathlib import Path


class KaynakError(Exception):
    """Base of every error kaynak raises on purpose. ``str(err)`` is a message a person can act on."""

    status: int = 400
    title: str = "kaynak error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(KaynakError):
    title = "configuration error"


class UsageError(KaynakError):
    title = "invalid request"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class InvalidQuery(UsageError):
    title = "invalid query"


class NotFound(KaynakError):
    status = 404
    title = "not found"


class CollectionNotFound(NotFound):
    title = "collection not found"


class DocumentNotFound(NotFound):
    title = "document not found"


class ChunkNotFound(NotFound):
    title = "chunk not found"


class Conflict(KaynakError):
    status = 409
    title = "conflict"


class CollectionMismatch(Conflict):
    title = "collection mismatch"


class StoreError(KaynakError):
    status = 503
    title = "database error"


class DatabaseUnavailable(StoreError):
    title = "database unavailable"


class ExtensionMissing(StoreError):
    title = "database extension missing"


class DataDirError(StoreError):
    title = "data folder unusable"


class DocumentRejected(StoreError):
    """The database refused one document (text it cannot hold, say); the rest of an ingest goes on."""

    status = 422
    title = "document refused by the database"


class LoaderError(KaynakError):
    """A file could not be turned into text. ``path`` names it; the message always does too."""

    status = 422
    title = "file could not be read"

    def __init__(self, path: str | Path, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class UnsupportedFileType(LoaderError):
    title = "unsupported file type"


class FileTooLarge(LoaderError):
    status = 413
    title = "file too large"


class EncryptedFile(LoaderError):
    title = "encrypted file"


class CorruptFile(LoaderError):
    title = "corrupt file"


class NoText(LoaderError):
    title = "no text"


class ModelError(KaynakError):
    title = "model error"


class UnknownModel(ModelError):
    title = "unknown model"


class MissingExtra(ModelError):
    title = "optional dependency missing"


class ModelLoadError(ModelError):
    title = "model could not be loaded"


class DatasetError(KaynakError):
    title = "invalid data set"
