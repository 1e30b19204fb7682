"""Tests of ``kaynak eval`` / ``kaynak eval compare`` (through Typer's runner) and of ``benchmarks/run.py``."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

from kaynak.cli import app
from testkit.paths import FIXTURES, REPO

TINY = FIXTURES / "beir_tiny"
runner = CliRunner()


def _report(tmp: Path, name: str, ndcg: float) -> Path:
    from kaynak.evaluation.report import write_report

    rep = {
        "kind": "beir",
        "dataset": {"key": "beir_tiny", "split": "test", "documents": 16, "queries": 8},
        "collection": {"embedder": "hash"},
        "k": 10,
        "metric_names": ["nDCG@10", "Recall@100"],
        "modes": [
            {
                "mode": "keyword",
                "metrics": {"nDCG@10": ndcg, "Recall@100": 1.0},
                "latency_ms": {"p50": 5.0, "p95": 9.0},
                "recall_curve": [1.0] * 100,
            }
        ],
    }
    write_report(rep, tmp / name)
    return tmp / name


def test_eval_help_and_bad_input(tmp_path: Path) -> None:
    res = runner.invoke(app, ["eval", "--help"])
    assert res.exit_code == 0 and "compare" in res.output and "run" in res.output
    res = runner.invoke(app, ["eval", str(tmp_path / "missing")])
    assert res.exit_code == 1 and "is not a folder" in res.stderr
    d = tmp_path / "set"
    shutil.copytree(TINY, d)
    (d / "queries.jsonl").unlink()
    res = runner.invoke(app, ["eval", str(d)])
    assert res.exit_code == 1 and "queries.jsonl is missing" in res.stderr
    shutil.copy(TINY / "queries.jsonl", d / "queries.jsonl")
    (d / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n")
    res = runner.invoke(app, ["eval", "run", str(d), "--split", "dev"])
    assert res.exit_code == 1 and "dev.tsv is empty" in res.stderr
    q = tmp_path / "q.jsonl"
    q.write_text('{"question": "why", "source": "a.pdf"}\n')
    res = runner.invoke(app, ["eval", str(q)])
    assert res.exit_code == 2 and "-c" in res.stderr


def test_eval_compare(tmp_path: Path) -> None:
    a, b = _report(tmp_path, "a", 0.70), _report(tmp_path, "b", 0.60)
    res = runner.invoke(app, ["eval", "compare", str(a), str(b)])
    assert res.exit_code == 0 and "REGRESSION" in res.stdout and "1 regression" in res.stdout
    res = runner.invoke(app, ["eval", "compare", str(a), str(b), "--strict"])
    assert res.exit_code == 1
    res = runner.invoke(app, ["eval", "compare", str(b), str(a / "report.json"), "--json"])
    data = json.loads(res.stdout)
    assert res.exit_code == 0 and data["regressions"] == 0
    assert {d["metric"] for d in data["differences"]} >= {"nDCG@10", "latency p50 ms"}
    res = runner.invoke(app, ["eval", "compare", str(a), str(tmp_path / "nope")])
    assert res.exit_code == 1 and "does not exist" in res.stderr
    res = runner.invoke(app, ["eval", "compare", str(a), str(b), "--markdown", "--only", "nDCG"])
    assert res.exit_code == 0 and "| keyword | nDCG@10 | 0.700 | 0.600 | -0.100 | **regression** |" in res.stdout
    assert "Recall@100" not in res.stdout and "latency" not in res.stdout


def test_eval_runs_tiny_set(env: dict[str, str], tmp_path: Path) -> None:
    pytest.importorskip("kaynak.chunking", reason="the chunker (issue 3) has not landed yet")
    out = tmp_path / "rep"
    res = runner.invoke(
        app,
        ["eval", str(TINY), "--modes", "keyword,vector", "--embedder", "hash", "--out", str(out), "--json", "--quiet"],
    )
    assert res.exit_code == 0, res.output
    rep = json.loads(res.stdout)
    assert [m["mode"] for m in rep["modes"]] == ["keyword", "vector"]
    assert rep["collection"]["embedder"] == "hash" and rep["dataset"]["queries"] == 8
    assert {p.name for p in out.iterdir()} == {"report.json", "report.md", "report.png"}
    res = runner.invoke(app, ["eval", str(TINY), "--modes", "keyword", "--embedder", "hash", "--out", str(out)])
    assert res.exit_code == 0 and "keyword" in res.stdout and "reusing collection" in res.stderr
    q = tmp_path / "q.jsonl"
    q.write_text('{"question": "what makes bread dough rise", "source": "d13", "page": 1}\n')
    res = runner.invoke(
        app,
        [
            "eval",
            str(q),
            "-c",
            rep["collection"]["name"],
            "--modes",
            "keyword",
            "--out",
            str(tmp_path / "qrep"),
            "--quiet",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "page hit@1" in (tmp_path / "qrep" / "report.md").read_text()


# ---------------------------------------------------------------------- benchmarks/run.py
def _bench_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", REPO / "benchmarks" / "run.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_benchmark_runner_parses_tables(tmp_path: Path) -> None:
    br = _bench_runner()
    md = "intro\n| model | docs/s | dim |\n| --- | ---: | --- |\n| e5 | 2.4 | 384 |\n| hash | 900 | 64 |\n\ndone\n"
    rich = "┏━━━━━━┳━━━━━┓\n┃ item ┃ p50 ┃\n┡━━━━━━╇━━━━━┩\n│ 100k │ 12  │\n└──────┴─────┘\n"
    assert br.parse_tables(md) == [(["model", "docs/s", "dim"], [["e5", "2.4", "384"], ["hash", "900", "64"]])]
    assert br.parse_tables(rich) == [(["item", "p50"], [["100k", "12"]])]
    rows = br.result_rows("x", md)
    assert rows[0] == {"benchmark": "x", "item": "e5", "values": "docs/s=2.4; dim=384"}
    js = 'BENCH_RESULT {"item": "ingest", "metric": "ratio", "value": 1.3, "unit": "x"}\n' + md
    assert br.result_rows("y", js) == [{"benchmark": "y", "item": "ingest", "values": "ratio=1.3 x"}]

    rule = "-" * 25
    fixed = f"Loader throughput\nformat files pages/s cpu\n{rule}\npdf     3     12.5\ntxt     2   900.0\n"
    fixed += f"{rule}\nall     5    40.1\n\nafter\n"
    assert br.parse_fixed_width(fixed) == [("format files pages/s cpu", ["pdf 3 12.5", "txt 2 900.0", "all 5 40.1"])]
    assert br.result_rows("z", fixed)[1] == {"benchmark": "z", "item": "pdf", "values": "3 12.5"}
    (tmp_path / "bench_ok.py").write_text(f"print({md!r})\n")
    (tmp_path / "bench_bad.py").write_text("import sys\nprint('oops', file=sys.stderr)\nsys.exit(3)\n")
    (tmp_path / "helper.py").write_text("")
    paths = br.discover(folder=tmp_path)
    assert [p.name for p in paths] == ["bench_bad.py", "bench_ok.py"]
    outcomes = [br.run_one(p, 60, []) for p in paths]
    table = br.combined_table(outcomes)
    assert "| bad | failed (exit 3) | oops |" in table and "| ok | e5 | docs/s=2.4; dim=384 |" in table
