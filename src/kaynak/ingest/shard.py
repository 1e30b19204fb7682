"""Splitting one ingest over several machines: ``kaynak ingest --shard i/n`` takes only its share of the files.

A file belongs to shard ``int(sha1(source)[:8]) % n``: a stable hash of its source (the path relative to the
folder named), the same on every machine and in every run, so n workers running shards 0/n … n-1/n over the same
folder embed every file exactly once between them, about n times faster. Pruning is refused with a shard (it
would delete the other shards' documents).
"""

from __future__ import annotations

import hashlib
from typing import Any

from kaynak.errors import UsageError


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` → ``(2, 4)``; shards are numbered 0 … n-1."""
    try:
        index_text, count_text = text.split("/")
        index, count = int(index_text), int(count_text)
    except ValueError:
        raise UsageError(f"--shard must look like i/n (e.g. 0/4), not {text!r}", "shard") from None
    if count < 1 or not 0 <= index < count:
        raise UsageError(f"--shard {text}: need 0 <= i < n (shards are numbered 0 to n-1)", "shard")
    return index, count


def shard_of(source: str, count: int) -> int:
    """The shard (0 … count-1) a source belongs to."""
    return int.from_bytes(hashlib.sha1(source.encode("utf-8")).digest()[:8], "big") % count


def select_shard(found: Any, shard: tuple[int, int], prune: bool = False) -> None:
    """Keep, in a discovery result, only the files (and their per-file problems) of ``shard``."""
    if prune:
        raise UsageError("--prune cannot be combined with --shard (it would remove the other shards' files)", "shard")
    index, count = shard
    found.jobs = [j for j in found.jobs if shard_of(j.source, count) == index]
    for name in ("failed", "skipped"):
        rows = getattr(found, name, None)
        if rows is not None:
            setattr(found, name, [r for r in rows if shard_of(r["source"], count) == index])
