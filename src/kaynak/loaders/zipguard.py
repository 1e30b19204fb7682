"""Zip containers (DOCX, OpenDocument, PPTX, XLSX, EPUB, UDF) measured by inflating them, never by trusting the
sizes they declare.

``check_inflated`` streams every member through the decompressor in 64 KB pieces, counting the bytes that really
come out against a running budget for the whole document, and stops the moment the budget is passed: a zip whose
central directory lies, or fifty parts just under every per-part limit, is refused after at most ``budget`` bytes
of work and 64 KB of memory, before python-docx reads a single part into memory.

Limits (per document): ``MAX_INFLATED`` bytes in all, and when more than ``RATIO_FLOOR`` bytes come out, at most
``MAX_RATIO`` times the size of the file.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from pathlib import Path

from kaynak.errors import CorruptFile

MAX_INFLATED = 256 * 1024 * 1024
RATIO_FLOOR = 64 * 1024 * 1024
MAX_RATIO = 100
CHUNK = 64 * 1024


def check_inflated(
    path: Path, data: bytes, budget: int = MAX_INFLATED, kind: str = "DOCX", skip: frozenset[str] = frozenset()
) -> int:
    """Inflate every member of the zip in ``data`` within ``budget`` bytes in all; returns the total.

    Raises CorruptFile ("zip bomb") when the budget or the ratio limit is passed, or when the archive is broken
    (naming the format ``kind``). Members named in ``skip`` are left out: their reader streams them under its own
    cap (an XLSX worksheet is read row by row up to the cell limit).
    """
    total = 0
    limit = budget
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for info in zf.infolist():
                if info.is_dir() or info.filename in skip:
                    continue
                with zf.open(info) as member:  # yields real inflated bytes; a lying size ends in a CRC error
                    while piece := member.read(CHUNK):
                        total += len(piece)
                        if total > limit or (total > RATIO_FLOOR and total > MAX_RATIO * len(data)):
                            raise CorruptFile(
                                path,
                                f"zip archive inflates to more than {min(limit, total) // 1_048_576} MB "
                                f"({len(data) // 1024} KB on disk): refused as a possible zip bomb",
                            )
    except CorruptFile:
        raise
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        zlib.error,
        EOFError,
        ValueError,
        OSError,
        NotImplementedError,
        RuntimeError,
    ) as err:
        raise CorruptFile(path, f"not a readable {kind} file (broken zip archive: {err})") from None
    return total
