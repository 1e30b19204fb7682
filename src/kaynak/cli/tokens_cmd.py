"""CLI commands for serving a team: ``kaynak tokens create|list|revoke`` and ``kaynak audit``.

The CLI acts as the local user, with full access: whoever can run it on this machine can reach the database
anyway. Tokens are made here and used against ``kaynak serve`` (REST, the web page, MCP over HTTP); the plaintext
is printed once and only its SHA-256 is stored (docs/adr/0024-team-access.md).
"""

from __future__ import annotations

import getpass
import socket
from typing import Annotated

import typer
from rich.table import Table

from kaynak.access import (
    ALL,
    check_token_name,
    new_secret,
    parse_expiry,
    parse_scope,
    parse_since,
    secret_hash,
)
from kaynak.cli.common import (
    app,
    cell,
    console,
    err_console,
    errors_handled,
    make_context,
    outside,
    print_json,
)
from kaynak.errors import UsageError

tokens_app = typer.Typer(
    help="Access tokens for `kaynak serve`, each limited to some collections (read, write, admin).",
    no_args_is_help=True,
)
app.add_typer(tokens_app, name="tokens")


def _local_client() -> str:
    """Who ran the command, for the audit trail: ``cli:<user>@<host>``."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "?"
    return f"cli:{user}@{socket.gethostname()}"


def _scope_text(names: tuple[str, ...] | list[str]) -> str:
    return ALL if ALL in names else ",".join(names) or "-"


@tokens_app.command("create")
def tokens_create(
    name: Annotated[str, typer.Argument(help="A name for the token (who or what uses it), e.g. ayse or ci-bot.")],
    read: Annotated[
        str | None, typer.Option("--read", help="Collections it may read, comma-separated, or '*'.")
    ] = None,
    write: Annotated[
        str | None, typer.Option("--write", help="Collections it may change (upload, delete documents); implies read.")
    ] = None,
    admin: Annotated[
        str | None,
        typer.Option("--admin", help="Collections it may delete; implies write. '*' also opens GET /metrics."),
    ] = None,
    expires: Annotated[
        str | None, typer.Option("--expires", help="Lifetime (90d, 12h, 2w) or a date (2027-01-31); default never.")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON (with the token) instead of text.")] = False,
) -> None:
    """Create a token and print it once: only its SHA-256 is stored, so it cannot be shown again.

    A collection outside a token's scope answers like a missing one. Rights are nested: admin ⊇ write ⊇ read.

    Examples:

      kaynak tokens create ayse --read hukuk,ik --write hukuk --expires 90d

      kaynak tokens create monitoring --admin '*'
    """
    with errors_handled():
        check_token_name(name)
        scopes = {r: parse_scope(v, r) for r, v in (("read", read), ("write", write), ("admin", admin))}
        if not any(scopes.values()):
            raise UsageError("give the token at least one right: --read, --write or --admin", "read")
        until = parse_expiry(expires)
        secret = new_secret()
        ctx = make_context()
        try:
            record = ctx.store.create_token(
                name, secret_hash(secret), scopes["read"], scopes["write"], scopes["admin"], until
            )
            detail = {r: sorted(s) for r, s in scopes.items()} | {"expires_at": until.isoformat() if until else None}
            ctx.store.record_audit("token_create", "local", _local_client(), None, [], None, detail | {"token": name})
        finally:
            ctx.close()
    if json_out:
        print_json({**record.to_dict(), "token": secret})
        return
    err_console.print(
        f"token {outside(name)} created; it is shown only now, so keep it somewhere safe:", highlight=False
    )
    typer.echo(secret)
    err_console.print(
        f"read {_scope_text(record.read)}  write {_scope_text(record.write)}  admin {_scope_text(record.admin)}  "
        f"expires {record.expires_at.isoformat(timespec='minutes') if record.expires_at else 'never'}\n"
        f"use it as: Authorization: Bearer <token>",
        highlight=False,
    )


@tokens_app.command("list")
def tokens_list(
    all_: Annotated[bool, typer.Option("--all", help="Also revoked tokens.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List tokens: name, scope per right, created, expires, last used, status (never the secret)."""
    with errors_handled():
        ctx = make_context()
        try:
            tokens = ctx.store.list_tokens(include_revoked=all_)
        finally:
            ctx.close()
    if json_out:
        print_json({"tokens": [t.to_dict() for t in tokens]})
        return
    table = Table("name", "read", "write", "admin", "created", "expires", "last used", "status")
    for t in tokens:
        d = t.to_dict()
        table.add_row(
            cell(t.name),
            cell(_scope_text(t.read)),
            cell(_scope_text(t.write)),
            cell(_scope_text(t.admin)),
            (d["created_at"] or "")[:16],
            (d["expires_at"] or "never")[:16],
            (d["last_used_at"] or "-")[:16],
            d["status"],
        )
    console.print(table)


@tokens_app.command("revoke")
def tokens_revoke(
    name: Annotated[str, typer.Argument(help="The token's name (kaynak tokens list).")],
) -> None:
    """Revoke a token: the server refuses it from its next request on. Its row stays for the audit trail."""
    with errors_handled():
        ctx = make_context()
        try:
            ctx.store.revoke_token(name)
            ctx.store.record_audit("token_revoke", "local", _local_client(), None, [], None, {"token": name})
        finally:
            ctx.close()
    err_console.print(f"token {outside(name)} revoked", highlight=False)


@app.command()
def audit(
    since: Annotated[str | None, typer.Option("--since", help="Only entries since: 7d, 12h, or a date.")] = None,
    collection: Annotated[str | None, typer.Option("--collection", "-c", help="Only this collection.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1_000_000, help="At most this many (newest).")] = 1000,
    searches: Annotated[
        bool, typer.Option("--searches", help="Searches per token and day instead (KAYNAK_AUDIT_SEARCHES=true).")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """The audit trail: every write over REST (upload, document delete, collection create/delete) and every token
    create/revoke, with time, token name, client address, collection and sources. Searches are not in it;
    with KAYNAK_AUDIT_SEARCHES=true the server counts them per token and day (--searches), never their text.

    Examples:

      kaynak audit --since 7d

      kaynak audit -c hukuk --json
    """
    with errors_handled():
        when = parse_since(since)
        ctx = make_context()
        try:
            counts = ctx.store.search_counts(when) if searches else []
            entries = [] if searches else ctx.store.audit_entries(when, collection, limit)
        finally:
            ctx.close()
    if searches:  # counts only: which token searched how often on which day, never what
        if json_out:
            print_json({"searches": counts})
            return
        counts_table = Table("day", "token", "searches")
        for row in counts:
            counts_table.add_row(row["day"], cell(row["token"]), str(row["searches"]))
        console.print(counts_table)
        return
    if json_out:
        print_json({"entries": [e.to_dict() for e in entries]})
        return
    table = Table("time", "action", "token", "client", "collection", "sources")
    for e in entries:
        sources = ", ".join(e.sources[:5]) + (f" … (+{len(e.sources) - 5})" if len(e.sources) > 5 else "")
        if not sources and e.detail.get("token"):
            sources = f"token {e.detail['token']}"
        table.add_row(  # stored text from outside (upload names, collection names): text, never markup
            e.at.isoformat(timespec="seconds"),
            cell(e.action),
            cell(e.token or "-"),
            cell(e.client or "-"),
            cell(e.collection or "-"),
            cell(sources),
        )
    console.print(table)
