"""The ``kaynak`` command line: a thin Typer face over the services (see ``kaynak --help``).

Exit codes: 0 success, 1 failure (or some files failed in an ingest), 2 usage error.
Each command group lives in its own module and registers itself on ``app``.
"""

from __future__ import annotations

from kaynak.cli import (  # noqa: F401  (register commands)
    admin,
    eval_cmd,
    ingest_cmd,
    migrate_cmd,
    search_cmd,
    serve_cmd,
    sync_cmd,
)
from kaynak.cli.common import app


def main() -> None:
    app()


__all__ = ["app", "main"]
