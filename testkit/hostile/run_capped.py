"""Run ``kaynak`` under a hard address-space cap and report its peak RSS (used by the hostile-corpus test).

    python testkit/hostile/run_capped.py CAP_MB STATS_JSON kaynak-arguments...

The cap (RLIMIT_AS) holds this process and everything it starts (the parse workers lower theirs further). After
the command, STATS_JSON gets ``{"exit": code, "peak_rss_mb": …, "seconds": …}`` and the exit code is passed on.
"""

from __future__ import annotations

import json
import resource
import sys
import time


def peak_rss_kb() -> int:
    """This process's peak resident set since it started the command's program: ``VmHWM`` (the high-water mark of
    its own address space). ``ru_maxrss`` is not used where ``VmHWM`` exists: Linux carries it over from the
    process this one was forked from, so a script started by a big pytest process would report pytest's size."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> int:
    cap = int(sys.argv[1]) * 1024 * 1024
    stats_path = sys.argv[2]
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    t0 = time.perf_counter()
    code: int = 0
    try:
        from kaynak.cli import app

        result = app(sys.argv[3:], standalone_mode=False)
        code = result if isinstance(result, int) else 0
    except SystemExit as err:
        code = err.code if isinstance(err.code, int) else 1
    finally:
        peak_kb = peak_rss_kb()
        with open(stats_path, "w") as f:
            json.dump(
                {"exit": code, "peak_rss_mb": round(peak_kb / 1024, 1), "seconds": round(time.perf_counter() - t0, 2)},
                f,
            )
    return code


if __name__ == "__main__":
    sys.exit(main())
