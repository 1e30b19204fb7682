"""Evaluation data sets: BEIR folders (corpus, queries, qrels) and question files for a user's own documents.

BEIR layout: ``corpus.jsonl`` ({"_id", "title", "text"}), ``queries.jsonl`` ({"_id", "text"}) and
``qrels/<split>.tsv`` (a header line, then query-id, corpus-id, score). ``load_beir`` reads one, optionally taking
queries and qrels from another folder (Turkish questions against an English corpus), counts qrels that name
unknown documents or queries instead of failing, and raises ``DatasetError`` naming the file for anything it
cannot use. ``pool`` bounds the work: a seeded sample of queries, all their relevant documents, and a seeded
random sample of the other documents up to a size.

Question files (``load_questions``): one JSON object per line with ``question`` and the expected ``source``
(file path as ingested) and optionally ``page`` — for measuring search on a collection of one's own documents.
Optional fields: ``pages`` (every acceptable page, when the answer runs over a page break; ``page`` may also be a
list), ``sources`` (other files that answer it as well, e.g. the same help page in the other language), ``lang``
(e.g. ``tr``, ``en``, ``tr→en``) and ``kind`` (e.g. ``article``): reports break figures down by them; ``evidence``
(a verbatim phrase of the answer: reports count the quotes that hold it). ``"source": null`` marks a question the
documents do not answer: it counts only in the match-strength figures (``no_good_match`` on unanswerable questions).
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kaynak.errors import DatasetError

SPLIT_PREFERENCE = ("test", "dev", "validation", "train")


@dataclass
class BeirDataset:
    """A BEIR retrieval set in memory. ``qrels``: query id → {doc id: graded relevance}, known ids only."""

    name: str
    path: Path
    corpus: dict[str, tuple[str, str]]  # doc id → (title, text)
    queries: dict[str, str]  # query id → text (only queries that have at least one relevant document)
    qrels: dict[str, dict[str, int]]
    split: str
    queries_path: Path | None = None
    problems: dict[str, int] = field(default_factory=dict)
    pooled: dict[str, Any] | None = None

    @property
    def key(self) -> str:
        """A short id for the set, e.g. ``xquad/tr`` or ``xquad/tr→en`` (queries from another folder)."""
        base = _short_name(self.path)
        if self.queries_path is not None and self.queries_path.resolve() != self.path.resolve():
            q = _short_name(self.queries_path)
            qs, bs = q.split("/"), base.split("/")
            if len(qs) == len(bs) and qs[:-1] == bs[:-1]:
                return f"{base.rsplit('/', 1)[0]}/{qs[-1]}→{bs[-1]}"
            return f"{q}→{base}"
        return base

    @property
    def corpus_key(self) -> str:
        """The corpus's short id (``xquad/en`` also for Turkish queries against it)."""
        return _short_name(self.path)

    def relevant(self, qid: str) -> set[str]:
        return {d for d, r in self.qrels.get(qid, {}).items() if r > 0}

    def doc_json(self, doc_id: str) -> str:
        title, text = self.corpus[doc_id]
        return json.dumps({"_id": doc_id, "title": title, "text": text}, ensure_ascii=False, sort_keys=True)

    def doc_sha256(self, doc_id: str) -> str:
        return hashlib.sha256(self.doc_json(doc_id).encode("utf-8")).hexdigest()

    def corpus_fingerprint(self) -> str:
        """sha256 over every document's id and content hash, in id order: changes when the corpus does."""
        h = hashlib.sha256()
        for doc_id in sorted(self.corpus):
            h.update(doc_id.encode("utf-8") + b"\x1f" + self.doc_sha256(doc_id).encode() + b"\x1e")
        return h.hexdigest()

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "key": self.key,
            "path": str(self.path),
            "queries_path": str(self.queries_path) if self.queries_path else None,
            "split": self.split,
            "documents": len(self.corpus),
            "queries": len(self.queries),
            "judgements": sum(len(v) for v in self.qrels.values()),
            "problems": dict(self.problems),
            "pooled": self.pooled,
        }


