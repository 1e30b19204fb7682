"""Comparing results that hold floats computed by PostgreSQL: equal up to summation order, ties in any order.

PostgreSQL may add a BM25 score's terms in another order from one plan to the next (another statement, a parallel
aggregate), so the same score can differ in its last bits (3.6237661299747383 against …375). Tests that compare
two searches therefore compare floats with a relative tolerance, and accept hits whose scores tie (within that
tolerance) in either order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

#: Relative tolerance: far above summation-order noise (~1e-16), far below any real difference of scores.
REL = 1e-9
ABS = 1e-12


def close(a: Any, b: Any, rel: float = REL) -> bool:
    """True when ``a`` and ``b`` are equal, floats anywhere inside them (dicts, lists, tuples) up to ``rel``."""
    if isinstance(a, float) or isinstance(b, float):
        if (
            not isinstance(a, int | float)
            or not isinstance(b, int | float)
            or isinstance(a, bool)
            or isinstance(b, bool)
        ):
            return False
        return math.isclose(a, b, rel_tol=rel, abs_tol=ABS)
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(close(a[k], b[k], rel) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(close(x, y, rel) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def assert_close(a: Any, b: Any, msg: object = None) -> None:
    assert close(a, b), msg if msg is not None else f"{a!r}\n!=\n{b!r}"


def _blocks(items: Sequence[Mapping[str, Any]], score: str) -> list[tuple[int, int]]:
    """Runs of consecutive items whose scores tie (within the tolerance)."""
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(items) + 1):
        if i == len(items) or not close(items[i][score], items[start][score]):
            out.append((start, i))
            start = i
    return out


def _unranked(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item without its rank numbers: tied items may swap ranks between two plans."""
    out = dict(item)
    if isinstance(out.get("scores"), Mapping):
        out["scores"] = {k: v for k, v in out["scores"].items() if not k.endswith("rank")}
    return out


def assert_same_ranking(
    new: Sequence[Mapping[str, Any]], old: Sequence[Mapping[str, Any]], key: str = "chunk_id", score: str = "score"
) -> None:
    """The same items with close values in the same order, except that items with tied scores may come in any order.

    Items are dicts (e.g. ``Hit.to_dict()``). Inside a block of ties the items are matched by ``key`` and compared
    without their rank numbers; outside ties everything is compared, ranks included.
    """
    assert len(new) == len(old), ([x[key] for x in new], [x[key] for x in old])
    for start, end in _blocks(old, score):
        if end - start == 1:
            assert_close(new[start], old[start])
            continue
        mine = {x[key]: x for x in new[start:end]}
        theirs = {x[key]: x for x in old[start:end]}
        assert mine.keys() == theirs.keys(), (start, end, list(mine), list(theirs))
        for k, x in theirs.items():
            assert_close(_unranked(mine[k]), _unranked(x))
