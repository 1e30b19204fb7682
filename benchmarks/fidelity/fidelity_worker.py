"""Runs inside a kaynak parse worker (``ParseTask.call``): parse one file the way ingest does, and append the
worker's peak resident memory for that file and its CPU time as one marker warning (``__fidelity__ …``) that
run.py takes off again. The peak is reset before each file (``/proc/self/clear_refs``), so it is this file's."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from typing import Any

MARK = "__fidelity__"


def _hwm_kb() -> int:
    with contextlib.suppress(OSError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def measured(task: Any) -> Any:
    from kaynak.ingest.workers import parse_file

    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak RSS (VmHWM) to the current RSS
    cpu0 = time.process_time()
    result = parse_file(dataclasses.replace(task, call=None))
    cpu = time.process_time() - cpu0
    result.warnings.append(f"{MARK} rss_kb={_hwm_kb()} cpu_s={cpu:.4f}")
    return result
