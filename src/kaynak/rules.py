"""Input rules in one place: what a collection name, a query, a filter value and an uploaded file name may be.

The services call these (``SearchService``, ``IngestService``), so the CLI, REST, MCP and the web page refuse the
same things with the same message; the faces only parse. Each check raises ``UsageError`` / ``InvalidQuery``
naming the field.

- Collection names: 1-100 characters of letters (any script, Turkish ``çğıöşü`` included), digits and ``-_.``;
  not ``.`` or ``..``; no ``/``, spaces or control characters (so a name is always a URL path segment and never
  an escape sequence on a terminal). Existing collections keep working whatever their name.
- Queries: at most ``vocabulary.MAX_QUERY_CHARS`` characters on every face.
- Search requests (``check_query``, ``check_k``, ``check_group_by``, ``check_ranking``, ``check_filters``,
  ``parse_metadata_pairs``): the query text, the number of hits, the grouping, the keyword ranking, the filters.
- Metadata filter values: JSON scalars, lists and objects of them, numbers finite (no NaN or Infinity).
- Collection lists: ``"a,b"``, ``["a", "b"]`` or ``"*"`` mean the same on every face (``parse_collections``).
- Upload names: ``upload_paths`` turns the names a client sends into safe, unique relative paths that keep their
  extension, every part at most ``MAX_NAME_BYTES`` bytes of UTF-8, no traversal, hidden parts, control or glob
  characters, and no name that is a folder of another.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from kaynak.errors import InvalidQuery, UsageError
from kaynak.vocabulary import KEYWORD_RANKINGS, MAX_K, MAX_QUERY_CHARS

MAX_COLLECTION_NAME = 100
COLLECTION_NAME_RE = re.compile(r"^[\w.-]+$")  # \w is Unicode: letters of any script, digits, underscore
MAX_NAME_BYTES = 120  # per path part, well under the 255 bytes file systems allow
MAX_PATH_PARTS = 8
MAX_EXTENSION_CHARS = 16
# Characters dropped from uploaded names: Windows-reserved ones and the glob dialect's (kaynak.globs) wildcards.
_DROPPED = set('<>:"|?*\\')
FILTER_KEYS = ("source_prefix", "source_glob", "metadata")
GROUP_BY = ("chunk", "document")


# ---------------------------------------------------------------------------------------------- collections
def check_collection_name(name: Any) -> str:
    """A name for a new collection, or UsageError saying what is wrong with it."""
    if not isinstance(name, str) or not name:
        raise UsageError("a collection needs a name (letters, digits, '-', '_' or '.')", "name")
    shown = name.encode("unicode_escape").decode("ascii")[:120]
    if len(name) > MAX_COLLECTION_NAME:
        raise UsageError(f"collection names have at most {MAX_COLLECTION_NAME} characters", "name")
    if name in (".", "..") or not COLLECTION_NAME_RE.match(name) or name != unicodedata.normalize("NFC", name):
        raise UsageError(
            f"collection name {shown!r} is not allowed: use letters (Turkish ones too), digits, '-', '_' and '.' "
            "only (no '/', spaces or control characters)",
            "name",
        )
    return name


def parse_collections(value: str | Sequence[str] | None) -> str | list[str] | None:
    """``None`` / empty → None (the default collection), ``"*"`` → ``"*"``, ``"a, b"`` or ``["a", "b"]`` → names."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise InvalidQuery(f"collection names must be strings, not {item!r}", "collections")
        if item.strip() and item.strip() not in names:
            names.append(item.strip())
    if not names:
        return None
    return "*" if "*" in names else names


# ---------------------------------------------------------------------------------------------- queries, filters
def check_query_length(text: str, field: str = "query") -> str:
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidQuery(
            f"the query has {len(text)} characters; at most {MAX_QUERY_CHARS} are searched: shorten it", field
        )
    return text


def check_query(query: Any) -> str:
    """The query as searched: text, NUL bytes blanked, stripped, not empty, not too long."""
    if not isinstance(query, str):
        raise InvalidQuery(f"the query must be text, not {type(query).__name__}", "query")
    text = query.replace("\x00", " ")
    if not text.strip():
        raise InvalidQuery("the query is empty; type the words or question to search for", "query")
    return check_query_length(text.strip())


def check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidQuery(f"k must be a whole number from 1 to {MAX_K}, not {k!r}", "k")
    return k


def check_group_by(group_by: Any) -> str:
    if group_by is None:
        return "chunk"
    if group_by not in GROUP_BY:
        raise InvalidQuery(f"unknown grouping {group_by!r}; choose one of {', '.join(GROUP_BY)}", "group_by")
    return str(group_by)


def check_ranking(ranking: str | None, default: str) -> str:
    """The keyword ranking asked for, or ``default`` (the configured one) when none is."""
    ranking = ranking or default
    if ranking not in KEYWORD_RANKINGS:
        raise InvalidQuery(
            f"unknown keyword ranking {ranking!r}; choose one of {', '.join(KEYWORD_RANKINGS)}", "keyword_ranking"
        )
    return ranking


