"""Helpers of tests/ingest/test_sync.py and tests/ingest/test_watch.py: a counting hash embedder, files, and the
check that the database holds exactly the folder (by SQL, document by document)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from kaynak.embeddings.hashing import HashEmbedder
from kaynak.store import Store
from kaynak.store.store import chunk_id

WORDS = [
    "river",
    "town",
    "lake",
    "bridge",
    "market",
    "water",
    "century",
    "people",
    "walk",
    "side",
    "street",
    "house",
    "garden",
    "road",
    "station",
    "tower",
    "window",
    "light",
    "morning",
    "evening",
    "winter",
    "summer",
    "harbour",
    "island",
    "mountain",
    "valley",
    "forest",
    "field",
    "village",
]


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it embeds."""

    def __init__(self, name: str = "hash", dim: int = 64) -> None:
        super().__init__(dim)
        self.name = name
        self.calls = 0
        self.texts: list[str] = []

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts.extend(texts)
        return super().embed_passages(texts)


class Factory:
    def __init__(self) -> None:
        self.embedder = CountingEmbedder()

    def __call__(self, name: str) -> CountingEmbedder:
        return self.embedder


def text_for(i: int, version: int = 0) -> str:
    words = [WORDS[(i * 7 + version * 5 + k) % len(WORDS)] for k in range(40)]
    return f"# Note {i} v{version}\n\nThe {words[0]} of note {i}, version {version}. " + " ".join(words) + ".\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def folder_files(root: Path) -> dict[str, str]:
    """source → sha256 of every file kaynak takes under ``root`` (Markdown and text, not hidden)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            if name.startswith(".") or not name.endswith((".md", ".txt")):
                continue
            path = Path(dirpath) / name
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def db_mismatches(store: Store, collection: str, root: Path) -> list[str]:
    """What differs between the folder and the collection, by SQL, document by document (empty: they agree):
    each file one document with its sha256, origin and stat; chunk ids those of (collection, source, sha256, ord),
    each chunk embedded and true to its page; postings on the chunk ids; no other documents."""
    files = folder_files(root)
    problems = []
    with store.pool.connection() as conn:
        col = conn.execute("SELECT id FROM collections WHERE name = %s", (collection,)).fetchone()
        if col is None:
            return ["no collection"] if files else []
        docs = {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT source, id, sha256, origin, file_size, chunk_count FROM documents WHERE collection_id = %s",
                (col[0],),
            ).fetchall()
        }
        for source in sorted(set(docs) - set(files)):
            problems.append(f"document without a file: {source}")
        for source, sha in sorted(files.items()):
            if source not in docs:
                problems.append(f"file without a document: {source}")
                continue
            doc_id, stored_sha, origin, size, chunk_count = docs[source]
            if stored_sha != sha:
                problems.append(f"{source}: stored sha256 differs from the file's")
                continue
            if origin != os.path.realpath(root / source):
                problems.append(f"{source}: origin {origin!r}")
            if size != (root / source).stat().st_size:
                problems.append(f"{source}: file_size {size}")
            rows = conn.execute(
                "SELECT c.id, c.ord, c.char_start, c.char_end, c.text, p.text, c.embedding IS NOT NULL "
                "FROM chunks c JOIN pages p ON p.document_id = c.document_id AND p.number = c.page "
                "WHERE c.document_id = %s ORDER BY c.ord",
                (doc_id,),
            ).fetchall()
            if len(rows) != chunk_count or not rows:
                problems.append(f"{source}: {len(rows)} chunks, documents says {chunk_count}")
            for cid, ord_, start, end, text, page, embedded in rows:
                if cid != chunk_id(collection, source, sha, ord_):
                    problems.append(f"{source}: chunk {ord_} has id {cid}")
                if page[start:end] != text or not embedded:
                    problems.append(f"{source}: chunk {ord_} not true to its page or not embedded")
            bad = conn.execute(
                "SELECT count(*) FROM postings WHERE document_id = %s AND chunk_key NOT IN "
                "(SELECT kaynak_chunk_key(id) FROM chunks WHERE document_id = %s)",
                (doc_id, doc_id),
            ).fetchone()[0]
            if bad:
                problems.append(f"{source}: {bad} postings on unknown chunks")
    return problems
