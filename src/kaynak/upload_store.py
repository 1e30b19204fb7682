"""Where uploaded files live: ``<data_dir>/uploads/<collection>/<safe relative path>`` (docs/interfaces.md).

The REST API writes an upload there and ingests it from there, so an uploaded document has an ``origin`` like any
ingested file (the web page serves it by document id); deleting the document deletes its copy, deleting the
collection deletes the folder. A collection whose name is not a safe folder name (one made before
``kaynak.rules`` existed) gets a folder named after a hash of its name. Nothing here follows symbolic links out.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path, PurePosixPath

from kaynak.errors import UsageError
from kaynak.rules import check_collection_name


def uploads_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "uploads"


def collection_folder(data_dir: Path, collection: str) -> Path:
    """The folder of a collection's uploads (not created)."""
    try:
        folder = check_collection_name(collection)
    except UsageError:
        folder = "_" + hashlib.sha256(collection.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return uploads_dir(data_dir) / folder


def _inside(root: Path, rel: str) -> Path | None:
    """``root/rel`` when it stays inside ``root`` (no ``..``, no absolute part, no link out), else None."""
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts:
        return None
    path = root.joinpath(*pure.parts)
    try:
        if root.resolve() not in path.resolve().parents:
            return None
    except OSError:
        return None
    return path


def remove_copy(data_dir: Path, collection: str, source: str) -> bool:
    """Delete the uploaded copy of ``source`` (if there is one) and the folders it leaves empty."""
    root = collection_folder(data_dir, collection)
    path = _inside(root, source)
    if path is None or path.is_symlink() or not path.is_file():
        return False
    path.unlink()
    parent = path.parent
    while parent != root and root in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent
    return True


def remove_collection(data_dir: Path, collection: str) -> None:
    """Delete a collection's upload folder."""
    root = collection_folder(data_dir, collection)
    if root.is_dir() and not root.is_symlink():
        shutil.rmtree(root, ignore_errors=True)
