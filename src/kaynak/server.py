"""The HTTP composition root: ``create_app`` assembles REST (``kaynak.api``), MCP and the web page into one app.

``create_app`` wires the REST routers (``/v1``), the MCP Streamable HTTP endpoint (``/mcp``), the web page at ``/``
(``kaynak.web``), the middleware and the error handlers; ``serve`` runs it with uvicorn (``kaynak serve``). The
faces it assembles never import each other: ``api`` knows nothing of the page, ``web`` nothing of the REST routes.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import Depends, FastAPI, Request

from kaynak import __version__
from kaynak.api.deps import ReadAuth, no_nul_params
from kaynak.api.docs import router as docs_router
from kaynak.api.limits import Guard, header_deadline_protocol, mcp_transport_security
from kaynak.api.observe import router as metrics_router
from kaynak.api.problems import install_handlers, responses
from kaynak.api.routes import ROUTERS
from kaynak.api.team import Team, TeamGate, configure_request_log, team_of
from kaynak.context import Context
from kaynak.mcp_server import build_mcp
from kaynak.web import router as web_router


def page_access(request: Request) -> tuple[bool, bool]:
    """For the web page: whether reads need a token on this server, and whether writes are enabled at all."""
    team = team_of(request.scope)
    return not team.reads_open(), team.writes_enabled()


def create_app(context: Context | None = None) -> FastAPI:
    """The ASGI app: REST under ``/v1``, MCP Streamable HTTP at ``/mcp``, OpenAPI at ``/docs``.

    ``context`` defaults to a new ``Context`` from the environment; the database and models load on first use.
    """
    ctx = context or Context()
    settings = ctx.settings
    mcp = build_mcp(lambda: ctx.search)
    mcp_starlette = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        host=settings.host,
        transport_security=mcp_transport_security(settings),
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield
        if context is None:
            ctx.close()

    app = FastAPI(
        title="kaynak",
        version=__version__,
        description=(
            "Search your own documents and quote the passage that answers, with file, page and section.\n\n"
            "Reads are open (or need `Authorization: Bearer <token>` when a read token is set or tokens were "
            "created with `kaynak tokens create`); writes need `Authorization: Bearer <KAYNAK_API_TOKEN>` or a "
            "token with write scope. A collection outside a token's scope answers like a missing one (404). "
            "Errors are RFC 9457 problem+json with a `request_id`. "
            "The MCP Streamable HTTP endpoint is at `/mcp`."
        ),
        lifespan=lifespan,
        docs_url=None,  # /docs is kaynak.api.docs' (Swagger UI from this machine, under a CSP); no /redoc
        redoc_url=None,
        responses=responses(400, 401, 403, 404, 408, 413, 421, 422, 429, 503),  # every route may answer these
        dependencies=[Depends(no_nul_params)],
    )
    app.state.context = ctx
    app.state.team = team = Team(ctx)  # who calls, with which scope and budget (kaynak.api.team)

    # The MCP endpoint: the SDK's own route (with its DNS-rebinding protection on loopback), behind the read token.
    for route in mcp_starlette.routes:
        inner = getattr(route, "app", None)
        if getattr(route, "path", None) == "/mcp" and inner is not None:
            route.app = ReadAuth(inner, ctx)  # type: ignore[attr-defined]
        app.router.routes.append(route)

    for router in ROUTERS:
        app.include_router(router)
    web = web_router(ctx, page_access)  # the page at / and its static files
    app.include_router(web)
    app.include_router(metrics_router())
    app.include_router(docs_router())

    install_handlers(app)
    # Outermost: Host / Origin, auth and body limits before anything reads the request (kaynak.api.limits).
    routes = [r for router in [*ROUTERS, web] for r in router.routes]
    app.add_middleware(Guard, settings=settings, routes=routes)
    # Outside even that: the request id, the caller's Access and budgets, metrics and the JSON request log.
    mcp_routes = [r for r in app.router.routes if getattr(r, "path", None) == "/mcp"]
    app.add_middleware(TeamGate, team=team, routes=[*routes, *mcp_routes])
    return app


def serve(context: Context, host: str | None = None, port: int | None = None, log_level: str = "info") -> None:
    """Run the app with uvicorn (``kaynak serve``)."""
    import uvicorn

    app = create_app(context)
    configure_request_log(context.settings.log_file)  # one JSON line per request (uvicorn's own access log is off)
    uvicorn.run(
        app,
        host=host or context.settings.host,
        port=port or context.settings.port,
        log_level=log_level,
        access_log=False,
        proxy_headers=False,
        server_header=False,
        http=header_deadline_protocol(context.settings.read_timeout_s),  # slow headers: connection closed
        timeout_keep_alive=5,  # idle keep-alive connections close after 5 s
        timeout_graceful_shutdown=10,  # SIGTERM: at most 10 s for requests in flight, then stop
        h11_max_incomplete_event_size=64 * 1024,  # request line + headers
    )
