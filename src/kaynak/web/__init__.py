"""The web page of ``kaynak serve``: search, open sources at the place, browse, add and delete documents.

``router(context)`` returns the FastAPI router that the API's app factory includes: the page at ``/``, its
hand-written JavaScript and CSS under ``/static/``, and the few read endpoints the page needs beyond ``/v1``
(see ``kaynak.web.routes``). No Node build, no template engine, no external requests: docs/adr/0013-web-page.md.
"""

from __future__ import annotations

from kaynak.web.routes import router

__all__ = ["router"]
