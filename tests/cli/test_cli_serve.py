"""``kaynak serve`` and ``kaynak mcp`` from the command line, ``python -m kaynak``, and shell completion."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

from kaynak.cli import app

runner = CliRunner()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_help_texts() -> None:
    serve = runner.invoke(app, ["serve", "--help"])
    assert serve.exit_code == 0
    for word in ("--host", "--port", "KAYNAK_API_TOKEN", "/mcp", "claude mcp add"):
        assert word in serve.output, word
    mcp = runner.invoke(app, ["mcp", "--help"])
    assert mcp.exit_code == 0 and "claude_desktop_config.json" in mcp.output and "stderr" in mcp.output


def test_usage_errors_exit_2() -> None:
    assert runner.invoke(app, ["serve", "--port", "70000"]).exit_code == 2
    assert runner.invoke(app, ["serve", "--bogus"]).exit_code == 2
    assert runner.invoke(app, ["mcp", "extra-argument"]).exit_code == 2


def test_completion_and_main_module() -> None:
    import kaynak.__main__ as main_module  # `python -m kaynak` itself runs in test_serve_subprocess

    assert main_module.main is not None
    top = runner.invoke(app, ["--help"])
    assert top.exit_code == 0 and "serve" in top.output and "mcp" in top.output
    assert "--show-completion" in top.output and "--install-completion" in top.output
    # What the shell's completion function runs (``--show-completion`` itself asks shellingham for the shell that
    # started the process, which depends on how the tests run):
    words = {"_KAYNAK_COMPLETE": "complete_bash", "COMP_WORDS": "kaynak se", "COMP_CWORD": "1"}
    comp = runner.invoke(app, [], env=words, prog_name="kaynak")
    assert comp.exit_code == 0 and comp.output.split() == ["search", "serve"]


def test_serve_subprocess(env: dict[str, str], tmp_path: Path) -> None:
    port = free_port()
    child_env = {**os.environ, **env}
    child_env.pop("KAYNAK_API_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kaynak", "serve", "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env,
        cwd=tmp_path,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"{base}/v1/health", timeout=30)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.communicate()[1]
                assert time.monotonic() < deadline, "kaynak serve did not answer within 60 s"
                time.sleep(0.2)
        assert health.status_code == 200, health.text
        assert health.json()["model"]["name"] == "hash"
        assert httpx.get(f"{base}/v1/collections").status_code == 200
        denied = httpx.post(f"{base}/v1/collections", json={"name": "x"})
        assert denied.status_code == 403 and "KAYNAK_API_TOKEN" in denied.json()["detail"]
        assert httpx.get(f"{base}/docs").status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, stderr = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, stderr = proc.communicate()
    assert proc.returncode == 0, stderr
    assert f"http://127.0.0.1:{port}" in stderr and "write endpoints are off" in stderr
