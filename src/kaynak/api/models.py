"""Request and response bodies of the REST API (pydantic models): searches, hits, collections, highlights."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from kaynak.errors import UsageError
from kaynak.rules import check_filter_value, parse_collections
from kaynak.vocabulary import MAX_K, MAX_QUERY_CHARS, KeywordRankingName, LanguageName, SearchModeName


class NoNul(BaseModel):
    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, v: Any, info: Any) -> Any:
        from .deps import reject_nul  # here: importing these models loads no FastAPI (the MCP server's start)

        try:
            return reject_nul(v, info.field_name)
        except UsageError as err:
            raise ValueError(err.message) from None


class SearchFiltersIn(NoNul):
    model_config = ConfigDict(extra="forbid")

    source_prefix: str | None = Field(None, max_length=1000, description="Only sources starting with this path.")
    source_glob: str | None = Field(None, max_length=1000, description="Only sources matching this glob (docs/*.pdf).")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Only documents whose metadata contains this.")

    @field_validator("metadata")
    @classmethod
    def _finite(cls, v: dict[str, Any]) -> dict[str, Any]:
        try:
            return check_filter_value(v, "metadata")
        except UsageError as err:
            raise ValueError(err.message) from None


class SearchRequest(NoNul):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    q: str = Field(
        ...,
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        validation_alias=AliasChoices("q", "query"),
        description="The question or keywords.",
    )
    collections: list[str] | str | None = Field(
        None, description='Collection names (list or comma-separated); omit for the default, "*" for all.'
    )
    mode: SearchModeName = "auto"
    k: int = Field(10, ge=1, le=MAX_K)
    filters: SearchFiltersIn | None = None
    rerank: bool | None = Field(None, description="Rerank with the configured cross-encoder; omit for the default.")
    ranking: KeywordRankingName | None = Field(None, description="Keyword ranking; omit for the setting.")
    group_by: Literal["chunk", "document"] | None = Field(
        None, description="`document`: only each document's best hit; omit (or `chunk`) for every passage."
    )

    @field_validator("collections")
    @classmethod
    def _split(cls, v: list[str] | str | None) -> list[str] | str | None:
        return parse_collections(v)


class Match(BaseModel):
    """How likely a hit answers the question (kaynak.match)."""

    probability: float = Field(..., ge=0, le=1, description="Calibrated probability that the hit answers.")
    label: Literal["strong", "partial", "weak"] = Field(
        ..., description="strong: likely answers; partial: may answer; weak: unlikely to answer."
    )


class Quote(BaseModel):
    """A verbatim passage of a page: the stored page text's ``[char_start:char_end]``."""

    text: str
    char_start: int = Field(..., description="Where the quote starts in the page text (characters, 0-based).")
    char_end: int = Field(..., description="Where it ends in the page text (exclusive).")
    cut_start: bool = Field(False, description="It starts inside a sentence (show … before it).")
    cut_end: bool = Field(False, description="It ends inside a sentence (show … after it).")


class HitCitation(BaseModel):
    """What an agent cites from a hit (the MCP ``search`` tool's lean hit): where it is and the verbatim quote."""

    chunk_id: str = Field(..., description="The hit's chunk (read_context / `GET /v1/chunks/{chunk_id}`).")
    collection: str
    source: str = Field(..., description="The document's path within its collection.")
    title: str
    page: int = Field(..., description="1-based page (formats without pages are split at ingest: see the docs).")
    section: str | None = Field(..., description="The heading path above the passage, or null.")
    quote: Quote = Field(
        ..., description="A verbatim sentence window (at most ~320 characters); its offsets point into the page text."
    )
    match: Match | None = None
    ocr: dict[str, Any] | None = Field(None, description='`{"confidence": 0–100}` when the page was read by OCR.')
    stale: bool = Field(False, description="The document's file changed on disk after it was indexed.")


