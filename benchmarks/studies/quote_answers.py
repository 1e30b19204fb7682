"""Quotes that hold the answer: answer-in-quote vs answer-in-chunk on long documents built from XQuAD (issue 27).

Each of the dev set's XQuAD articles (``../shared/data/retrieval/xquad/<lang>``: articles 00–23) becomes one long
document (its title, then its paragraphs separated by blank lines), ingested with the configured chunking, as a
user's file would be. Every dev question is asked (``SearchService.search``, k 3) and, with its answer strings
from the XQuAD release (google-deepmind/xquad, ``xquad.<lang>.json``: only the dev questions' ids are read), the
script counts how often the right article is first, an answer is in the top chunk, in the top quote and in one of
the top three quotes (Turkish case-folded, whitespace collapsed).

    export KAYNAK_DATA_DIR=/tmp/k27-data KAYNAK_THREADS=2
    git -C <xquad clone> show HEAD:xquad.tr.json > /tmp/xquad.tr.json   # likewise en
    python benchmarks/studies/quote_answers.py --lang tr --xquad /tmp/xquad.tr.json
    python benchmarks/studies/quote_answers.py --lang en --xquad /tmp/xquad.en.json

To try a change to quote selection without a database: ``--capture FILE`` records, for each question, what
selection got for the top hit (the chunk, its sentence analysis, the query's lexemes and weights, the question,
the answers); ``--replay FILE`` re-runs today's ``kaynak.quotes`` over it and prints answer-in-quote against
answer-in-chunk (the same figure as the live run, in about a second).

Goal (issue 27): answer in the top quote at least 95 % as often as in the top chunk, quotes ≤ 320 characters.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/ (common)
from common import read_jsonl

D = Path(os.environ.get("KAYNAK_RETRIEVAL_DATA", Path(__file__).resolve().parents[3] / "shared/data/retrieval"))
LANGUAGES = {"tr": "turkish", "en": "english"}


def fold(text: str) -> str:
    """Turkish-aware case folding, whitespace collapsed (kaynak.syntax.fold; repeated so that the script also runs
    against older checkouts for the "before" figures)."""
    return " ".join(text.replace("I", "ı").replace("İ", "i").lower().split())


def load_answers(path: Path, dev: set[str]) -> dict[str, list[str]]:
    """Question id → its answer strings (case-folded), for the dev questions only."""
    answers: dict[str, list[str]] = {}
    for art in json.loads(path.read_text(encoding="utf-8-sig"))["data"]:
        for par in art["paragraphs"]:
            for qa in par["qas"]:
                if qa["id"] in dev:
                    answers[qa["id"]] = [fold(a["text"].lstrip("\ufeff")) for a in qa["answers"]]
    return answers


def spy_on_quotes(captured: dict[str, Any]) -> None:
    """Make every search record, in ``captured``, what quote selection got for its first hit: the chunk's text and
    sentence analysis, the query's lexemes and weights, and the question."""
    from kaynak import quotes
    from kaynak.search import hits as hits_module

    original = hits_module.quotes_and_matches

    def spy(
        texts: Any,
        query_lexemes: Any,
        lexemes_of: Any,
        max_chars: int,
        weights: Any = None,
        question: Any = None,
        stored: Any = None,
        *more: Any,
    ) -> Any:
        first = stored[0] if stored else None
        analysis = first or quotes.analyse(texts[:1], lexemes_of, max_chars)[0]
        captured.clear()
        captured.update(
            text=texts[0],
            analysis=quotes.encode(analysis, max_chars),
            query=sorted(query_lexemes),
            weights=dict(weights or {}),
            question=question,
        )
        return original(texts, query_lexemes, lexemes_of, max_chars, weights, question, stored, *more)

    hits_module.quotes_and_matches = spy  # type: ignore[assignment]


def replay(path: Path) -> None:
    """Today's quote selection over captured inputs: answer in the top quote against answer in the top chunk."""
    from kaynak import quotes

    def no_stemming(items: list[str]) -> list[set[str]]:
        raise AssertionError("a captured analysis is missing")

    n = chunk = quote = ends = 0
    lengths = []
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        n += 1
        text = r["text"]
        spans, _ = quotes.quotes_and_matches(
            [text],
            set(r["query"]),
            no_stemming,
            quotes.MAX_QUOTE_CHARS,
            r["weights"],
            r["question"],
            [quotes.decode(r["analysis"])],
        )
        span = spans[0]
        lengths.append(span[1] - span[0])
        ends += any(e == span[1] for _, e in quotes.sentence_spans(text))
        if r["chunk_holds"]:
            chunk += 1
            quote += any(a in fold(text[span[0] : span[1]]) for a in r["answers"])
    report = {"questions": n, "chunk": chunk, "quote": quote, "quote_over_chunk": round(quote / max(chunk, 1), 4)}
    report |= {"longest": max(lengths, default=0), "mean_length": round(sum(lengths) / max(n, 1), 1)}
    report |= {"ends_at_sentence_end": round(ends / max(n, 1), 4)}
    print(json.dumps(report))


