"""docs/interfaces.md is tested like the README's quick start: its examples run, and its tables match the code.

- the REST endpoint table lists exactly the app's routes; the curl examples run against the app (TestClient), and the
  problem+json example is what the server answers;
- the MCP tool table lists exactly the tools and their arguments; the client configurations are valid JSON that
  start ``kaynak mcp`` or name the ``/mcp`` endpoint on the default address;
- every command of the CLI table exists with the options it shows, and every command is in the table.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from typer.testing import CliRunner

from kaynak.cli import app as cli_app
from kaynak.config import Settings, load_settings
from kaynak.context import Context
from kaynak.mcp_server import build_mcp
from kaynak.server import create_app

REPO = Path(__file__).resolve().parents[1]
DOC = (REPO / "docs" / "interfaces.md").read_text(encoding="utf-8")
TOKEN = "docs-example-token"


def section(title: str) -> str:
    """The text of the section whose heading is ``title`` (up to the next heading of the same or a higher level;
    lines inside code blocks are never headings)."""
    lines = DOC.splitlines(keepends=True)
    start = level = None
    fenced = False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"(#+) (.*)", line)
        if m is None:
            continue
        if start is None and m.group(2).strip() == title:
            start, level = i + 1, len(m.group(1))
        elif start is not None and len(m.group(1)) <= level:
            return "".join(lines[start:i])
    assert start is not None, f"docs/interfaces.md has no section {title!r}"
    return "".join(lines[start:])


def blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the first Markdown table in ``text``, as cells (``\\|`` inside a cell kept as ``|``)."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("|"):
            if rows:
                break
            continue
        if set(line) <= set("|- "):
            continue
        rows.append([c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows[1:]  # without the header


def default_mcp_url() -> str:
    defaults = Settings()
    return f"http://{defaults.host}:{defaults.port}/mcp"


# ---------------------------------------------------------------------------------------------------- REST
@pytest.fixture(scope="module")
def own_database(database_url: str) -> Iterator[str]:
    """A database of its own on the session's server, so the error example's list of collections is exact."""
    name = "docs_" + uuid.uuid4().hex[:8]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(database_url)
    params["dbname"] = name
    yield make_conninfo(**params)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, own_database: str) -> Iterator[TestClient]:
    data_dir = tmp_path_factory.mktemp("docs-data")  # its own uploads folder too
    ctx = Context(load_settings(data_dir=data_dir, database_url=own_database, embedder="hash", api_token=TOKEN))
    try:
        with TestClient(create_app(ctx), base_url="http://127.0.0.1:8765") as c:
            yield c
    finally:
        ctx.close()


def test_endpoint_table_lists_exactly_the_routes(client: TestClient) -> None:
    documented: set[tuple[str, str]] = set()
    for row in table_rows(section("Endpoints")):
        m = re.match(r"`(GET|POST|PUT|PATCH|DELETE) (/[^`?\s]*)", row[0])
        if m is None:
            assert row[0] == "`/mcp`", row
            continue
        documented.add((m.group(1), re.sub(r"\{[^}]*\}", "{}", m.group(2))))
    served = {
        (method.upper(), re.sub(r"\{[^}]*\}", "{}", path))
        for path, methods in client.app.openapi()["paths"].items()  # type: ignore[attr-defined]
        for method in methods
    }
    assert documented == served, f"only in the docs: {documented - served}; only in the app: {served - documented}"


def _curl_commands() -> list[list[str]]:
    text = "\n".join(blocks(section("Examples"), "sh")).replace("\\\n", " ")
    return [shlex.split(line) for line in text.splitlines() if line.strip().startswith("curl ")]


def _run_curl(client: TestClient, argv: list[str], files_dir: Path) -> Any:
    """One curl command line (the options the examples use) as a TestClient request."""
    method, url, headers, data, form, files = "GET", "", {}, None, {}, []
    it = iter(argv[1:])
    for arg in it:
        if arg == "-s":
            continue
        if arg == "-X":
            method = next(it)
        elif arg == "-H":
            key, _, value = next(it).partition(":")
            headers[key.strip()] = value.strip().replace("$KAYNAK_API_TOKEN", TOKEN)
        elif arg == "-d":
            data, method = next(it), "POST" if method == "GET" else method
        elif arg == "-F":
            key, _, value = next(it).partition("=")
            if value.startswith("@"):
                path = files_dir / value[1:]
                files.append((key, (value[1:], path.read_bytes(), "application/octet-stream")))
            else:
                form[key] = value
            method = "POST" if method == "GET" else method
        else:
            url = arg
    assert url.startswith("http://127.0.0.1:8765/"), url
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    return client.request(method, target, headers=headers, content=data, data=form or None, files=files or None)


def test_curl_examples_run(client: TestClient, tmp_path: Path) -> None:
    # the documents the upload example names: a PDF and a DOCX in a folder
    (tmp_path / "notlar").mkdir()
    shutil.copy(REPO / "samples" / "kat-mulkiyeti-excerpt.pdf", tmp_path / "kanun.pdf")
    docx = sorted((REPO / "tests" / "fixtures" / "docs").rglob("*.docx"))
    assert docx, "tests/fixtures/docs holds no .docx file"
    shutil.copy(docx[0], tmp_path / "notlar" / "yonetmelik.docx")
    token_line = next(line for line in blocks(section("Examples"), "sh")[0].splitlines() if "export" in line)
    snippet = re.search(r"python3 -c '([^']*)'", token_line)
    assert snippet, token_line
    made = subprocess.run([sys.executable, "-c", snippet.group(1)], capture_output=True, text=True, check=True)
    assert len(made.stdout.strip()) >= 32

    commands = _curl_commands()
    assert len(commands) == 4
    # the upload comes first here: the searches then find what it stored
    order = sorted(commands, key=lambda argv: "-F" not in argv)
    for argv in order:
        r = _run_curl(client, argv, tmp_path)
        assert r.status_code < 300, (argv, r.status_code, r.text)
        if "/v1/search" in argv[-1] or any("/v1/search" in a for a in argv):
            assert "hits" in r.json()
    listed = client.get("/v1/collections/hukuk/documents").json()
    assert [d["source"] for d in listed["documents"]] == ["notlar/yonetmelik.docx"]  # kanun.pdf was deleted


def test_error_example_is_what_the_server_answers(client: TestClient) -> None:
    example = json.loads(blocks(section("Errors"), "json")[0])
    for name in ("hukuk", "notlar"):
        r = client.post(
            "/v1/collections",
            json={"name": name, "language": "turkish", "embedder": "hash"},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert r.status_code in (201, 409), r.text
    # the request id is always the server's (issue 53): the answer equals the example but for it
    r = client.get("/v1/search", params={"q": "aidat", "collections": "hukk"})
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.headers["x-request-id"] == r.json()["request_id"]
    assert {**r.json(), "request_id": example["request_id"]} == example


def test_upload_extensions_are_the_ones_read() -> None:
    from kaynak.api.uploads import supported_extensions

    line = next(item for item in section("Uploads").split("\n- ") if item.startswith("Each file needs"))
    listed = {ext for group in re.findall(r"`([^`]*)`", line) for ext in group.split() if ext.startswith(".")}
    assert listed == set(supported_extensions())


# ---------------------------------------------------------------------------------------------------- MCP
def _outside_parentheses(text: str) -> str:
    while True:
        shorter = re.sub(r"\([^()]*\)", "", text)
        if shorter == text:
            return text
        text = shorter


def test_tool_table_lists_exactly_the_tools_and_their_arguments() -> None:
    tools = asyncio.run(build_mcp(lambda: None).list_tools())  # type: ignore[arg-type, return-value]
    served = {t.name: t.input_schema["properties"] for t in tools}
    documented = {}
    for row in table_rows(section("Tools")):
        documented[row[0].strip("`")] = row[1]
    assert set(documented) == set(served)
    for name, cell in documented.items():
        assert set(re.findall(r"`([a-z_]+)`", _outside_parentheses(cell))) == set(served[name]), (name, cell)
        for arg, low, high in re.findall(r"`([a-z_]+)` \((\d+)–(\d+)", cell):  # documented ranges
            schema = served[name][arg]
            assert (schema.get("minimum"), schema.get("maximum")) == (int(low), int(high)), (name, arg, schema)


def test_client_configurations_start_kaynak_mcp_or_name_its_endpoint() -> None:
    configs = [json.loads(b) for b in blocks(section("MCP"), "json")]
    assert len(configs) == 4
    commands = _cli_commands()
    for config in configs:
        server = config["mcpServers"]["kaynak"]
        if "url" in server:
            assert server["url"] == default_mcp_url()
        elif server["command"] == "npx":  # mcp-remote's URL: the endpoint (a team server's address, issue 52)
            url = next(a for a in server["args"] if a.startswith("http"))
            assert url.endswith(default_mcp_url().split("//", 1)[1].split(":", 1)[1]), url
        else:
            assert Path(server["command"]).name == "kaynak" and server["args"] == ["mcp"] and "mcp" in commands
    claude = blocks(section("Claude Code (`claude mcp add`)"), "sh")[0]
    assert claude.count("/bin/kaynak mcp") == 2 and default_mcp_url() in claude


# ---------------------------------------------------------------------------------------------------- CLI
def _cli_commands() -> dict[str, Any]:
    """Top-level command (and group) names of the CLI → their Click command."""
    import typer.main

    group = typer.main.get_command(cli_app)
    return dict(group.commands)  # type: ignore[attr-defined]


def _help(*words: str) -> str:
    result = CliRunner().invoke(cli_app, [*words, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, (words, result.output)
    return result.output


def test_cli_table_matches_the_commands() -> None:
    commands = _cli_commands()
    documented = set()
    for row in table_rows(section("CLI reference")):
        names = {usage.split()[1] for usage in re.findall(r"`(kaynak [^`]*)`", row[0])}
        documented |= names
        helps = []
        for name in names:
            assert name in commands, row[0]
            helps.append(_help(name))
            for sub in getattr(commands[name], "commands", {}):  # a group: the options of its commands count
                if re.search(rf"\b{sub}\b", row[0]):
                    helps.append(_help(name, sub))
        shown = "\n".join(helps)
        for option in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", " ".join(row)):
            assert option in shown, (row[0], option)
    visible = {name for name, command in commands.items() if not getattr(command, "hidden", False)}
    assert documented == visible, documented ^ visible


def test_completion_commands_exist() -> None:
    text = _help()
    for line in blocks(section("Shell completion"), "sh")[0].splitlines():
        option = line.split()[1]
        assert option in text, option
