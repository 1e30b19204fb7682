"""What every CLI command shares: the Typer app, consoles, settings → Context, error handling, JSON output."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

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


# Characters shown as \uXXXX when text from outside is printed: C0/C1 controls (terminal escapes), line and
# paragraph separators, bidi controls (which reorder what the reader sees).
_UNSAFE = re.compile(
    "[\\x00-\\x09\\x0b-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]"
)


def visible(value: object) -> str:
    """Text from outside (a file name, title, section, collection or token name, an error naming them) with its
    control, separator and bidi characters written as ``\\uXXXX``; newlines kept."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", str(value))


def outside(value: object) -> str:
    """``visible(value)`` for a Rich markup string: its ``[brackets]`` escaped, so it prints as the text it is,
    never as markup (a file named ``[link=…]x[/link].md`` stays that name)."""
    return escape(visible(value))


def cell(value: object) -> Text:
    """``visible(value)`` as a Rich Text (a table cell, a line part): never read as markup."""
    return Text(visible(value))


def make_context(**overrides: Any) -> Context:
    with errors_handled():
        return Context(**overrides)


@contextmanager
def errors_handled() -> Iterator[None]:
    """Turn a KaynakError into one line on stderr and exit 1 (2 for usage errors); no traceback."""
    try:
        yield
    except KaynakError as err:
        err_console.print(f"[bold red]error:[/] {outside(err.message)}", highlight=False, soft_wrap=True)
        raise typer.Exit(2 if isinstance(err, UsageError) else 1) from None
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise typer.Exit(130) from None


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()
