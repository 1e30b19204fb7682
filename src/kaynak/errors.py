"""The KaynakError hierarchy: every error a user can cause or meet is one of these.

Each message says what went wrong and what to do about it, naming the file, field or setting involved.
Database driver errors never leave the store: ``kaynak.store.boundary.map_errors`` turns every psycopg error
into one of the StoreError classes below (connection loss and outages → DatabaseUnavailable).

How each face shows them (``status`` is the HTTP status of the RFC 9457 problem+json answer; the CLI prints the
message on one line with no traceback; the MCP server answers a tool error ``isError: true`` whose text is the
message, so the agent sees it and the session goes on):

    class                       meaning                                         HTTP   CLI exit  MCP
    KaynakError                 base class                                      400    1         tool error
    ├── ConfigError             a setting is wrong or missing                   400    1         tool error
    ├── AuthError               missing, wrong or unconfigured bearer token     401/403 1        (REST only)
    ├── RequestTooLarge         a request body over its limit                   413    1         (REST only)
    ├── RequestTimeout          a request body sent too slowly                  408    1         (REST only)
    ├── HostNotAllowed          foreign Host / Origin on a loopback server      421/403 1        (REST only)
    ├── UsageError              a request or argument is invalid                400    2         tool error
    │   └── InvalidQuery        empty query, k out of range, bad mode …         400    2         tool error
    ├── NotFound                                                                404    1         tool error
    │   ├── CollectionNotFound                                                  404    1         tool error
    │   ├── DocumentNotFound                                                    404    1         tool error
    │   ├── ChunkNotFound                                                       404    1         tool error
    │   └── OriginalFileUnavailable  the web page cannot serve a document's file 404   1         (web only)
    ├── Conflict                                                                409    1         tool error
    │   └── CollectionMismatch  collection built with another language/embedder 409    1         tool error
    ├── StoreError              the database failed (any other driver error)    503    1         tool error
    │   ├── DatabaseUnavailable unreachable, restarting, wrong password         503 +  1         tool error
    │   │                       (REST adds Retry-After: retry_after seconds)    Retry-After
    │   ├── WriteConflict       concurrent writes collided after retries        503 +  1         tool error
    │   │                                                                       Retry-After
    │   ├── ExtensionMissing    the server lacks pgvector                       503    1         tool error
    │   ├── DataDirError        the embedded server's data folder is unusable   503    1         tool error
    │   ├── SchemaError         the database's schema is not this version's     503    1         tool error
    │   │   ├── MigrationRequired   older: run `kaynak migrate` (too big to     503 +  1         tool error
    │   │   │                       upgrade at start, or one is under way)      Retry-After
    │   │   └── SchemaTooNew    written by a newer kaynak (no downgrades)       503    1         tool error
    │   ├── BackupError         a backup or restore could not be made           500    1         (CLI only)
    │   └── DataRejected        the database refused a value                    422    1         tool error
    │       └── DocumentRejected  …of one document (the ingest goes on)         422    1         (ingest only)
    ├── LoaderError             one file could not be read (names the file)     422    1         (ingest only)
    │   ├── UnsupportedFileType                                                 422    1
    │   ├── FileTooLarge                                                        413    1
    │   ├── EncryptedFile                                                       422    1
    │   ├── CorruptFile                                                         422    1
    │   └── NoText              empty file, or a PDF without a text layer       422    1
    │       └── OcrUnavailable  a scan needs OCR; Tesseract/language missing    422    1
    ├── ModelError              an embedder or reranker cannot be used          400    1         tool error
    │   ├── UnknownModel                                                        400    1         tool error
    │   ├── MissingExtra        an optional extra is not installed              400    1         tool error
    │   └── ModelLoadError                                                      400    1         tool error
    └── DatasetError            an evaluation data set is malformed             400    1         (eval only)

In an ingest, a LoaderError or DocumentRejected fails that one file (listed in the report; exit 1 when any file
failed, REST 207/4xx with the per-file list) and the rest goes on.
"""

from __future__ import annotations

from pathlib import Path


class KaynakError(Exception):
    """Base of every error kaynak raises on purpose. ``str(err)`` is a message a person can act on."""

    status: int = 400
    title: str = "kaynak error"
    #: seconds after which retrying may succeed (REST sends it as Retry-After); None = retrying will not help
    retry_after: int | None = None

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class ConfigError(KaynakError):
    """A setting (environment variable, kaynak.toml, flag) is wrong or missing."""

    title = "configuration error"


class AuthError(KaynakError):
    """A REST request lacks the bearer token it needs (401), or the token is wrong or writes are off (403)."""

    status = 401
    title = "not authorised"

    def __init__(self, message: str, status: int = 401) -> None:
        super().__init__(message)
        self.status = status


