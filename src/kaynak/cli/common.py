"""What every CLI command shares: the Typer app, consoles, settings → Context, error handling, JSON output."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console

from kaynak.context import Context
from kaynak.errors import KaynakError, UsageError

app = typer.Typer(
    name="kaynak",
    help=(
        "Search your own documents and quote the passage that answers, with file, page and section.\n\n"
        "Examples:\n\n"
        "  kaynak ingest ./docs -c notes\n\n"
        "  kaynak search 'kat malikleri kurulu ne zaman toplanır' -c notes\n\n"
        "  kaynak doctor\n\n"
        "Settings come from KAYNAK_* environment variables and kaynak.toml (see the README). "
        "Exit codes: 0 ok, 1 failure or partial failure, 2 usage error."
    ),
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)

console = Console()
err_console = Console(stderr=True)


def make_context(**overrides: Any) -> Context:
    with errors_handled():
        return Context(**overrides)


@contextmanager
def errors_handled() -> Iterator[None]:
    """Turn a KaynakError into one line on stderr and exit 1 (2 for usage errors); no traceback."""
    try:
        yield
    except KaynakError as err:
        err_console.print(f"[bold red]error:[/] {err.message}", highlight=False, soft_wrap=True)
        raise typer.Exit(2 if isinstance(err, UsageError) else 1) from None
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise typer.Exit(130) from None


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()
