"""Metrics for operators: a small in-process registry and ``GET /metrics`` in the Prometheus text format (0.0.4).

Written here rather than taken from ``prometheus_client``: kaynak needs counters, a few histograms and gauges read
at scrape time, which is a hundred lines; a dependency would bring its own global registry and process collectors
(docs/adr/0024-team-access.md). What is counted:

- ``kaynak_http_requests_total{route,method,status}`` and ``kaynak_http_request_duration_seconds{route}``: every
  request, by route template (``/v1/collections/{name}``; never a collection name or path, so no names leak);
- ``kaynak_search_duration_seconds{mode}``: REST searches by the mode they ran in (hybrid, vector, keyword);
- ``kaynak_ingest_files_total{outcome}``: files of REST uploads by outcome (added, updated, failed, …);
- ``kaynak_auth_failures_total``, ``kaynak_rate_limited_total{budget}``: wrong tokens and 429 answers;
- ``kaynak_refusals_not_audited_total``: refused writes past an address's audit budget (60 a minute);
- at scrape time: ``kaynak_parse_worker_restarts_total``, ``kaynak_db_pool_connections{state}``,
  ``kaynak_replica_lag_seconds{replica}``.

``/metrics`` answers requests from this machine (loopback, not forwarded by a proxy) and tokens with ``admin`` on
``*``; anyone else gets 401/403.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from kaynak.errors import AuthError, KaynakError

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
HELP = {
    "kaynak_http_requests_total": ("counter", "HTTP requests by route template, method and status."),
    "kaynak_http_request_duration_seconds": ("histogram", "HTTP request latency by route template."),
    "kaynak_search_duration_seconds": ("histogram", "Search latency by the mode the search ran in."),
    "kaynak_ingest_files_total": ("counter", "Files of REST uploads by outcome."),
    "kaynak_auth_failures_total": ("counter", "Requests with a wrong, revoked or expired bearer token."),
    "kaynak_rate_limited_total": ("counter", "Requests answered 429, by budget (search, upload, auth, streams)."),
    "kaynak_refusals_not_audited_total": ("counter", "Refused writes past an address's audit budget (counted only)."),
}

Labels = tuple[tuple[str, str], ...]


def _labels(labels: dict[str, str] | None) -> Labels:
    return tuple(sorted((labels or {}).items()))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _fmt_labels(labels: Iterable[tuple[str, str]]) -> str:
    inner = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels)
    return "{" + inner + "}" if inner else ""


def _num(v: float) -> str:
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


class Metrics:
    """Counters and histograms, thread-safe; ``render`` writes the Prometheus text format."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counters: dict[str, dict[Labels, float]] = {}
        self.histograms: dict[str, dict[Labels, list[float]]] = {}  # per bucket counts, then sum, then count

    def inc(self, name: str, labels: dict[str, str] | None = None, value: float = 1.0) -> None:
        key = _labels(labels)
        with self._lock:
            series = self.counters.setdefault(name, {})
            series[key] = series.get(key, 0.0) + value

    def observe(self, name: str, labels: dict[str, str] | None, seconds: float) -> None:
        key = _labels(labels)
        with self._lock:
            h = self.histograms.setdefault(name, {}).setdefault(key, [0.0] * (len(BUCKETS) + 2))
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    h[i] += 1
            h[-2] += seconds
            h[-1] += 1

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        self.inc("kaynak_http_requests_total", {"route": route, "method": method, "status": str(status)})
        self.observe("kaynak_http_request_duration_seconds", {"route": route}, seconds)

    def observe_search(self, mode: str, seconds: float) -> None:
        self.observe("kaynak_search_duration_seconds", {"mode": mode}, seconds)

    def value(self, name: str, labels: dict[str, str] | None = None) -> float:
        with self._lock:
            return self.counters.get(name, {}).get(_labels(labels), 0.0)

    def render(self, gauges: Iterable[tuple[str, str, str, dict[str, str], float]] = ()) -> str:
        """The text format: counters and histograms, then ``gauges`` as (name, type, help, labels, value)."""
        lines: list[str] = []
        with self._lock:
            counters = {n: dict(s) for n, s in self.counters.items()}
            histograms = {n: {k: list(v) for k, v in s.items()} for n, s in self.histograms.items()}
        for name in sorted(counters):
            kind, text = HELP.get(name, ("counter", name))
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
            for labels, v in sorted(counters[name].items()):
                lines.append(f"{name}{_fmt_labels(labels)} {_num(v)}")
        for name in sorted(histograms):
            kind, text = HELP.get(name, ("histogram", name))
            lines += [f"# HELP {name} {text}", f"# TYPE {name} histogram"]
            for labels, h in sorted(histograms[name].items()):
                for i, bound in enumerate(BUCKETS):
                    lines.append(f"{name}_bucket{_fmt_labels((*labels, ('le', _num(bound))))} {_num(h[i])}")
                lines.append(f"{name}_bucket{_fmt_labels((*labels, ('le', '+Inf')))} {_num(h[-1])}")
                lines.append(f"{name}_sum{_fmt_labels(labels)} {_num(h[-2])}")
                lines.append(f"{name}_count{_fmt_labels(labels)} {_num(h[-1])}")
        seen: set[str] = set()
        for name, kind, text, gauge_labels, value in gauges:
            if name not in seen:
                seen.add(name)
                lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
            lines.append(f"{name}{_fmt_labels(sorted(gauge_labels.items()))} {_num(value)}")
        return "\n".join(lines) + "\n"