class RequestTooLarge(KaynakError):
    """A request body is over its limit (KAYNAK_MAX_UPLOAD_MB for uploads, KAYNAK_MAX_BODY_KB for JSON)."""

    status = 413
    title = "request too large"


class RequestTimeout(KaynakError):
    """A client sent its request body too slowly (KAYNAK_READ_TIMEOUT_S) and the server stopped waiting."""

    status = 408
    title = "request body too slow"


class HostNotAllowed(KaynakError):
    """A request named a Host (or Origin) the server does not answer to (DNS-rebinding protection on loopback)."""

    status = 421
    title = "host not allowed"


class UsageError(KaynakError):
    """A request or command-line argument is invalid; ``field`` names it when known."""

    title = "invalid request"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class InvalidQuery(UsageError):
    """A search request cannot be run: empty query, k out of range, unknown mode."""

    title = "invalid query"


class NotFound(KaynakError):
    """Something named in the request does not exist."""

    status = 404
    title = "not found"


class CollectionNotFound(NotFound):
    """No collection has this name (the message lists the existing ones)."""

    title = "collection not found"


class DocumentNotFound(NotFound):
    """The collection has no document (or page) with this source."""

    title = "document not found"


class ChunkNotFound(NotFound):
    """No chunk has this id."""

    title = "chunk not found"


class OriginalFileUnavailable(NotFound):
    """A document's original file cannot be served: unknown location, gone, or replaced by a link (web page)."""

    title = "original file unavailable"


class Conflict(KaynakError):
    """The request contradicts what is stored (a name already taken, say)."""

    status = 409
    title = "conflict"


class CollectionMismatch(Conflict):
    """The collection was built with another language or embedder than asked for."""

    title = "collection mismatch"


class StoreError(KaynakError):
    """The database failed; the message names the operation and the server's reason."""

    status = 503
    title = "database error"


class DatabaseUnavailable(StoreError):
    """The database cannot be reached (down, restarting, wrong address or password): retry later."""

    title = "database unavailable"
    retry_after = 2


class WriteConflict(StoreError):
    """Concurrent writes to the same rows collided (deadlock, serialisation) even after retries: try again."""

    title = "concurrent write conflict"
    retry_after = 1


class ExtensionMissing(StoreError):
    """The PostgreSQL server lacks pgvector, or it cannot be enabled."""

    title = "database extension missing"


class DataDirError(StoreError):
    """The embedded server's data folder is unusable (not writable, another major version, …)."""

    title = "data folder unusable"


class SchemaError(StoreError):
    """The database's schema is not the one this version of kaynak uses."""

    title = "database schema mismatch"


class MigrationRequired(SchemaError):
    """The database has an older schema whose upgrade is too big to run silently at start, or an upgrade is under
    way (``kaynak migrate``): run or finish ``kaynak migrate``, then start again."""

    title = "database upgrade required"
    retry_after = 60


class SchemaTooNew(SchemaError):
    """The database was written by a newer kaynak: this version cannot use it and never downgrades it."""

    title = "database from a newer kaynak"


class BackupError(StoreError):
    """A backup or restore could not be made (pg_dump/pg_restore failed, the target is not empty, …)."""

    status = 500
    title = "backup or restore failed"


class DataRejected(StoreError):
    """The database refused a value (out of range, not representable); the request, not the server, is at fault."""

    status = 422
    title = "value refused by the database"


class DocumentRejected(DataRejected):
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
    """No loader reads this file type."""

    title = "unsupported file type"


class FileTooLarge(LoaderError):
    """The file is over KAYNAK_MAX_FILE_MB (or the upload limit) and was not read."""

    status = 413
    title = "file too large"


class EncryptedFile(LoaderError):
    """The file is password-protected."""

    title = "encrypted file"


class CorruptFile(LoaderError):
    """The file is damaged or not what its extension says."""

    title = "corrupt file"


class NoText(LoaderError):
    """The file holds no text (empty, or a PDF page without a text layer)."""

    title = "no text"


class OcrUnavailable(NoText):
    """A scanned file needs OCR and Tesseract or its language data is missing (the message says what to install)."""

    title = "OCR not available"


class ModelError(KaynakError):
    """An embedder or reranker cannot be used."""

    title = "model error"


class UnknownModel(ModelError):
    """No embedder or reranker has this name."""

    title = "unknown model"


class MissingExtra(ModelError):
    """The model needs an optional extra that is not installed (the message says which)."""

    title = "optional dependency missing"


class ModelLoadError(ModelError):
    """The model's weights could not be loaded."""

    title = "model could not be loaded"


class DatasetError(KaynakError):
    """An evaluation data set is missing or malformed."""

    title = "invalid data set"
