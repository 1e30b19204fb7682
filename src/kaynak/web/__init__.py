"""The web page of ``kaynak serve``: search, open sources at the place, browse, add and delete documents.

``router(context, access_facts)`` returns the FastAPI router that the composition root (``kaynak.server``)
includes: the page at ``/`` and its hand-written JavaScript and CSS under ``/static/``. Everything the page reads
or writes goes through the REST API under ``/v1`` (``kaynak.api``); this package never imports it.
No Node build, no template engine, no external requests: docs/adr/0013-web-page.md.
"""

from __future__ import annotations

from kaynak.web.routes import router

__all__ = ["router"]
