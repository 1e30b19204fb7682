"""The cost of the scope check per search (issue 31): REST searches with KAYNAK_API_TOKEN (no lookup, no scoped
view: what every search paid before) against the same searches with a scoped token made by ``kaynak tokens``
(its SHA-256 looked up in PostgreSQL, the store view limited to its collections), in one run, alternating.

Each request goes through the whole app in process (Starlette's TestClient: the TeamGate, Guard, routing, the
search, JSON), keyword and hybrid mode, over two collections of SciFact abstracts (hash embedder: no model, so the
search itself is fast and the overhead is not hidden). Prints p50/p90 per mode and access, and the difference.

    python benchmarks/bench_team_access.py --docs 1000 --queries 200

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

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "retrieval" / "scifact"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1000, help="abstracts per collection")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

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


if __name__ == "__main__":
    main()
