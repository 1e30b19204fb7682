"""A loader a program registers at run time: ``.shout`` files, read as upper-case text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kaynak.types import LoadedDocument, Page


def load_shout(path: Path, data: bytes, options: Any) -> LoadedDocument:
    return LoadedDocument(title=path.stem.upper(), pages=[Page(1, data.decode("utf-8").upper())])
