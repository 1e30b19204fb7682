"""Per-search overhead around the two legs, two versions of kaynak side by side in one run (issue 14, round 4).

Each version (a git commit) is exported to a temporary folder and runs in a worker process of its own
(``PYTHONPATH`` = that export's ``src``); the driver sends both the same queries, alternating which goes first, so
the two see the same load. Per query and mode the worker reports wall time, its own CPU time, the CPU time of its
PostgreSQL backends (``/proc``, found by ``application_name``) and its round trips (``testkit/roundtrips.py``).
The query vector is cached (a stored chunk's vector plus noise: the vector leg does real HNSW work, no embedder
runs), so what is measured is the search minus the query embedding; each worker also times the two legs alone
(``Store.keyword_search`` with the plan's lexemes; ``Store.vector_search``) on the same queries.

    KAYNAK_DATABASE_URL=postgresql://...kaynak100k... python benchmarks/studies/bench_search_overhead.py \\
        --old 2761723 --new HEAD --collection bench_latency_100000 --queries 100 --json out.json

A worker refuses to open a database whose schema differs from its version's migrations (it would migrate it).
``--rest 60`` adds, per version, 8 REST clients for that many seconds (``bench_search.rest_load``: real e5 query
embedding of every request), old first then new, then old again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
QUERIES = REPO.parent / "shared" / "data" / "retrieval" / "scifact" / "queries.jsonl"
MODES = ("keyword", "vector", "hybrid")


# ---------------------------------------------------------------------- worker (runs inside one version)
def backend_cpu(admin: Any, app: str) -> float:
    total = 0.0
    for (pid,) in admin.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", (app,)).fetchall():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def worker(args: argparse.Namespace) -> None:
    import numpy as np
    import psycopg

    sys.path.insert(0, str(REPO))  # testkit/
    from kaynak.config import Settings
    from kaynak.search import SearchService
    from kaynak.store import Store, migrations
    from testkit.roundtrips import RoundTrips

    url = os.environ["KAYNAK_DATABASE_URL"]
    app = os.environ["PGAPPNAME"]
    latest = max(m.version for m in migrations.MIGRATIONS)
    with psycopg.connect(url, autocommit=True, application_name=app + "-admin") as c:
        have = migrations.current_version(c)
    if have != latest:
        print(json.dumps({"error": f"database schema {have}, this version's {latest}: not opening it"}), flush=True)
        return
    vectors = np.load(args.vectors)

    class Cached:
        name, dim = "e5-small", vectors.shape[1]

        def embed_queries(self, texts: list[str]) -> Any:
            raise AssertionError("the query vectors are cached")

    store = Store(url)
    svc = SearchService(store, Settings(collection=args.collection, embedder="e5-small"), lambda name: Cached())
    col = store.get_collection(args.collection)
    admin = psycopg.connect(url, autocommit=True, application_name=app + "-admin")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("quit"):
            break
        if cmd.get("rest"):
            sys.path.insert(0, str(REPO / "benchmarks"))
            import bench_search

            out = bench_search.rest_load(col, cmd["queries"], 8, cmd["rest"])
            print(json.dumps(out), flush=True)
            continue
        q, i, what = cmd["query"], cmd["i"], cmd["what"]
        svc.query_vectors.put("e5-small", q, vectors[i])
        if what == "kwleg":
            lexemes = store.query_lexemes(col.language, q)
            fn = partial(store.keyword_search, [col], None, 40, lexemes=lexemes)
        elif what == "vecleg":
            fn = partial(store.vector_search, col, vectors[i], 40, None, svc.settings.ef_search)
        else:
            fn = partial(svc.search, q, mode=what)
        b0 = backend_cpu(admin, app)
        with RoundTrips.counting() as rt:
            c0, t0 = time.process_time(), time.perf_counter()
            out = fn()
            t1, c1 = time.perf_counter(), time.process_time()
        b1 = backend_cpu(admin, app)
        # what must not change: the hits, their quotes and marks, the plan's reason and weights
        ids = (
            [(h.chunk_id, h.quote.text, h.quote.char_start, h.ocr, h.stale) for h in out]
            + [out.plan.reason, sorted(out.plan.weights.items())]
            if what in MODES
            else [r[0] for r in out]
        )
        print(
            json.dumps(
                {
                    "ms": (t1 - t0) * 1000,
                    "client_cpu_ms": (c1 - c0) * 1000,
                    "backend_cpu_ms": (b1 - b0) * 1000,
                    "round_trips": rt.count,
                    "ids": ids,
                }
            ),
            flush=True,
        )
    admin.close()
    store.close()


# ---------------------------------------------------------------------- driver
def export(commit: str, into: Path) -> Path:
    """The version as files: a commit exported with ``git archive``, or a folder (a source tree) copied."""
    if Path(commit).is_dir():
        shutil.copytree(commit, into, ignore=shutil.ignore_patterns("__pycache__", ".kaynak", ".venv"))
    else:
        into.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    # this harness and the round-trip counter come from the working tree (the old version may lack them)
    for rel in ("testkit/roundtrips.py", "benchmarks/studies/bench_search_overhead.py"):
        (into / rel).parent.mkdir(parents=True, exist_ok=True)
        (into / rel).write_bytes((REPO / rel).read_bytes())
    return into


class Worker:
    def __init__(self, label: str, root: Path, args: argparse.Namespace, vectors: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(root / "src"), "PGAPPNAME": f"p14b-{label}"}
        self.label = label
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(root / "benchmarks" / "bench_search_overhead.py"),
                "--worker",
                "--collection",
                args.collection,
                "--vectors",
                str(vectors),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=root,
        )
        first = self.ask(None)
        if "error" in first:
            raise SystemExit(f"{label}: {first['error']}")

    def ask(self, cmd: dict[str, Any] | None) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if cmd is not None:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"worker {self.label} ended")
        return json.loads(line)

    def close(self) -> None:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({"quit": True}) + "\n")
            self.proc.stdin.close()
        finally:
            self.proc.wait(30)


def query_vectors(url: str, collection: str, n: int, path: Path) -> None:
    """For query i: the vector of the collection's chunk number 997·i (by id) plus noise of norm 0.5."""
    import numpy as np
    import psycopg
    from pgvector.psycopg import register_vector

    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        rows = []
        for i in range(n):
            rows.append(
                conn.execute(
                    "SELECT embedding::vector FROM chunks c JOIN collections col ON col.id = c.collection_id "
                    "WHERE col.name = %s AND embedding IS NOT NULL ORDER BY c.id LIMIT 1 OFFSET %s",
                    (collection, 997 * i % 90000),
                ).fetchone()[0]
            )
    base = np.stack([np.asarray(r.to_numpy(), dtype=np.float32) for r in rows])
    rng = np.random.default_rng(14)
    noise = rng.standard_normal(base.shape).astype(np.float32)
    noise *= 0.5 / np.linalg.norm(noise, axis=1, keepdims=True)
    v = base / np.linalg.norm(base, axis=1, keepdims=True) + noise
    np.save(path, v / np.linalg.norm(v, axis=1, keepdims=True))


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def driver(args: argparse.Namespace) -> None:
    url = os.environ["KAYNAK_DATABASE_URL"]
    queries = [json.loads(line)["text"] for line in QUERIES.read_text(encoding="utf-8").splitlines()][: args.queries]
    tmp = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    vectors = tmp / "vectors.npy"
    query_vectors(url, args.collection, len(queries), vectors)
    commits = {"old": args.old, "new": args.new}
    shas = {
        k: c
        if Path(c).is_dir()
        else subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", c], check=True, capture_output=True, text=True
        ).stdout.strip()
        for k, c in commits.items()
    }
    workers = {k: Worker(k, export(c, tmp / k), args, vectors) for k, c in commits.items()}
    whats = [*MODES, "kwleg", "vecleg"]
    res: dict[str, dict[str, list[dict[str, Any]]]] = {k: {w: [] for w in whats} for k in workers}
    try:
        for i, q in enumerate(queries[:3]):  # warm both (caches, pools)
            for w in workers.values():
                for what in whats:
                    w.ask({"query": q, "i": i, "what": what})
        for i, q in enumerate(queries):
            for what in whats:
                order = list(workers) if (i + whats.index(what)) % 2 == 0 else list(reversed(workers))
                for k in order:
                    res[k][what].append(workers[k].ask({"query": q, "i": i, "what": what}))
        same_hits = {
            what: sum(a["ids"] == b["ids"] for a, b in zip(res["old"][what], res["new"][what], strict=True))
            for what in whats
        }
        rest = {}
        if args.rest:
            for k in ("old", "new", "old", "new")[: 2 * args.rest_rounds]:
                rest.setdefault(k, []).append(workers[k].ask({"rest": args.rest, "queries": queries}))
                print(f"  REST {k}: {rest[k][-1]}", file=sys.stderr, flush=True)
    finally:
        for w in workers.values():
            w.close()
    report: dict[str, Any] = {
        "collection": args.collection,
        "queries": len(queries),
        "commits": shas,
        "load average at the end": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "same hits, quotes and plan reasons (queries)": same_hits,
        "rows": {},
    }
    for k in workers:
        for what in whats:
            rows = res[k][what]
            ms = [r["ms"] for r in rows]
            report["rows"][f"{k} {what}"] = {
                "p50 ms": round(pct(ms, 50), 2),
                "p95 ms": round(pct(ms, 95), 2),
                "mean ms": round(statistics.fmean(ms), 2),
                "client CPU ms": round(statistics.fmean(r["client_cpu_ms"] for r in rows), 2),
                "backend CPU ms": round(statistics.fmean(r["backend_cpu_ms"] for r in rows), 2),
                "round trips": sorted({r["round_trips"] for r in rows}),
            }
        # overhead per query: the search minus the slower of its legs, both from the same query
        kw, vec = res[k]["kwleg"], res[k]["vecleg"]
        for what in MODES:
            legs = [
                kw[i]["ms"]
                if what == "keyword"
                else vec[i]["ms"]
                if what == "vector"
                else max(kw[i]["ms"], vec[i]["ms"])
                for i in range(len(queries))
            ]
            over = [r["ms"] - leg for r, leg in zip(res[k][what], legs, strict=True)]
            report["rows"][f"{k} {what}"]["overhead p50 ms"] = round(pct(over, 50), 2)
    if args.rest:
        report["rest"] = rest
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--vectors", help=argparse.SUPPRESS)
    p.add_argument("--old", default="2761723", help="a commit, or a folder holding a source tree")
    p.add_argument("--new", default="HEAD", help="a commit, or a folder holding a source tree")
    p.add_argument("--collection", default="bench_latency_100000")
    p.add_argument("--queries", type=int, default=100)
    p.add_argument("--rest", type=int, default=0, help="seconds of 8 REST clients per version (0: none)")
    p.add_argument("--rest-rounds", type=int, default=1, help="1: old, new; 2: old, new, old, new")
    p.add_argument("--json")
    args = p.parse_args()
    worker(args) if args.worker else driver(args)


if __name__ == "__main__":
    main()
