"""A document's original file as ingested: opened only after checks (``files``), a PDF page drawn (``pdfpage``).

Below the faces: the REST routes that serve originals and page images (``kaynak.api.routes.originals``) use it, and
so may any other face; nothing here knows about HTTP routing or the web page.
"""