METRICS = Metrics()  # one per process, as Prometheus expects of a scrape target


def route_label(scope: Any, routes: Any = ()) -> str:
    """The route's template (``/v1/collections/{name}``), or ``unmatched``: the route that answered, else (a request
    refused before routing: 401, 413, 429) the one of ``routes`` it was for."""
    path = getattr(scope.get("route"), "path", None)
    if path:
        return str(path)
    from starlette.routing import Match

    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return str(getattr(route, "path", "unmatched"))
    return "unmatched"


def scrape_gauges(context: Any) -> list[tuple[str, str, str, dict[str, str], float]]:
    """Values read at scrape time: parse-worker restarts, the database pool, replica lag (never raises)."""
    out: list[tuple[str, str, str, dict[str, str], float]] = []
    from kaynak.ingest import workers

    out.append(
        (
            "kaynak_parse_worker_restarts_total",
            "counter",
            "Parse worker processes replaced after a crash, a memory or time limit.",
            {},
            float(getattr(workers, "worker_restarts", 0)),
        )
    )
    store = context.__dict__.get("store")  # only a store this process has opened; a scrape opens nothing
    if store is None:
        return out
    try:
        stats = store.pool.get_stats()
    except Exception:  # a pool being replaced after an outage
        stats = {}
    help_pool = "Primary database pool: connections open (size), idle (available), requests waiting."
    for state, key in (("size", "pool_size"), ("available", "pool_available"), ("waiting", "requests_waiting")):
        out.append(("kaynak_db_pool_connections", "gauge", help_pool, {"state": state}, float(stats.get(key, 0))))
    if context.settings.read_database_urls:
        try:
            replicas = store.health(timeout=1.0).get("replicas", [])
        except KaynakError:
            replicas = []
        for r in replicas:
            lag = r.get("lag_seconds")
            if lag is not None:
                help_lag = "Seconds a read replica is behind the primary."
                out.append(("kaynak_replica_lag_seconds", "gauge", help_lag, {"replica": str(r.get("name"))}, lag))
    return out


def router() -> APIRouter:
    """``GET /metrics``."""
    r = APIRouter()

    @r.get(
        "/metrics",
        tags=["health"],
        summary="Prometheus metrics",
        response_class=Response,
        responses={200: {"description": "Prometheus text format 0.0.4", "content": {CONTENT_TYPE: {}}}},
    )
    async def metrics(request: Request) -> Response:
        """Request counts and latencies, search latency per mode, ingest outcomes, parse-worker restarts, database
        pool use and replica lag, in the Prometheus text format. Readable from this machine (loopback) or with a
        token that has `admin` on `*`."""
        from .team import caller, is_loopback

        if not is_loopback(request.scope, {k.lower(): v for k, v in request.headers.items()}):
            access = await run_in_threadpool(caller, request.scope)
            if not access.everything("admin"):
                if access.kind in ("anonymous", "invalid"):
                    raise AuthError("/metrics needs Authorization: Bearer <a token with --admin '*'>")
                raise AuthError("/metrics needs a token with admin on every collection (--admin '*')", status=403)
        gauges = await run_in_threadpool(scrape_gauges, request.app.state.context)
        return Response(METRICS.render(gauges), media_type=CONTENT_TYPE)

    return r