def ensure_collection(
    ctx: Any, name: str, articles: dict[str, list[dict[str, Any]]], language: str, embedder: str
) -> None:
    """The collection of the articles as long documents (title, then paragraphs), ingested unless it exists."""
    from kaynak.errors import CollectionNotFound
    from kaynak.types import LoadedDocument, Page

    try:
        ctx.search.get_collection(name)
        return
    except CollectionNotFound:
        pass
    docs = []
    for art, pars in sorted(articles.items()):
        title = pars[0]["title"].replace("_", " ")
        body = title + "\n\n" + "\n\n".join(p["text"] for p in sorted(pars, key=lambda p: p["_id"]))
        docs.append((art, art, LoadedDocument(title, [Page(1, body)])))
    ctx.ingest.ingest_documents(name, docs, language=language, embedder=embedder)


def main() -> None:
    from kaynak.context import Context

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lang", choices=sorted(LANGUAGES), default="tr")
    ap.add_argument("--xquad", type=Path, required=True, help="xquad.<lang>.json of the XQuAD release")
    ap.add_argument("--embedder", default="e5-small")
    ap.add_argument("--misses", type=Path, help="write the questions whose top chunk holds the answer and quote not")
    ap.add_argument("--answer-bonus", type=float, help="try another kaynak.quotes.ANSWER_BONUS")
    ap.add_argument("--capture", type=Path, help="write each question's quote inputs (top chunk, analysis, query)")
    ap.add_argument("--replay", type=Path, help="re-run today's quote selection over a --capture file (no database)")
    args = ap.parse_args()
    if args.answer_bonus is not None:
        from kaynak import quotes

        quotes.ANSWER_BONUS = args.answer_bonus
    if args.replay:
        replay(args.replay)
        return

    corpus = read_jsonl(D / "xquad" / args.lang / "corpus.jsonl")
    queries = {q["_id"]: q["text"] for q in read_jsonl(D / "xquad" / args.lang / "queries.jsonl")}
    qrels = {}
    for line in (D / "xquad" / args.lang / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc_id, _ = line.split("\t")
        qrels[qid] = doc_id.split("_")[0]
    answers = load_answers(args.xquad, set(queries))
    articles: dict[str, list[dict[str, Any]]] = {}
    for d in corpus:
        articles.setdefault(d["_id"].split("_")[0], []).append(d)

    ctx = Context(embedder=args.embedder)
    captured: dict[str, Any] = {}
    if args.capture:
        spy_on_quotes(captured)
    name = f"quotes_xquad_{args.lang}_{args.embedder}".replace("-", "_")
    try:
        ensure_collection(ctx, name, articles, LANGUAGES[args.lang], args.embedder)
        n = doc1 = chunk1 = quote1 = quote3 = duplicates = 0
        lengths: list[int] = []
        misses = []
        records: list[dict[str, Any]] = []
        t0 = time.perf_counter()
        for qid, text in queries.items():
            if qid not in answers:
                continue
            hits = ctx.search.search(text, name, k=3)
            n += 1
            if not hits:
                continue
            ans = answers[qid]

            def holds(s: str, ans: list[str] = ans) -> bool:
                f = fold(s)
                return any(a in f for a in ans)

            lengths.extend(len(h.quote.text) for h in hits)
            duplicates += sum(  # pairs of the top three whose quotes overlap in one document
                1
                for x in range(len(hits))
                for y in range(x + 1, len(hits))
                if hits[x].source == hits[y].source
                and hits[x].page == hits[y].page
                and hits[x].quote.char_start < hits[y].quote.char_end
                and hits[y].quote.char_start < hits[x].quote.char_end
            )
            doc1 += hits[0].source == qrels[qid]
            c = holds(hits[0].text)
            if args.capture and captured.get("text") == hits[0].text:
                records.append({"qid": qid, "answers": ans, "chunk_holds": c, **captured})
            q = holds(hits[0].quote.text)
            chunk1 += c
            quote1 += q
            quote3 += any(holds(h.quote.text) for h in hits[:3])
            if c and not q:
                misses.append({"qid": qid, "question": text, "answers": ans, "quote": hits[0].quote.text})
        print(
            json.dumps(
                {
                    "lang": args.lang,
                    "questions": n,
                    "article_first": round(doc1 / n, 4),
                    "answer_in_top_chunk": round(chunk1 / n, 4),
                    "answer_in_top_quote": round(quote1 / n, 4),
                    "answer_in_top3_quotes": round(quote3 / n, 4),
                    "quote_over_chunk": round(quote1 / max(chunk1, 1), 4),
                    "longest_quote": max(lengths, default=0),
                    "overlapping_pairs_in_top3": duplicates,
                    "seconds": round(time.perf_counter() - t0, 1),
                }
            )
        )
        if args.capture:
            args.capture.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records), encoding="utf-8")
        if args.misses:
            args.misses.write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in misses), encoding="utf-8")
    finally:
        ctx.close()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
