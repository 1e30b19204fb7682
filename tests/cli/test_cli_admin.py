"""CLI: doctor, models, collections and documents — human output, --json shapes and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kaynak.cli import app
from kaynak.store import Store

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_doctor_healthy(env: dict[str, str]) -> None:
    code, out, _ = run("doctor", "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["ok"] is True
    assert report["postgresql"].startswith("18")
    assert report["pgvector"] >= "0.8"
    assert report["embedder"] == "hash" and report["embedder_dim"] == 64
    code, out, _ = run("doctor")
    assert code == 0 and "healthy" in out


def test_doctor_unreachable_database(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAYNAK_DATABASE_URL", "postgresql://kaynak:pw@127.0.0.1:1/kaynak")
    code, out, err = run("doctor")
    assert code == 1
    assert "cannot connect to PostgreSQL" in err
    assert "Traceback" not in out + err


def test_doctor_unknown_embedder(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAYNAK_EMBEDDER", "no-such-model")
    code, out, _ = run("doctor", "--json")
    assert code == 1
    assert any("no-such-model" in p for p in json.loads(out)["problems"])


def test_bad_setting_is_one_line(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAYNAK_CHUNK_SIZE", "many")
    code, out, err = run("collections", "list")
    assert code == 1
    assert "chunk_size" in err and "Traceback" not in out + err


def test_models_json(env: dict[str, str]) -> None:
    code, out, _ = run("models", "--json")
    assert code == 0
    rows = json.loads(out)
    names = {r["name"] for r in rows}
    assert {"e5-small", "use-m3", "hash"} <= names
    e5 = next(r for r in rows if r["name"] == "e5-small")
    assert e5["installed"] is True and e5["dim"] == 384 and e5["kind"] == "embedder"
    code, out, _ = run("models")
    assert code == 0 and "e5-small" in out


def test_collections_and_documents(env: dict[str, str], unique_name: str, tmp_path: Path) -> None:
    code, out, _ = run("collections", "create", unique_name, "--language", "turkish", "--json")
    assert code == 0, out
    created = json.loads(out)
    assert created["name"] == unique_name and created["language"] == "turkish" and created["dim"] == 64
    code, _, err = run("collections", "create", unique_name)
    assert code == 1 and "already exists" in err

    (tmp_path / "a.txt").write_text("Kat malikleri kurulu her yıl toplanır.", encoding="utf-8")
    code, out, _ = run("ingest", str(tmp_path), "-c", unique_name, "--json")
    assert code == 0, out

    code, out, _ = run("collections", "list", "--json")
    row = next(c for c in json.loads(out) if c["name"] == unique_name)
    assert row["document_count"] == 1 and row["chunk_count"] == 1

    code, out, _ = run("documents", "list", "-c", unique_name, "--json")
    assert code == 0 and [d["source"] for d in json.loads(out)] == ["a.txt"]
    code, out, _ = run("documents", "show", "a.txt", "-c", unique_name, "--json")
    assert code == 0 and json.loads(out)["page_count"] == 1
    code, out, _ = run("documents", "show", "missing.txt", "-c", unique_name)
    assert code == 1
    code, out, _ = run("documents", "delete", "a.txt", "-c", unique_name)
    assert code == 0
    code, _, err = run("documents", "delete", "a.txt", "-c", unique_name)
    assert code == 1 and "a.txt" in err

    code, out, _ = run("collections", "delete", unique_name, "--yes")
    assert code == 0
    code, _, err = run("documents", "list", "-c", unique_name)
    assert code == 1 and unique_name in err


def test_usage_errors_exit_2(env: dict[str, str]) -> None:
    code, _, _ = run("collections", "create")
    assert code == 2
    code, _, err = run("collections", "create", "x_bad_lang", "--language", "klingon")
    assert code == 2 and "klingon" in err


def test_outside_names_print_as_text_never_markup(
    env: dict[str, str], store: Store, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upload names, token and collection names come from outside: ``kaynak audit`` (and every CLI table or line
    naming them) prints them as the text they are; Rich markup in them is neither run nor able to crash it, and
    bidi or control characters show as \\uXXXX (issue 53)."""
    monkeypatch.setenv("COLUMNS", "400")  # one line per row: the names are compared whole
    names = [
        "[red]x[/red] [/] x.md",  # a MarkupError before
        "[link=https://evil.example/x]report[/link].md",  # an OSC 8 hyperlink on a colour terminal
        "[conceal]gizli[/conceal].md",  # hidden text
    ]
    for name in names:
        store.record_audit("upload", "tok[bold]en[/bold]", "10.0.0.1", unique_name, [name], None, {})
    store.record_audit("upload", "t", "10.0.0.1", unique_name, ["ters\u202egpj.md"], None, {})
    code, out, err = run("audit", "-c", unique_name)
    assert code == 0, err
    for name in names:
        assert name in out, out
    assert "tok[bold]en[/bold]" in out and "\u202e" not in out and "ters\\u202egpj.md" in out
    code, _, err = run("collections", "delete", "[red]yok[/red]\u2028x", "--yes")  # an error naming it
    assert code == 1 and "[red]yok[/red]\\u2028x" in err, err
