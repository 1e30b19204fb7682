"""One glob dialect for every face: ``*`` matches within one folder, ``**`` across folders, ``?`` one character.

Everything else is literal (no ``[...]`` classes, no ``{a,b}``), so a pattern means the same in ``kaynak ingest
--include/--exclude`` (matched in Python) and in ``search --glob`` (matched by PostgreSQL). Paths use ``/``.

    python_regex(pattern)    -> a Python regular expression matching the whole path
    compile_glob(pattern)    -> that expression compiled
    postgres_regex(pattern)  -> a PostgreSQL (ARE) regular expression matching the whole path, for ``~``

``**/`` matches zero or more whole folders (``docs/**/*.md`` matches ``docs/a.md`` and ``docs/x/y/a.md``); a bare
``**`` elsewhere matches any run of characters, ``/`` included.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["compile_glob", "postgres_regex", "python_regex"]

# Characters with a meaning in PostgreSQL's advanced regular expressions; a backslash before a non-alphanumeric
# character makes it literal there (a backslash before a letter would start an escape such as \d).
_ARE_SPECIAL = frozenset("\\.^$*+?()[]{}|")


def _tokens(pattern: str) -> list[str]:
    """The pattern as tokens: '**/', '**', '*', '?' or one literal character."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("**/")
            i += 3
        elif pattern.startswith("**", i):
            out.append("**")
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    return out


_WILD = {"**/": "(?:.*/)?", "**": ".*", "*": "[^/]*", "?": "[^/]"}


def python_regex(pattern: str) -> str:
    """The Python regular expression (anchored at both ends) for ``pattern``."""
    body = "".join(_WILD.get(t) or re.escape(t) for t in _tokens(pattern))
    return rf"\A{body}\Z"


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """``python_regex(pattern)`` compiled (cached)."""
    return re.compile(python_regex(pattern), re.S)


def postgres_regex(pattern: str) -> str:
    """The PostgreSQL regular expression (anchored, for the ``~`` operator) for ``pattern``.

    ``.`` in PostgreSQL matches newlines too, like Python's ``re.S`` used by :func:`compile_glob`.
    """
    body = "".join(_WILD.get(t) or ("\\" + t if t in _ARE_SPECIAL else t) for t in _tokens(pattern))
    return f"^{body}$"
