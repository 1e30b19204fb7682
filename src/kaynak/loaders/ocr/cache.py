"""The OCR cache: each file's page results under ``<data_dir>/ocr-cache/``, written as pages finish."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from .engine import CACHE_VERSION
from .page import PageOcr

log = logging.getLogger(__name__)


class OcrCache:
    """Per-file OCR results keyed by page number, in ``<data_dir>/ocr-cache/<sha256>-<languages>.json``.

    ``data_dir`` None keeps nothing. Results from another engine version or resolution are ignored. The file is
    rewritten atomically (at most every few seconds while pages come in, and at the end).
    """

    def __init__(self, data_dir: Path | None, sha256: str, languages: str, engine: str, dpi: int) -> None:
        self.path = (Path(data_dir) / "ocr-cache" / f"{sha256}-{languages}.json") if data_dir else None
        self.key = {"version": CACHE_VERSION, "engine": engine, "languages": languages, "dpi": dpi}
        self.pages: dict[int, PageOcr] = {}
        self._dirty = False
        self._written = time.monotonic()
        if self.path is not None and self.path.is_file():
            try:
                stored = json.loads(self.path.read_text("utf-8"))
            except (OSError, ValueError):
                stored = None
            if isinstance(stored, dict) and all(stored.get(k) == v for k, v in self.key.items()):
                for number, value in (stored.get("pages") or {}).items():
                    page = PageOcr.from_json(value)
                    if page is not None and str(number).isdigit():
                        self.pages[int(number)] = page

    def get(self, number: int) -> PageOcr | None:
        return self.pages.get(number)

    def put(self, number: int, result: PageOcr) -> None:
        self.pages[number] = result
        self._dirty = True
        if time.monotonic() - self._written > 5.0:
            self.flush()

    def flush(self) -> None:
        if self.path is None or not self._dirty:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            body = {**self.key, "pages": {str(n): p.to_json() for n, p in sorted(self.pages.items())}}
            tmp.write_text(json.dumps(body, ensure_ascii=False), "utf-8")
            os.replace(tmp, self.path)
        except OSError as err:  # a read-only data folder must not stop the ingest
            log.warning("OCR cache not written (%s): %s", self.path, err)
        self._dirty = False
        self._written = time.monotonic()
