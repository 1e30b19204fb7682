"""Run ``kaynak`` under a hard address-space cap and report its peak RSS (used by the hostile-corpus test).

    python tests/hostile/run_capped.py CAP_MB STATS_JSON kaynak-arguments...

The cap (RLIMIT_AS) holds this process and everything it starts (the parse workers lower theirs further). After
the command, STATS_JSON gets ``{"exit": code, "peak_rss_mb": …, "seconds": …}`` and the exit code is passed on.
"""

from __future__ import annotations

import json
import resource
import sys
import time


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
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with open(stats_path, "w") as f:
            json.dump(
                {"exit": code, "peak_rss_mb": round(peak_kb / 1024, 1), "seconds": round(time.perf_counter() - t0, 2)},
                f,
            )
    return code


if __name__ == "__main__":
    sys.exit(main())
