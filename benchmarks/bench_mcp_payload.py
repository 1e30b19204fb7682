"""How many characters an agent is handed per MCP tool call (issue 52): ``search`` at k=5 and k=20 and ``read_page``
with its defaults, for this checkout's MCP server and, with ``--before FILE``, an older ``mcp_server.py`` beside it.

The samples (``samples/``) and a generated 1.5 MB text file are ingested with the hash embedder into a temporary
data folder (its own embedded PostgreSQL); each server is driven in process by the SDK's client. Per call it counts
the text content (what a client that reads only text gives the model) and the wire (text content plus the
structured content as compact JSON). Usage::

    git show c966fb4:src/kaynak/mcp_server.py > /tmp/mcp_before.py
    .venv/bin/python benchmarks/bench_mcp_payload.py --before /tmp/mcp_before.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

import anyio

REPO = Path(__file__).resolve().parents[1]
QUERIES = [
    "how do I define a component",
    "what does export default do",
    "kat malikleri kurulu ne zaman toplanır",
    "hyphenation in Writer",
    "Super Bowl 50 nerede oynandı",
    "Normanlar kimdir",
]
BIG = "big-1.5mb.txt"


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"mcp_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sizes(result: Any) -> tuple[int, int]:
    text = sum(len(c.text) for c in result.content if getattr(c, "type", "") == "text")
    structured = result.structured_content
    wire = text + (len(json.dumps(structured, ensure_ascii=False, separators=(",", ":"))) if structured else 0)
    return text, wire


async def _measure(build: Any, search: Any, collection: str) -> dict[str, Any]:
    from mcp import Client

    out: dict[str, Any] = {}
    async with Client(build(search)) as client:
        for k in (5, 20):
            texts, wires, per_hit = [], [], []
            for q in QUERIES:
                r = await client.call_tool("search", {"query": q, "collections": [collection], "k": k})
                assert not r.is_error, r.content
                t, w = _sizes(r)
                n = max(1, len(r.structured_content["hits"]))
                texts.append(t)
                wires.append(w)
                per_hit.append(t / n)
            out[f"search k={k}"] = (statistics.fmean(texts), statistics.fmean(wires), statistics.fmean(per_hit))
        for source in ("your-first-component.md", BIG):
            r = await client.call_tool("read_page", {"collection": collection, "source": source, "page": 1})
            assert not r.is_error, r.content
            t, w = _sizes(r)
            out[f"read_page {source}"] = (t, w, None)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="an older mcp_server.py to measure beside this checkout's")
    args = parser.parse_args()

    from kaynak.config import load_settings
    from kaynak.context import Context
    from kaynak.mcp_server import build_mcp
    from kaynak.store.server import stop_embedded

    tmp = Path(tempfile.mkdtemp(prefix="kaynak-bench-mcp-"))
    try:
        docs = tmp / "docs"
        shutil.copytree(REPO / "samples", docs, ignore=shutil.ignore_patterns("SOURCES.md"))
        line = "Line {:06d}: the quarterly report lists revenue, costs and the audit committee's notes.\n"
        (docs / BIG).write_text("".join(line.format(i) for i in range(1_500_000 // len(line) + 1)), "utf-8")
        ctx = Context(load_settings(data_dir=tmp / "data", embedder="hash"))
        try:
            report = ctx.ingest.ingest([docs], "bench", language="english")
            assert not report.failed, report.failed
            builds = {"after": build_mcp}
            if args.before:
                builds = {"before": _load(args.before).build_mcp, **builds}
            found = {name: anyio.run(_measure, build, ctx.search, "bench") for name, build in builds.items()}
        finally:
            ctx.close()
    finally:
        stop_embedded(tmp / "data")
        shutil.rmtree(tmp, ignore_errors=True)

    cols = list(found)
    print("| call | " + " | ".join(f"{c} text | {c} wire | {c} text/hit" for c in cols) + " |")
    print("|---|" + "---:|" * (3 * len(cols)))
    for row in found[cols[-1]]:
        cells = []
        for c in cols:
            t, w, h = found[c][row]
            cells += [f"{t:,.0f}", f"{w:,.0f}", "" if h is None else f"{h:,.0f}"]
        print(f"| {row} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