class Hit(HitCitation):
    """One hit of a search: where it is (collection, source, page, section), the verbatim quote, its scores."""

    model_config = ConfigDict(extra="allow")

    score: float = Field(
        ...,
        description="The ranking score: its scale depends on the mode (fusion, cosine, BM25); compare hits of one "
        "search only. `match` is the calibrated answer probability.",
    )
    scores: dict[str, float | int | None] = Field(..., description="Per retriever leg, its score or rank.")
    char_start: int = Field(0, description="The chunk's start in the page text (the quote lies within the chunk).")
    char_end: int = Field(0, description="The chunk's end in the page text.")
    text: str = Field("", description="The whole chunk the quote was taken from.")
    document_id: int | None = Field(None, description="The document's id (its original file: /v1/documents/{id}).")


class SearchResponse(BaseModel):
    hits: list[Hit] = Field(..., description="Best first.")
    no_good_match: bool = Field(
        ...,
        description="true when no hit is likely to answer (every hit's match is weak, or there are no hits): "
        "the documents searched probably do not say.",
    )
    phrase_missing: bool = Field(
        False,
        description='true when the query has a quoted "phrase" that no passage holds: the hits are the closest '
        "passages without it.",
    )


# Response bodies below mirror, field for field and in order, the dicts the services' ``to_dict`` return: the JSON
# is the same as before they were typed. Routes whose body may leave a field out use ``response_model_exclude_unset``.


class Collection(BaseModel):
    """A collection with its counts; `document_languages` (not on creation): languages detected in its documents."""

    id: int
    name: str
    language: str
    embedder: str
    dim: int
    document_count: int
    chunk_count: int
    created_at: str | None
    document_languages: list[str] = Field(
        default_factory=list, description='The languages detected in its documents, e.g. `["english", "turkish"]`.'
    )


class CollectionList(BaseModel):
    collections: list[Collection]


class CollectionDeleted(BaseModel):
    deleted: str = Field(..., description="The name of the collection deleted.")


class Document(BaseModel):
    """A stored document: its source (path within the collection), hash, title, counts and metadata."""

    id: int
    collection: str
    source: str
    sha256: str
    title: str
    page_count: int
    chunk_count: int
    metadata: dict[str, Any]
    ingested_at: str | None
    warnings: list[str] = Field(..., description="What went wrong while reading it (it was stored anyway).")
    origin: str | None = Field(..., description="The file's absolute path at ingest time (null: unknown).")


class DocumentList(BaseModel):
    documents: list[Document] = Field(..., description="Ordered by source.")
    total: int = Field(..., description="How many documents match (all pages of the listing together).")
    next_offset: int | None = Field(..., description="The `offset` of the next page of the listing; null at the end.")


class DocumentDeleted(BaseModel):
    deleted: str = Field(..., description="The source of the document deleted.")
    collection: str


class PageText(BaseModel):
    """A page's stored text, or the piece of it ``[offset:offset + max_chars]`` (offsets in characters)."""

    collection: str
    source: str
    page: int
    text: str = Field(..., description="The page's stored text from `offset` (quote offsets point into the page).")
    offset: int = Field(..., description="Where `text` starts in the page (characters).")
    total_chars: int = Field(..., description="The whole page's length in characters.")
    next_offset: int | None = Field(..., description="The `offset` that reads on; null when `text` ends the page.")


class Chunk(BaseModel):
    """A stored chunk: ``text`` is its page's text ``[char_start:char_end]``."""

    id: str
    collection: str
    document_id: int
    source: str
    title: str
    ord: int
    page: int
    section: str | None
    char_start: int
    char_end: int
    text: str


class ChunkContext(BaseModel):
    chunk: Chunk | None = Field(..., description="The chunk asked for (null when it is gone).")
    context: list[Chunk] = Field(..., description="It and its neighbours in the same document, in order.")


