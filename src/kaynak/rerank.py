"""Moved to ``kaynak.embeddings.rerank`` (issue 15: nothing in embeddings imports upward); this alias keeps
``import kaynak.rerank`` working for code written before the move."""

import sys

from kaynak.embeddings import rerank as _rerank

sys.modules[__name__] = _rerank