def _short_name(path: Path) -> str:
    """The last one or two folder names: ``…/retrieval/xquad/tr`` → ``xquad/tr``, ``…/scifact`` → ``scifact``."""
    parts = path.resolve().parts
    if len(parts) >= 2 and parts[-2] not in ("retrieval", "data", "fixtures", "tmp", "/") and len(parts[-1]) <= 3:
        return f"{parts[-2]}/{parts[-1]}"
    return parts[-1] if parts else "dataset"


def _read_jsonl(path: Path, required: tuple[str, ...]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    try:
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as err:
                    raise DatasetError(f"{path}:{lineno}: not valid JSON ({err.msg})") from None
                if not isinstance(obj, dict):
                    raise DatasetError(f"{path}:{lineno}: each line must be a JSON object")
                missing = [k for k in required if k not in obj]
                if missing:
                    raise DatasetError(f"{path}:{lineno}: missing field {', '.join(repr(m) for m in missing)}")
                rows.append(obj)
    except UnicodeDecodeError:
        raise DatasetError(f"{path}: not UTF-8 text") from None
    return rows


def available_splits(folder: Path) -> list[str]:
    qdir = folder / "qrels"
    return sorted(p.stem for p in qdir.glob("*.tsv")) if qdir.is_dir() else []


def _choose_split(folder: Path, split: str | None) -> str:
    splits = available_splits(folder)
    if split is not None:
        if split not in splits:
            known = ", ".join(splits) or "none"
            raise DatasetError(f"{folder / 'qrels' / (split + '.tsv')} does not exist (splits here: {known})")
        return split
    if not splits:
        raise DatasetError(
            f"{folder / 'qrels'} has no <split>.tsv file; a BEIR folder needs qrels/test.tsv (or train/dev)"
        )
    for s in SPLIT_PREFERENCE:
        if s in splits:
            return s
    return splits[0]


def _read_qrels(path: Path) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    try:
        with path.open(encoding="utf-8", newline="") as fh:
            for lineno, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
                if not row or not "".join(row).strip():
                    continue
                if lineno == 1 and not row[-1].strip().lstrip("-").isdigit():
                    continue  # header
                if len(row) == 4:  # TREC style: qid 0 docid rel
                    row = [row[0], row[2], row[3]]
                if len(row) != 3:
                    raise DatasetError(f"{path}:{lineno}: expected query-id, corpus-id, score separated by tabs")
                try:
                    score = int(float(row[2]))
                except ValueError:
                    raise DatasetError(f"{path}:{lineno}: score {row[2]!r} is not a number") from None
                out.append((row[0].strip(), row[1].strip(), score))
    except UnicodeDecodeError:
        raise DatasetError(f"{path}: not UTF-8 text") from None
    return out


def load_beir(
    dataset_dir: str | Path, *, queries_dir: str | Path | None = None, split: str | None = None
) -> BeirDataset:
    """Read a BEIR folder; queries and qrels come from ``queries_dir`` when given (same layout)."""
    folder = Path(dataset_dir).expanduser()
    if not folder.is_dir():
        raise DatasetError(f"{folder} is not a folder; give a BEIR folder with corpus.jsonl, queries.jsonl, qrels/")
    qfolder = Path(queries_dir).expanduser() if queries_dir is not None else folder
    if not qfolder.is_dir():
        raise DatasetError(f"--queries {qfolder} is not a folder with queries.jsonl and qrels/")
    for f in (folder / "corpus.jsonl", qfolder / "queries.jsonl"):
        if not f.is_file():
            raise DatasetError(f"{f} is missing: a BEIR folder needs corpus.jsonl, queries.jsonl and qrels/<split>.tsv")
    chosen = _choose_split(qfolder, split)
    qrels_path = qfolder / "qrels" / f"{chosen}.tsv"

    corpus: dict[str, tuple[str, str]] = {}
    for row in _read_jsonl(folder / "corpus.jsonl", ("_id",)):
        text = str(row.get("text") or "")
        title = str(row.get("title") or "")
        corpus[str(row["_id"])] = (title, text)
    if not corpus:
        raise DatasetError(f"{folder / 'corpus.jsonl'} has no documents")
    all_queries = {str(r["_id"]): str(r.get("text") or "") for r in _read_jsonl(qfolder / "queries.jsonl", ("_id",))}

    problems = {"unknown_documents": 0, "unknown_queries": 0, "empty_queries": 0, "queries_without_relevant": 0}
    qrels: dict[str, dict[str, int]] = {}
    rows = _read_qrels(qrels_path)
    if not rows:
        raise DatasetError(f"{qrels_path} is empty: split {chosen!r} has no judgements to evaluate")
    for qid, did, score in rows:
        if qid not in all_queries:
            problems["unknown_queries"] += 1
            continue
        if did not in corpus:
            problems["unknown_documents"] += 1
            continue
        qrels.setdefault(qid, {})[did] = score
    queries: dict[str, str] = {}
    for qid, judged in qrels.items():
        if not any(r > 0 for r in judged.values()):
            problems["queries_without_relevant"] += 1
        elif not all_queries[qid].strip():
            problems["empty_queries"] += 1
        else:
            queries[qid] = all_queries[qid]
    qrels = {q: qrels[q] for q in queries}
    if not queries:
        raise DatasetError(
            f"{qrels_path}: no query of split {chosen!r} has a relevant document in {folder / 'corpus.jsonl'} "
            f"({problems['unknown_documents']} judgements name unknown documents, "
            f"{problems['unknown_queries']} unknown queries)"
        )
    return BeirDataset(
        name=folder.name,
        path=folder,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        split=chosen,
        queries_path=qfolder if queries_dir is not None else None,
        problems={k: v for k, v in problems.items() if v},
    )


def pool(
    dataset: BeirDataset, max_docs: int | None = None, max_queries: int | None = None, seed: int = 13
) -> BeirDataset:
    """A smaller copy: a seeded sample of queries whose relevant documents fit in ``max_docs``, plus random fill.

    Queries are taken in a seeded random order (at most ``max_queries``) while their relevant documents still fit
    in ``max_docs``; the rest of the pool is a seeded random sample of the other documents. Queries whose relevant
    documents do not fit are left out (counted in ``pooled``).
    """
    if max_docs is None and max_queries is None:
        return dataset
    if max_docs is not None and max_docs < 1:
        raise DatasetError(f"--max-docs must be at least 1, not {max_docs}")
    if max_queries is not None and max_queries < 1:
        raise DatasetError(f"--max-queries must be at least 1, not {max_queries}")
    rng = random.Random(seed)
    qids = sorted(dataset.queries)
    rng.shuffle(qids)
    limit_docs = max_docs if max_docs is not None else len(dataset.corpus)
    chosen: list[str] = []
    docs: set[str] = set()
    skipped = 0
    for qid in qids:
        if max_queries is not None and len(chosen) >= max_queries:
            break
        need = dataset.relevant(qid) - docs
        if len(docs) + len(need) > limit_docs:
            skipped += 1
            continue
        docs |= need
        chosen.append(qid)
    if not chosen:
        raise DatasetError(f"--max-docs {max_docs} is too small to hold the relevant documents of any query")
    if max_docs is None:
        docs = set(dataset.corpus)
    else:
        rest = sorted(set(dataset.corpus) - docs)
        rng.shuffle(rest)
        docs |= set(rest[: max(0, limit_docs - len(docs))])
    chosen_set = set(chosen)
    corpus = {d: dataset.corpus[d] for d in sorted(docs)}
    qrels = {q: {d: r for d, r in dataset.qrels[q].items() if d in docs} for q in sorted(chosen_set)}
    return replace(
        dataset,
        corpus=corpus,
        queries={q: dataset.queries[q] for q in sorted(chosen_set)},
        qrels=qrels,
        pooled={
            "seed": seed,
            "max_docs": max_docs,
            "max_queries": max_queries,
            "corpus_documents": len(dataset.corpus),
            "split_queries": len(dataset.queries),
            "queries_left_out_for_room": skipped,
        },
    )


# ---------------------------------------------------------------------- questions on one's own documents
@dataclass
class Question:
    """One question with where its answer stands: ``source`` (as ingested) and optionally ``page``.

    ``pages``: every acceptable page (``page`` included); ``lang`` and ``kind``: labels that reports group by.
    """

    id: str
    question: str
    source: str | None  # None: the documents do not answer it
    page: int | None = None
    pages: tuple[int, ...] = ()
    lang: str | None = None
    kind: str | None = None
    sources: tuple[str, ...] = ()  # other files that answer it too
    evidence: str | None = None  # a verbatim phrase of the answer

    @property
    def answerable(self) -> bool:
        return self.source is not None

    def all_sources(self) -> tuple[str, ...]:
        """Every file that answers it (none for an unanswerable question)."""
        return () if self.source is None else (self.source, *self.sources)

    def page_ok(self, page: int | None) -> bool:
        """Is ``page`` one where the answer stands (always False for a question without a page)?"""
        if self.page is None or page is None:
            return False
        return page == self.page or page in self.pages

    def groups(self) -> list[str]:
        """The report groups this question counts in: its language and its kind, when given."""
        return [g for g in (self.lang, self.kind) if g]


def _page_number(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise DatasetError(f"{where}: 'page' must be a whole number ≥ 1, not {value!r}")
    return value


def _pages(row: dict[str, Any], where: str) -> tuple[int | None, tuple[int, ...]]:
    """(first page, all acceptable pages) from ``page`` (a number or a list) and ``pages`` (a list)."""
    raw = row.get("page")
    listed = row.get("pages") or []
    if isinstance(raw, list):
        listed = [*raw, *listed]
        raw = raw[0] if raw else None
    if not isinstance(listed, list):
        raise DatasetError(f"{where}: 'pages' must be a list of page numbers, not {listed!r}")
    pages = tuple(_page_number(v, where) for v in listed)
    page = None if raw is None else _page_number(raw, where)
    if page is None and pages:
        page = pages[0]
    return page, tuple(dict.fromkeys(((page,) if page is not None else ()) + pages))


def _label(row: dict[str, Any], name: str, where: str) -> str | None:
    value = row.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}: {name!r} must be a non-empty string, not {value!r}")
    return value.strip()


def load_questions(path: str | Path) -> list[Question]:
    """Read a JSONL file of {"question", "source", "page"?, "pages"?, "sources"?, "id"?, "lang"?, "kind"?,
    "evidence"?} objects (``"source": null``: a question the documents do not answer)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DatasetError(f"{p} does not exist; give a JSONL file of questions or a BEIR folder")
    out: list[Question] = []
    seen: set[str] = set()
    for i, row in enumerate(_read_jsonl(p, ("question", "source")), 1):
        where = f"{p}: question {i}"
        page, pages = _pages(row, where)
        text = str(row["question"]).strip()
        if not text:
            raise DatasetError(f"{p}: question {i} is empty")
        qid = str(row.get("id", i))
        if qid in seen:
            raise DatasetError(f"{where}: id {qid!r} is used twice")
        seen.add(qid)
        source = row["source"]
        if source is not None and (not isinstance(source, str) or not source.strip()):
            raise DatasetError(f"{where}: 'source' must be a file path or null (unanswerable), not {source!r}")
        others = row.get("sources") or []
        if not isinstance(others, list) or not all(isinstance(o, str) and o.strip() for o in others):
            raise DatasetError(f"{where}: 'sources' must be a list of file paths, not {others!r}")
        if source is None and (page is not None or others):
            raise DatasetError(f"{where}: a question without a 'source' (unanswerable) cannot name pages or sources")
        out.append(
            Question(
                qid,
                text,
                source,
                page,
                pages,
                _label(row, "lang", where),
                _label(row, "kind", where),
                tuple(others),
                _label(row, "evidence", where),
            )
        )
    if not out:
        raise DatasetError(f"{p} has no questions")
    return out