class IngestReport(BaseModel):
    """What an ingest did: every file in exactly one of added, updated, unchanged, partial, failed or skipped."""

    collection: str
    language: str | None
    embedder: str | None
    added: list[str]
    updated: list[str]
    unchanged: list[str]
    partial: list[str] = Field(..., description="Stored, but something could not be read: see `warnings`.")
    removed: list[str]
    failed: list[dict[str, str]] = Field(..., description='`{"source", "error"}` each: nothing of it stored.')
    skipped: list[dict[str, str]] = Field(..., description='`{"source", "reason"}` each: left out on purpose.')
    warnings: list[dict[str, str]] = Field(..., description='`{"source", "warning"}` for partial and failed files.')
    chunks: int
    embedded: int
    ignored: int
    seconds: float
    truncated: int
    interrupted: bool
    ok: bool = Field(..., description="Every file was taken whole (none failed, none partial).")


class Highlights(BaseModel):
    highlights: list[list[list[int]]] = Field(
        ..., description="Per item, the `[start, end]` character spans of the words that match the query."
    )


class Access(BaseModel):
    """What the caller's bearer token allows, and what this server asks of callers."""

    read: bool
    write: bool
    read_token_required: bool
    writes_enabled: bool
    languages: list[str] = Field(..., description="The languages the web page speaks.")
    token: str | None = Field(..., description="The token's name (null without a token).")
    scopes: dict[str, list[str] | str] = Field(..., description='Per right (read, write, admin), `"*"` or names.')


class PageImage(BaseModel):
    """A PDF page drawn as a PNG, with the passage asked for marked on it."""

    document_id: int
    source: str
    page: int
    page_count: int
    width: int
    height: int
    found: bool = Field(..., description="Whether the passage was located in the page's text layer.")
    boxes: list[list[float]] = Field(..., description="The passage's `[left, top, width, height]` page fractions.")
    image: str = Field(..., description="The page as a `data:image/png;base64,` URL.")


MAX_HIGHLIGHT_TEXT = 20_000  # longest text one highlight item may carry


class HighlightItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    collection: str = Field(min_length=1, max_length=200)
    text: str = Field(max_length=MAX_HIGHLIGHT_TEXT)


class HighlightRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    q: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The query, as searched.")
    items: list[HighlightItem] = Field(max_length=MAX_K, description="Texts to highlight, with their collection.")


class CollectionIn(NoNul):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, max_length=200)
    language: LanguageName | None = None
    embedder: str | None = Field(None, max_length=200, description="embedder name (`kaynak models` lists them)")


class SyncRoot(BaseModel):
    """A remembered folder of a collection and how its last sync went."""

    root: str
    include: list[str]
    exclude: list[str]
    status: str | None = Field(..., description="ok | missing (the folder is gone); null when not scanned.")
    last_sync_at: str | None
    last_sync: dict[str, Any] | None = Field(..., description="The last sync's counts (added, updated, deleted, …).")


class FailingFile(BaseModel):
    source: str
    reason: str
    failed_at: str | None


class Watcher(BaseModel):
    """A ``kaynak watch`` process keeping the collection current (heartbeat younger than three intervals)."""

    id: str
    host: str
    pid: int
    polling: bool
    started_at: str | None
    heartbeat_at: str | None
    pending: int = Field(..., description="Changes it has seen and not yet indexed.")


class CollectionStatus(BaseModel):
    """Whether a collection is current with its folders (``kaynak status``)."""

    collection: str
    documents: int
    roots: list[SyncRoot]
    last_sync_at: str | None = Field(..., description="The oldest last sync of its folders; null if one never ran.")
    files_pending: int | None = Field(..., description="Files new, changed or deleted on disk and not yet indexed.")
    pending: list[str] = Field(..., description="Up to 100 pending sources.")
    files_failing: int
    failing: list[FailingFile] = Field(..., description="Up to 100 failing files with their reasons.")
    watching: bool
    watchers: list[Watcher]


class ReplicaHealth(BaseModel):
    """A read replica: whether it answers, is in rotation, and how far behind the primary it is."""

    model_config = ConfigDict(extra="allow")

    name: str
    ok: bool
    in_rotation: bool
    error: str | None = None
    lag_bytes: int | None = None
    lag_seconds: float | None = None
    schema_behind: bool | None = None


