"""CLI commands that serve: ``kaynak serve`` (REST API + MCP over Streamable HTTP) and ``kaynak mcp`` (MCP on stdio)."""

from __future__ import annotations

from typing import Annotated

import typer

from kaynak.cli.common import app, err_console, errors_handled, make_context
from kaynak.context import Context

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Address to bind; default 127.0.0.1 (this machine only).")] = None,
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="TCP port; default 8765.")] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level: debug, info, warning, error.")] = "info",
    watch: Annotated[
        bool, typer.Option("--watch", help="Also keep every collection with remembered folders current (kaynak watch).")
    ] = False,
) -> None:
    """Serve the web page at /, the REST API at /v1 (OpenAPI at /docs) and MCP at /mcp (Streamable HTTP).

    Writes need KAYNAK_API_TOKEN (send Authorization: Bearer <token>); without it they answer 403.
    Reads are open; set KAYNAK_READ_TOKEN before binding to anything but 127.0.0.1.
    On 127.0.0.1 only requests naming this machine (Host, Origin) are answered; behind a reverse proxy that
    forwards its public name, add it: KAYNAK_ALLOWED_HOSTS=docs.example.org.

    Examples:

      kaynak serve

      KAYNAK_API_TOKEN=secret kaynak serve --port 9000

      claude mcp add --transport http kaynak http://127.0.0.1:8765/mcp
    """
    ctx = make_context(host=host, port=port)
    s = ctx.settings
    if s.host not in LOOPBACK and not s.read_token:
        err_console.print(
            f"[yellow]warning:[/] binding {s.host} without KAYNAK_READ_TOKEN: anyone who can reach this port can "
            "search your documents. Set KAYNAK_READ_TOKEN to require a token for reads.",
            highlight=False,
        )
    if not s.api_token:
        err_console.print(
            "write endpoints are off unless a token from `kaynak tokens create` has --write (or set KAYNAK_API_TOKEN "
            "to enable uploads and deletes)",
            highlight=False,
        )
    with errors_handled():  # an old schema whose upgrade is big: say what to run instead of migrating for minutes
        _check_schema(ctx)
    err_console.print(f"kaynak on http://{s.host}:{s.port}  page /  REST /v1  docs /docs  MCP /mcp", highlight=False)
    from kaynak.server import serve as run_server

    watcher = None
    if watch:  # the same watcher as `kaynak watch`, in a thread of this process (kaynak.ingest.watch)
        from kaynak.ingest.watch import start_watcher

        watcher = start_watcher(ctx.ingest)
    try:
        with errors_handled():
            run_server(ctx, log_level=log_level)
    finally:
        if watcher is not None:
            watcher[1].set()
            watcher[0].join(timeout=30)


def _check_schema(ctx: Context) -> None:
    """MigrationRequired / SchemaTooNew when the store would refuse this database; nothing when it is reachable
    and fine, or not reachable now (the server starts and answers 503 until the database is back)."""
    st = ctx.migration_status()
    if st["ok"] and (st["version"] > st["latest"] or (st["pending"] and st["version"] > 0)):
        ctx.store  # noqa: B018  (opening the store applies a small upgrade, refuses a big one with what to run)


@app.command()
def mcp() -> None:
    """Serve MCP over stdio, for Claude Desktop and other clients that start the server themselves.

    Stdout carries only the protocol; logs go to stderr (and KAYNAK_LOG_FILE). The tools are read-only:
    search, list_collections, list_documents, read_context, read_page.

    Example claude_desktop_config.json entry:

      {"mcpServers": {"kaynak": {"command": "kaynak", "args": ["mcp"]}}}
    """
    from kaynak.mcp_server import run_stdio

    with errors_handled():
        run_stdio()
