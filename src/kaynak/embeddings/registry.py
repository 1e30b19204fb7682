"""Named factories: a name is looked up exactly or by its longest registered prefix, built once per key, shared.

The one lookup behind ``register_embedder`` / ``get_embedder`` (``kaynak.embeddings``) and ``register_reranker`` /
``get_reranker`` (``kaynak.embeddings.rerank``). A name is either exact (``"e5-small"``) or a prefix ending in
``":"`` (``"st:"``: any name starting with it; the factory gets the rest, the *arg*). Exact names win over
prefixes, longer prefixes over shorter ones; names are case-insensitive. ``get`` builds an instance with the
entry's factory the first time its key is asked for and returns that same instance afterwards (thread-safe:
one build per key, under a lock).
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")
O = TypeVar("O")  # noqa: E741 - what every factory of one registry receives besides the arg (options)


@dataclass(frozen=True)
class Entry(Generic[T, O]):
    """One registered name: how to build (``factory(arg, options)``), how to share (``key(arg, options)``)."""

    name: str  # lower-case; an exact name, or a prefix ending in ':'
    factory: Callable[[str, O], T]
    key: Callable[[str, O], Hashable]
    shown: str  # how the list of available names shows it ("" = not shown)
    info: Any = None  # what the kind records besides (embedders: their dimension as a function of arg)

    @property
    def is_prefix(self) -> bool:
        return self.name.endswith(":")


class Registry(Generic[T, O]):
    """Names → factories, with one shared instance per key. ``unknown(name)`` makes the error for a name that
    matches nothing (each kind words it, naming its settings)."""

    def __init__(self, unknown: Callable[[str], Exception]) -> None:
        self._entries: dict[str, Entry[T, O]] = {}
        self._instances: dict[Hashable, T] = {}
        self._lock = threading.Lock()
        self._unknown = unknown

    def register(
        self,
        name_or_prefix: str,
        factory: Callable[[str, O], T],
        *,
        key: Callable[[str, O], Hashable] | None = None,
        shown: str | None = None,
        info: Any = None,
    ) -> Entry[T, O]:
        """Add (or replace) a name. ``key`` defaults to (name, arg, options); ``shown`` to the name as given."""
        low = name_or_prefix.strip().lower()
        if not low:
            raise ValueError("a registered name cannot be empty")

        def default_key(arg: str, options: O) -> Hashable:
            return (low, arg, options)

        key_fn = key or default_key
        entry = Entry(low, factory, key_fn, name_or_prefix if shown is None else shown, info)
        self._entries[low] = entry
        return entry

    def unregister(self, name_or_prefix: str) -> None:
        """Remove a name (its shared instances stay with whoever holds them)."""
        del self._entries[name_or_prefix.strip().lower()]

    __delitem__ = unregister

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self._entries

    def lookup(self, name: str) -> tuple[Entry[T, O], str]:
        """The entry for ``name`` and the arg its factory gets ("" for an exact name); ``unknown(name)`` raised
        when nothing matches."""
        raw = name.strip()
        low = raw.lower()
        exact = self._entries.get(low)
        if exact is not None and not exact.is_prefix:
            return exact, ""
        prefixes = [e for e in self._entries.values() if e.is_prefix and low.startswith(e.name)]
        if prefixes:
            best = max(prefixes, key=lambda e: len(e.name))
            return best, raw[len(best.name) :]
        raise self._unknown(raw)

    def get(self, name: str, options: O) -> T:
        """The shared instance for ``name`` with these options, built on first use."""
        entry, arg = self.lookup(name)
        key = entry.key(arg, options)
        with self._lock:
            found = self._instances.get(key)
            if found is None:
                found = entry.factory(arg, options)
                self._instances[key] = found
            return found

    def entries(self) -> list[Entry[T, O]]:
        """Every registered name, in registration order (for lists of what is available)."""
        return list(self._entries.values())

    def close_match(self, name: str) -> str | None:
        """The exact name most like ``name`` (for "did you mean"), or None."""
        exact = [e.name for e in self._entries.values() if not e.is_prefix]
        found = difflib.get_close_matches(name.strip().lower(), exact, n=1)
        return found[0] if found else None