class DatabaseHealth(BaseModel):
    """The primary database: versions when it answers, ``error`` when it does not, and each read replica."""

    model_config = ConfigDict(extra="allow")

    ok: bool
    postgresql: str | None = None
    pgvector: str | None = None
    schema_version: int | None = None
    text_search_configs: list[str] | None = None
    replicas: list[ReplicaHealth] = Field(default_factory=list)
    error: str | None = None


class ModelHealth(BaseModel):
    """The configured embedder (not loaded by the check) and reranker."""

    name: str
    ok: bool
    dim: int | None = None
    error: str | None = None
    reranker: str | None = None


class Health(BaseModel):
    """``GET /v1/health``: ok (200) or unavailable (503), with the database's and the model's state."""

    status: Literal["ok", "unavailable"]
    version: str
    database: DatabaseHealth
    model: ModelHealth


# ---------------------------------------------------------------------------------------------- MCP tool outputs
# The MCP tools' outputSchema: the REST models above where the shapes are the same (PageText), subclasses or subsets
# of them elsewhere (a test checks that every field here has the REST model's name and type), so the two faces
# cannot drift apart.


class AgentHit(HitCitation):
    """A hit of the MCP ``search`` tool: the citation; ``detail: "full"`` adds the chunk and the scores."""

    model_config = ConfigDict(extra="forbid")

    score: float | None = Field(None, description=Hit.model_fields["score"].description)
    scores: dict[str, float | int | None] | None = Field(None, description=Hit.model_fields["scores"].description)
    char_start: int | None = Field(None, description=Hit.model_fields["char_start"].description)
    char_end: int | None = Field(None, description=Hit.model_fields["char_end"].description)
    text: str | None = Field(None, description=Hit.model_fields["text"].description)


class AgentSearch(SearchResponse):
    """The MCP ``search`` tool's result."""

    hits: list[AgentHit] = Field(..., description="Best first.")  # type: ignore[assignment]
    collections: list[str] = Field(..., description="The collections searched.")


class SyncSummary(BaseModel):
    """How current a collection is with its folders (a part of ``CollectionStatus``)."""

    last_sync_at: str | None = Field(..., description=CollectionStatus.model_fields["last_sync_at"].description)
    files_pending: int | None = Field(..., description=CollectionStatus.model_fields["files_pending"].description)
    files_failing: int
    failing: list[FailingFile] = Field(..., description="Up to 10 failing files with their reasons.")
    watching: bool = Field(..., description="A `kaynak watch` process keeps it current.")


class AgentCollection(BaseModel):
    """A collection as the MCP ``list_collections`` tool lists it."""

    name: str
    default: bool = Field(..., description="Searched when `search` is given no `collections`.")
    language: str = Field(..., description="Its text search language: turkish, english or simple.")
    document_languages: list[str] = Field(..., description=Collection.model_fields["document_languages"].description)
    embedder: str
    document_count: int
    chunk_count: int
    sync: SyncSummary


class AgentCollectionList(BaseModel):
    collections: list[AgentCollection]
    default: str | None = Field(
        ...,
        description="What `search` searches without `collections`: the default collection, or null when it is not "
        "visible here (then every collection listed is searched).",
    )


class AgentDocument(BaseModel):
    """A document as the MCP ``list_documents`` tool lists it (a subset of ``Document``)."""

    source: str
    title: str
    page_count: int
    chunk_count: int
    metadata: dict[str, Any]
    ingested_at: str | None = Field(..., description="ISO 8601, UTC.")


class AgentDocumentList(DocumentList):
    documents: list[AgentDocument] = Field(..., description="Ordered by source.")  # type: ignore[assignment]


class AgentChunk(BaseModel):
    """A chunk as the MCP ``read_context`` tool returns it (``Chunk``'s citation fields and text)."""

    chunk_id: str
    collection: str
    source: str
    title: str
    page: int
    section: str | None
    text: str
    is_hit: bool = Field(..., description="This is the chunk asked for.")


class AgentChunkContext(BaseModel):
    chunks: list[AgentChunk] = Field(..., description="The chunk and its neighbours in the same document, in order.")
