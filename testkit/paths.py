"""Where things are, for tests and benchmarks: the repository, the committed test fixtures and the shared data."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"  # small committed files: a tiny BEIR set, documents of every format
SHARED_DATA = REPO.parent / "shared" / "data"  # real documents and retrieval sets beside the checkout