def check_filters(filters: Any) -> tuple[str | None, str | None, dict[str, Any]]:
    """A filters object (``FILTER_KEYS``) as ``(source_prefix, source_glob, metadata)``."""
    if not isinstance(filters, Mapping):
        raise InvalidQuery("filters must be an object with source_prefix, source_glob or metadata", "filters")
    unknown = sorted(set(filters) - set(FILTER_KEYS))
    if unknown:
        raise InvalidQuery(f"unknown filter {', '.join(map(repr, unknown))}; use {', '.join(FILTER_KEYS)}", "filters")
    for key in ("source_prefix", "source_glob"):
        if filters.get(key) is not None and not isinstance(filters[key], str):
            raise InvalidQuery(f"filter {key} must be text", "filters")
    metadata = filters.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidQuery("filter metadata must be an object of field: value pairs", "filters")
    check_filter_value(metadata)
    return filters.get("source_prefix"), filters.get("source_glob"), dict(metadata)


def parse_metadata_pairs(pairs: Sequence[str] | None, field: str = "meta") -> dict[str, Any]:
    """``["lang=tr", "year=2024"]`` → ``{"lang": "tr", "year": "2024"}``: the metadata filter as faces receive it."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidQuery(f"metadata filter {pair!r} is not KEY=VALUE", field)
        out[key.strip()] = value
    return out


def check_filter_value(value: Any, field: str = "filters", depth: int = 0) -> Any:
    """Metadata filter values: finite numbers, strings, booleans, null, and lists / objects of them."""
    if depth > 8:
        raise InvalidQuery("filter metadata is nested too deeply", field)
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidQuery(f"filter values must be finite numbers, not {value!r}", field)
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidQuery("filter metadata keys must be text", field)
            check_filter_value(v, field, depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            check_filter_value(v, field, depth + 1)
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise InvalidQuery(
            f"filter values must be text, numbers, true/false or null, not {type(value).__name__}", field
        )
    return value


# ---------------------------------------------------------------------------------------------- upload names
def _clip_bytes(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` bytes of UTF-8, never inside a character."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", errors="ignore").rstrip()


def _clean_part(part: str, leaf: bool = False) -> str:
    clean = " ".join("".join(ch for ch in part if ch.isprintable() and ch not in _DROPPED).split())
    bare = clean.lstrip(".").strip()
    if leaf and bare and bare != clean and "." not in bare:  # ".md" (what was left of "*?.md"): keep the type
        return f"upload.{bare}"
    return bare


def _fit(part: str, limit: int, keep_suffix: bool) -> str:
    """One path part within ``limit`` bytes; a file name keeps its extension."""
    if len(part.encode("utf-8")) <= limit:
        return part
    suffix = PurePosixPath(part).suffix if keep_suffix else ""
    if len(suffix) > MAX_EXTENSION_CHARS or not suffix[1:].isalnum():
        suffix = ""
    stem = part[: len(part) - len(suffix)] if suffix else part
    return _clip_bytes(stem, limit - len(suffix.encode("utf-8"))) + suffix


def safe_relpath(name: str | None) -> str:
    """A client's file name as a harmless relative path: no traversal, no absolute or hidden parts, each part at
    most MAX_NAME_BYTES bytes (a long file name keeps its extension), at most MAX_PATH_PARTS parts."""
    raw = unicodedata.normalize("NFC", name or "").replace("\\", "/")
    pieces = raw.split("/")
    cleaned = (_clean_part(p, leaf=(i == len(pieces) - 1)) for i, p in enumerate(pieces))
    parts = [p for p in cleaned if p and p not in (".", "..")]
    if not parts:
        raise UsageError(f"upload has no usable file name ({name!r}); name the file, e.g. report.pdf", "files")
    parts = parts[-MAX_PATH_PARTS:]
    fitted = [_fit(p, MAX_NAME_BYTES, keep_suffix=(i == len(parts) - 1)) for i, p in enumerate(parts)]
    return str(PurePosixPath(*fitted))


def _numbered(rel: str, n: int) -> str:
    path = PurePosixPath(rel)
    stem = _fit(path.stem, MAX_NAME_BYTES - len(path.suffix.encode()) - 8, keep_suffix=False)
    return str(path.with_name(f"{stem}-{n}{path.suffix}"))


def upload_paths(names: Iterable[str | None]) -> list[str]:
    """Safe relative paths for the names of one upload, in order: unique, and none a folder of another (a file
    whose cleaned path clashes with another file or with a folder of the upload gets ``-2``, ``-3``… before its
    extension). The same name sent twice is a UsageError."""
    names = list(names)
    seen: set[str] = set()
    for name in names:
        key = unicodedata.normalize("NFC", name or "")
        if key in seen:
            raise UsageError(f"two uploaded files are both named {safe_relpath(name)!r}; rename one", "files")
        seen.add(key)
    rels = [safe_relpath(name) for name in names]
    folders = {str(p) for rel in rels for p in PurePosixPath(rel).parents if str(p) != "."}
    taken: set[str] = set()
    out: list[str] = []
    for rel in rels:
        candidate, n = rel, 1
        while candidate in taken or candidate in folders:
            n += 1
            candidate = _numbered(rel, n)
        taken.add(candidate)
        out.append(candidate)
    return out
