#!/usr/bin/env bash
# Ingest ../shared/data/docs into the collection "docqa" and run the doc-QA questions on it: all questions, then
# each language group (tr, en, cross) on its own, in keyword, vector and hybrid mode, hit@1/hit@5/MRR@5.
#
#   benchmarks/docqa/run.sh OUT_DIR
#
# Environment: KAYNAK_DATA_DIR (use a private one), KAYNAK (the kaynak command; default .venv/bin/kaynak; for
# another checkout: KAYNAK="env PYTHONPATH=/work/baseline/src .venv/bin/python -m kaynak"), DOCS (default
# ../shared/data/docs), MODES (default keyword,vector,hybrid). A second run reuses the ingested collection
# (unchanged files are skipped).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: benchmarks/docqa/run.sh OUT_DIR}"
KAYNAK="${KAYNAK:-.venv/bin/kaynak}"
DOCS="${DOCS:-../shared/data/docs}"
MODES="${MODES:-keyword,vector,hybrid}"
mkdir -p "$out/split"
$KAYNAK ingest "$DOCS" -c docqa --embedder e5-small --json > "$out/ingest.json" || echo "ingest: some files failed (see $out/ingest.json)" >&2
python3 - "$here/questions.jsonl" "$out/split" <<'PY'
import json, sys
groups = {"tr": [], "en": [], "cross": []}
for line in open(sys.argv[1], encoding="utf-8"):
    if line.strip():
        q = json.loads(line)
        groups[q["lang"] if q["lang"] in ("tr", "en") else "cross"].append(line)
for name, lines in groups.items():
    open(f"{sys.argv[2]}/{name}.jsonl", "w", encoding="utf-8").writelines(lines)
PY
$KAYNAK eval "$here/questions.jsonl" -c docqa --k 5 --modes "$MODES" --out "$out/all" -q
for g in tr en cross; do
    $KAYNAK eval "$out/split/$g.jsonl" -c docqa --k 5 --modes "$MODES" --out "$out/$g" -q
done
