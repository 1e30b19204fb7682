"""``kaynak status`` in words: every failing file named with its reason, and what is not listed counted (issue 50:
it printed 'failing: <reason>' without the file and stopped at 20 of 24 without saying so)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner


def test_status_names_every_failing_file_or_counts_the_rest(
    env: dict[str, str], tmp_path: Path, unique_name: str
) -> None:
    from kaynak.cli import app

    (tmp_path / "good.md").write_text("# Not\n\nBu dosya okunur ve dizine girer.\n", encoding="utf-8")
    for n in range(24):
        (tmp_path / f"bozuk-{n:02d}.pdf").write_bytes(b"<html>not a pdf</html>")
    runner = CliRunner()
    res = runner.invoke(app, ["ingest", str(tmp_path), "-c", unique_name, "--language", "turkish", "--json"])
    assert res.exit_code == 1, res.output
    res = runner.invoke(app, ["status", "-c", unique_name, "--json"])
    [st] = json.loads(res.stdout)["collections"]
    assert st["files_failing"] == 24
    res = runner.invoke(app, ["status", "-c", unique_name], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    failing = [line.strip() for line in res.stdout.splitlines() if line.strip().startswith("failing:")]
    assert len(failing) == 20
    assert all(line.startswith("failing: bozuk-") and ".pdf: not a PDF file" in line for line in failing)
    assert "… and 4 more failing" in res.stdout
