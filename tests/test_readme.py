"""Docs that are tested: the README's quick-start commands, and CI running the README's test command."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    return [b.strip() for b in blocks]


def test_quick_start_has_exactly_two_commands() -> None:
    commands = quick_start_commands()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)


def test_ci_runs_the_readme_test_command() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert quick_start_commands()[1] in ci


def test_quick_start_main_job_runs(env: dict[str, str], tmp_path: Path) -> None:
    """The first command, less its install steps, on the installed package with the default embedder."""
    steps = [s.strip() for s in quick_start_commands()[0].split("&&")]
    kaynak_steps = [s for s in steps if s.startswith(".venv/bin/kaynak ")]
    assert kaynak_steps and kaynak_steps[0].startswith(".venv/bin/kaynak ingest samples")
    bindir = Path(sys.executable).parent
    if not (bindir / "kaynak").exists():
        pytest.skip("the kaynak console script is not installed next to this Python")
    run_env = dict(os.environ)
    run_env.pop("KAYNAK_EMBEDDER", None)  # the README's job runs on the defaults
    run_env["KAYNAK_DATA_DIR"] = env["KAYNAK_DATA_DIR"]
    run_env["KAYNAK_DATABASE_URL"] = env["KAYNAK_DATABASE_URL"]
    run_env["KAYNAK_COLLECTION"] = "samples"
    outputs = []
    for step in kaynak_steps:
        argv = shlex.split(step)
        argv[0] = str(bindir / "kaynak")
        proc = subprocess.run(argv, cwd=REPO, env=run_env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"{step}\n{proc.stdout}\n{proc.stderr}"
        outputs.append(proc.stdout)
    assert "kat-mulkiyeti" in outputs[1]
    assert "hyphen" in outputs[2].lower()


def test_every_setting_is_documented() -> None:
    """Every setting (``kaynak.config.Settings``) has its ``KAYNAK_*`` row in the README's settings table, so the
    table cannot drift from the code again."""
    from kaynak.config import Settings

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [name for name in Settings.model_fields if f"`KAYNAK_{name.upper()}`" not in readme]
    assert not missing, f"settings without a README row: {missing}"
