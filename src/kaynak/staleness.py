"""Stale hits: whether the file a search hit was indexed from has changed on disk since.

A hit is ``stale`` when its document's file (``documents.origin``) no longer has the size and modification time
stored when its bytes were hashed (``documents.file_size`` / ``file_mtime_ns``), or is gone from a folder that is
still there. When only the mtime moved (a ``touch``, a copy that kept the bytes), files up to ``HASH_LIMIT`` are
hashed to tell; larger ones count as stale. Unknown cases (no origin or stat stored, a folder that is not on this
machine) are not stale: the flag never cries wolf about what it cannot see. One stat per hit's document.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping

#: Files up to this size whose mtime changed but size did not are hashed to tell (bytes).
HASH_LIMIT = 8 * 1024 * 1024

_hashes: OrderedDict[tuple[str, int, int], str] = OrderedDict()
_lock = threading.Lock()


def _sha256(path: str, size: int, mtime_ns: int) -> str | None:
    key = (path, size, mtime_ns)
    with _lock:
        if key in _hashes:
            _hashes.move_to_end(key)
            return _hashes[key]
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
    except OSError:
        return None
    digest = h.hexdigest()
    with _lock:
        _hashes[key] = digest
        while len(_hashes) > 1024:
            _hashes.popitem(last=False)
    return digest


def file_changed(origin: str | None, size: int | None, mtime_ns: int | None, sha256: str) -> bool:
    """Whether the file at ``origin`` differs from what was indexed (see the module's docstring)."""
    if not origin:
        return False
    try:
        st = os.stat(origin)
    except FileNotFoundError:
        return os.path.isdir(os.path.dirname(origin))  # deleted from a folder that is here
    except OSError:
        return False
    if size is None or mtime_ns is None:
        return False
    if st.st_size == size and st.st_mtime_ns == mtime_ns:
        return False
    if st.st_size != size or st.st_size > HASH_LIMIT:
        return True
    digest = _sha256(origin, st.st_size, st.st_mtime_ns)
    return digest is not None and digest != sha256


def stale_files(files: Mapping[str, tuple[str | None, int | None, int | None, str]]) -> set[str]:
    """The ids among ``files`` (chunk id → its document's origin, size, mtime_ns, sha256) whose file changed."""
    by_file: dict[tuple[str | None, int | None, int | None, str], bool] = {}
    out = set()
    for cid, key in files.items():
        if key not in by_file:
            by_file[key] = file_changed(*key)
        if by_file[key]:
            out.add(cid)
    return out


__all__ = ["HASH_LIMIT", "file_changed", "stale_files"]
