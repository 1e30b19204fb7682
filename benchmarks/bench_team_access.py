"""The cost of the scope check per search (issue 31): REST searches with KAYNAK_API_TOKEN (no lookup, no scoped
view: what every search paid before) against the same searches with a scoped token made by ``kaynak tokens``
(its SHA-256 looked up in PostgreSQL, the store view limited to its collections), in one run, alternating.

Each request goes through the whole app in process (Starlette's TestClient: the TeamGate, Guard, routing, the
search, JSON), keyword and hybrid mode, over two collections of SciFact abstracts (hash embedder: no model, so the
search itself is fast and the overhead is not hidden). Prints p50/p90 per mode and access, and the difference.

    python benchmarks/bench_team_access.py --docs 1000 --queries 200

``--leaks`` measures instead what one token can learn by timing (issue 53), with a real query embedder
(``--embedder``, default e5-small; the passages' vectors are random, only the query's embedding matters):

- the query-vector cache: token Y searches a query token X has just searched, against a query nobody searched,
  with the cache shared by every caller (as before issue 53: ``partition`` patched to return the shared cache)
  and per caller (now), interleaved; and what the cache still saves a caller repeating its own query;
- ids out of scope: ``GET /v1/chunks/{id}`` and ``GET /v1/documents/{id}/file`` for ids that exist in a
  collection the token may not read, against ids that do not exist, interleaved.

    python benchmarks/bench_team_access.py --leaks --docs 300 --queries 120

Without KAYNAK_DATABASE_URL it starts an embedded server in a temporary folder (removed afterwards).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "retrieval" / "scifact"


def main() -> None:  # noqa: C901 - one flat script
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1000, help="abstracts per collection")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--leaks", action="store_true", help="time what a token can learn (issue 53) instead")
    ap.add_argument("--embedder", default="e5-small", help="the query embedder of --leaks")
    args = ap.parse_args()
    if args.leaks:
        leaks(args)
        return

    from fastapi.testclient import TestClient

    from kaynak.access import new_secret, secret_hash
    from kaynak.config import load_settings
    from kaynak.context import Context
    from kaynak.embeddings.hashing import HashEmbedder
    from kaynak.server import create_app
    from kaynak.store.server import embedded_uri, stop_embedded
    from kaynak.types import Chunk, Page

    tmp = Path(tempfile.mkdtemp(prefix="kaynak-bench-team-"))
    url = os.environ.get("KAYNAK_DATABASE_URL") or embedded_uri(tmp)
    ctx = Context(
        load_settings(
            data_dir=tmp, database_url=url, embedder="hash", api_token="bench-api-token", rate_search_per_min=10**9
        )
    )
    try:
        store = ctx.store
        emb = HashEmbedder()
        lines = (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
        tag = os.urandom(3).hex()
        names = [f"bench_team_a_{tag}", f"bench_team_b_{tag}"]
        for n, name in enumerate(names):
            col = store.create_collection(name, "english", "hash", 64)
            for line in lines[n * args.docs : (n + 1) * args.docs]:
                doc = json.loads(line)
                text = (doc.get("title", "") + ". " + doc["text"])[:3000]
                pages = [Page(1, text)]
                chunks = [Chunk(0, 1, None, 0, len(text), text)]
                source = f"{doc['_id']}.txt"
                sha = hashlib.sha256(text.encode()).hexdigest()
                store.replace_document(col, source, sha, source, {}, pages, chunks, emb.embed_passages([text]))
        secret = new_secret()
        store.create_token(f"bench-{tag}", secret_hash(secret), [names[0]], [], [], None)
        queries = [json.loads(q)["text"] for q in (SCIFACT / "queries.jsonl").read_text().splitlines()][: args.queries]
        headers = {
            "legacy token (no scope check)": {"Authorization": "Bearer bench-api-token"},
            "scoped token (lookup + view)": {"Authorization": f"Bearer {secret}"},
        }
        times: dict[str, dict[str, list[float]]] = {m: {h: [] for h in headers} for m in ("keyword", "hybrid")}
        with TestClient(create_app(ctx)) as client:
            for i, q in enumerate(queries):
                for mode in times:
                    order = list(headers) if i % 2 == 0 else list(reversed(headers))
                    for who in order:
                        params = {"q": q, "collections": names[0], "mode": mode, "k": 10}
                        start = time.perf_counter()
                        r = client.get("/v1/search", params=params, headers=headers[who])
                        elapsed = time.perf_counter() - start
                        assert r.status_code == 200, r.text
                        if i >= 5:  # warm-up
                            times[mode][who].append(elapsed * 1000)
            # the resolution alone (what the gate does per request), both kinds, interleaved
            team = client.app.state.team  # type: ignore[attr-defined]
            resolve: dict[str, list[float]] = {who: [] for who in headers}
            for _ in range(500):
                for who, h in headers.items():
                    lower = {k.lower(): v for k, v in h.items()}
                    start = time.perf_counter()
                    team.resolve(lower, "127.0.0.1", "GET")
                    resolve[who].append((time.perf_counter() - start) * 1000)
        out: dict[str, dict[str, dict[str, float]]] = {}
        out["resolve"] = {w: {"p50_ms": statistics.median(ms), "n": len(ms)} for w, ms in resolve.items()}
        for who, ms in resolve.items():
            print(f"resolve  {who:32} p50 {statistics.median(ms):6.3f} ms")
        for mode, per in times.items():
            out[mode] = {}
            for who, ms in per.items():
                qs = statistics.quantiles(ms, n=10)
                out[mode][who] = {"p50_ms": statistics.median(ms), "p90_ms": qs[8], "n": len(ms)}
                print(f"{mode:8} {who:32} p50 {statistics.median(ms):6.2f} ms  p90 {qs[8]:6.2f} ms  n={len(ms)}")
            a, b = (statistics.median(per[w]) for w in headers)
            print(f"{mode:8} scope check: {b - a:+.2f} ms per search at p50 ({(b - a) / a * 100:+.1f} %)")
        if args.json:
            args.json.write_text(json.dumps(out, indent=2))
        for name in names:
            store.delete_collection(name)
        with store.pool.connection() as conn:
            conn.execute("DELETE FROM access_tokens WHERE name = %s", (f"bench-{tag}",))
    finally:
        ctx.close()
        if not os.environ.get("KAYNAK_DATABASE_URL"):
            stop_embedded(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


def _p50(ms: list[float]) -> float:
    return statistics.median(ms)


def _spread(ms: list[float]) -> float:
    """Half the distance between the 40th and 60th percentiles: the noise around the median."""
    qs = statistics.quantiles(ms, n=10)
    return (qs[5] - qs[3]) / 2


def leaks(args: argparse.Namespace) -> None:  # noqa: C901 - one flat measurement script
    """``--leaks``: see the module docstring."""
    import numpy as np
    from fastapi.testclient import TestClient

    from kaynak.access import new_secret, secret_hash
    from kaynak.config import load_settings
    from kaynak.context import Context
    from kaynak.embeddings import embedder_dim
    from kaynak.search.legs import QueryVectorCache
    from kaynak.server import create_app
    from kaynak.store import scoped
    from kaynak.store.scoped import ScopedStore
    from kaynak.store.server import embedded_uri, stop_embedded
    from kaynak.types import Chunk, Page

    tmp = Path(tempfile.mkdtemp(prefix="kaynak-bench-leaks-"))
    url = os.environ.get("KAYNAK_DATABASE_URL") or embedded_uri(tmp)
    ctx = Context(load_settings(data_dir=tmp, database_url=url, embedder=args.embedder, rate_search_per_min=10**9))
    partition, within, floor = QueryVectorCache.partition, ScopedStore._within, scoped.ID_MISS_FLOOR_S
    try:
        store = ctx.store
        dim = embedder_dim(args.embedder)
        rng = np.random.default_rng(53)
        lines = (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
        tag = os.urandom(3).hex()
        names = [f"bench_leak_a_{tag}", f"bench_leak_b_{tag}"]
        for n, name in enumerate(names):
            col = store.create_collection(name, "english", ctx.embedder(args.embedder).name, dim)
            for line in lines[n * args.docs : (n + 1) * args.docs]:
                doc = json.loads(line)
                text = (doc.get("title", "") + ". " + doc["text"])[:3000]
                folder = tmp / "files" / name
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"{doc['_id']}.txt"
                path.write_text(text, encoding="utf-8")
                vec = rng.standard_normal((1, dim)).astype(np.float32)
                vec /= np.linalg.norm(vec)
                sha = hashlib.sha256(path.read_bytes()).hexdigest()
                store.replace_document(
                    col,
                    path.name,
                    sha,
                    path.name,
                    {},
                    [Page(1, text)],
                    [Chunk(0, 1, None, 0, len(text), text)],
                    vec,
                    origin=str(path),
                )
        tokens = {who: new_secret() for who in ("x", "y")}
        for who, secret in tokens.items():
            store.create_token(f"bench-{who}-{tag}", secret_hash(secret), [names[0]], [], [], None)
        hx = {"Authorization": f"Bearer {tokens['x']}"}
        hy = {"Authorization": f"Bearer {tokens['y']}"}
        queries = [json.loads(q)["text"] for q in (SCIFACT / "queries.jsonl").read_text().splitlines()][: args.queries]
        with store.pool.connection() as conn:
            chunk_ids = [
                r[0]
                for r in conn.execute(
                    "SELECT c.id FROM chunks c JOIN collections k ON k.id = c.collection_id WHERE k.name = %s",
                    (names[1],),
                ).fetchall()
            ]
            doc_ids = [
                r[0]
                for r in conn.execute(
                    "SELECT d.id FROM documents d JOIN collections k ON k.id = d.collection_id WHERE k.name = %s",
                    (names[1],),
                ).fetchall()
            ]
        out: dict[str, Any] = {"embedder": args.embedder, "docs": args.docs}
        with TestClient(create_app(ctx)) as client:

            def search(q: str, h: dict[str, str]) -> float:
                params = {"q": q, "collections": names[0], "mode": "hybrid", "k": 10}
                start = time.perf_counter()
                r = client.get("/v1/search", params=params, headers=h)
                elapsed = (time.perf_counter() - start) * 1000
                assert r.status_code == 200, r.text
                return elapsed

            for q in queries[:5]:  # warm-up: the model, the pools
                search(q + " warm", hx)
            cache: dict[str, dict[str, list[float]]] = {
                setup: {"searched by another token": [], "searched by nobody": [], "own repeat": []}
                for setup in ("shared (before)", "per caller (now)")
            }
            for i, q in enumerate(queries):
                setups = list(cache) if i % 2 == 0 else list(reversed(cache))
                for setup in setups:
                    shared = setup.startswith("shared")
                    QueryVectorCache.partition = (lambda self, caller: self) if shared else partition  # type: ignore[method-assign]
                    seen, fresh = f"{q} ({setup[0]}{i}a)", f"{q} ({setup[0]}{i}b)"
                    search(seen, hx)  # token X searches it
                    pair = [("searched by another token", seen), ("searched by nobody", fresh)]
                    for label, text in pair if i % 4 < 2 else reversed(pair):
                        cache[setup][label].append(search(text, hy))
                    cache[setup]["own repeat"].append(search(fresh, hy))  # Y again: its own cache
            QueryVectorCache.partition = partition  # type: ignore[method-assign]
            out["query_vector_cache"] = {}
            for setup, per in cache.items():
                out["query_vector_cache"][setup] = {}
                for label, ms in per.items():
                    out["query_vector_cache"][setup][label] = {
                        "p50_ms": _p50(ms),
                        "noise_ms": _spread(ms),
                        "n": len(ms),
                    }
                    print(f"cache {setup:18} {label:26} p50 {_p50(ms):6.2f} ms  ±{_spread(ms):5.2f}  n={len(ms)}")
                gap = _p50(per["searched by nobody"]) - _p50(per["searched by another token"])
                print(f"cache {setup:18} another's query answers {gap:+.2f} ms faster than a new one")

            def fetch(path: str) -> tuple[float, int]:
                start = time.perf_counter()
                r = client.get(path, headers=hy)
                return (time.perf_counter() - start) * 1000, r.status_code

            labels = ("exists out of scope", "missing", "missing (2nd set)")
            setups = ("found, then hidden (before)", "looked up within scope (now)")
            ids: dict[str, dict[str, list[float]]] = {
                f"{kind} {setup}": {label: [] for label in labels} for kind in ("chunk", "document") for setup in setups
            }
            for i in range(args.queries * 2):
                cid = chunk_ids[i % len(chunk_ids)]
                fake = [format(int(rng.integers(0, 2**63)), "x").rjust(len(cid), "0")[: len(cid)] for _ in range(2)]
                did = doc_ids[i % len(doc_ids)]
                nodoc = [10**9 + int(rng.integers(0, 10**6)) for _ in range(2)]
                trio = [
                    (labels[0], f"/v1/chunks/{cid}", f"/v1/documents/{did}/file"),
                    (labels[1], f"/v1/chunks/{fake[0]}", f"/v1/documents/{nodoc[0]}/file"),
                    (labels[2], f"/v1/chunks/{fake[1]}", f"/v1/documents/{nodoc[1]}/file"),
                ]
                for setup in setups if i % 2 == 0 else reversed(setups):
                    # before issue 53 the row was found in any collection, then hidden (``_within`` gave None), and
                    # a miss answered at once (no floor)
                    before = "before" in setup
                    ScopedStore._within = (lambda self, w: None) if before else within  # type: ignore[method-assign]
                    scoped.ID_MISS_FLOOR_S = 0.0 if before else floor
                    for label, chunk_path, doc_path in trio[i % 3 :] + trio[: i % 3]:
                        for kind, path in (("chunk", chunk_path), ("document", doc_path)):
                            ms, status = fetch(path)
                            assert status == 404, (path, status)
                            if i >= 10:
                                ids[f"{kind} {setup}"][label].append(ms)
            ScopedStore._within = within  # type: ignore[method-assign]
            scoped.ID_MISS_FLOOR_S = floor
            out["ids_out_of_scope"] = {}
            for key, per in ids.items():
                out["ids_out_of_scope"][key] = {}
                for label, ms in per.items():
                    out["ids_out_of_scope"][key][label] = {"p50_ms": _p50(ms), "noise_ms": _spread(ms), "n": len(ms)}
                    print(f"id {key:38} {label:20} p50 {_p50(ms):6.3f} ms  ±{_spread(ms):5.3f}  n={len(ms)}")
                gap = _p50(per[labels[0]]) - _p50(per[labels[1]])
                noise = _p50(per[labels[2]]) - _p50(per[labels[1]])
                print(f"id {key:38} exists − missing {gap:+.3f} ms (two sets of missing ids: {noise:+.3f} ms)")
        if args.json:
            args.json.write_text(json.dumps(out, indent=2))
        for name in names:
            store.delete_collection(name)
        with store.pool.connection() as conn:
            conn.execute("DELETE FROM access_tokens WHERE name LIKE %s", (f"bench-%-{tag}",))
    finally:
        QueryVectorCache.partition = partition  # type: ignore[method-assign]
        ScopedStore._within = within  # type: ignore[method-assign]
        scoped.ID_MISS_FLOOR_S = floor
        ctx.close()
        if not os.environ.get("KAYNAK_DATABASE_URL"):
            stop_embedded(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
