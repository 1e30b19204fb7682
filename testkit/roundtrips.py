"""Counting the client's round trips to PostgreSQL (tests and benchmarks; pg_stat_statements is not loaded).

A round trip is one wait of psycopg for the server outside pipeline mode (a statement, a BEGIN, a COMMIT, a
connection check), or one whole pipeline (its statements go out together and are answered together).
Connecting is not counted, nor what the pool's own threads do (they open and configure connections in the
background, off any request's path). Counts from all other threads are summed.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

# psycopg_pool's background threads ("<pool name>-worker-<n>", "<pool name>-scheduler")
_POOL_THREAD = re.compile(r"-(worker-\d+|scheduler)$")


class RoundTrips:
    """``with RoundTrips.counting() as rt: ...; rt.count`` (and ``rt.statements``: the SQL text of each)."""

    def __init__(self) -> None:
        self.count = 0
        self.statements: list[str] = []
        self._lock = threading.Lock()

    def add(self, what: str) -> None:
        with self._lock:
            self.count += 1
            self.statements.append(what)

    def reset(self) -> None:
        with self._lock:
            self.count = 0
            self.statements = []

    @classmethod
    @contextmanager
    def counting(cls) -> Iterator[RoundTrips]:
        rt = cls()
        wait, pipeline, execute = psycopg.Connection.wait, psycopg.Connection.pipeline, psycopg.Connection.execute
        local = threading.local()

        def first_yield_counted(gen: Any, what: str) -> Any:
            """``gen``, counting one round trip if it ever waits on the socket (a COMMIT with no transaction
            open returns at once and sends nothing)."""
            sent: Any = None
            while True:
                try:
                    x = gen.send(sent)
                except StopIteration as stop:
                    return stop.value
                if what:
                    rt.add(what)
                    what = ""
                sent = yield x

        def counted_wait(self: psycopg.Connection, gen: Any, *args: Any, **kwargs: Any) -> Any:
            if self._pipeline is None and not _POOL_THREAD.search(threading.current_thread().name):
                gen = first_yield_counted(gen, getattr(local, "sql", None) or "(transaction control)")
            return wait(self, gen, *args, **kwargs)

        def counted_execute(self: psycopg.Connection, query: Any, *args: Any, **kwargs: Any) -> Any:
            text = query if isinstance(query, str) else getattr(query, "as_string", lambda c: repr(query))(self)
            local.sql = " ".join(str(text).split())[:120] or "(empty query: a connection check)"
            try:
                return execute(self, query, *args, **kwargs)
            finally:
                local.sql = None

        @contextmanager
        def counted_pipeline(self: psycopg.Connection) -> Iterator[Any]:
            outermost = self._pipeline is None
            with pipeline(self) as p:
                yield p
            if outermost:
                rt.add("(pipeline)")

        psycopg.Connection.wait = counted_wait  # type: ignore[method-assign]
        psycopg.Connection.pipeline = counted_pipeline  # type: ignore[method-assign,assignment]
        psycopg.Connection.execute = counted_execute  # type: ignore[method-assign,assignment]
        try:
            yield rt
        finally:
            psycopg.Connection.wait = wait  # type: ignore[method-assign]
            psycopg.Connection.pipeline = pipeline  # type: ignore[method-assign]
            psycopg.Connection.execute = execute  # type: ignore[method-assign]
