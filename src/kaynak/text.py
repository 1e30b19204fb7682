"""Text helpers shared by every stage: Turkish-aware lowering.

``tr_lower`` is the Python twin of the SQL function ``tr_lower`` (store/migrations): İ→i, I→ı, then lower().
Both must give identical results; tests compare them.
"""

from __future__ import annotations

_TR_UPPER = str.maketrans({"İ": "i", "I": "ı"})


def tr_lower(text: str) -> str:
    """Lower-case the Turkish way: 'İSTANBUL' → 'istanbul', 'IĞDIR' → 'ığdır'.

    Like PostgreSQL's lower() in a UTF-8 database, characters map one to one (no 'ß' → 'ss' expansion), so
    offsets in the lowered text equal offsets in the original.
    """
    out = []
    for ch in text.translate(_TR_UPPER):
        low = ch.lower()
        out.append(low if len(low) == 1 else ch)
    return "".join(out)
