"""Parse workers: a crash, running out of memory or time in one file is that file's error; the pool goes on.

Faults are injected through ``ParseTask.call`` (testkit/hostile/faults.py runs inside the worker process).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kaynak.ingest.workers import Parsed, ParseFailure, ParsePool, ParseTask
from kaynak.loaders import LoadOptions

TEXT = "İstanbul, Türkiye'nin en kalabalık şehridir. Boğaz, şehri Avrupa ve Asya yakası olarak ikiye ayırır.\n"


def task(path: Path, call: str | None = None) -> ParseTask:
    return ParseTask(str(path), 10 * 1024 * 1024, LoadOptions(), 800, 1, call)


@pytest.fixture
def note(tmp_path: Path) -> Path:
    path = tmp_path / "not.md"
    path.write_text("# Not\n\n" + TEXT, encoding="utf-8")
    return path


@pytest.fixture
def pool() -> ParsePool:
    p = ParsePool(workers=2, memory_mb=512, timeout_s=3)
    yield p
    p.close()


def test_a_file_is_parsed_in_a_worker(pool: ParsePool, note: Path) -> None:
    result = pool.parse(task(note))
    assert isinstance(result, Parsed)
    assert result.title == "Not" and "Boğaz" in result.pages[0].text and result.chunks
    assert len(result.sha256) == 64 and result.warnings == []


def test_segfault_is_that_files_error_and_the_worker_is_replaced(pool: ParsePool, note: Path) -> None:
    result = pool.parse(task(note, "testkit.hostile.faults:segfault"))
    assert isinstance(result, ParseFailure)
    assert "crashed" in result.reason and "SIGSEGV" in result.reason and "KAYNAK_PARSE_MEMORY_MB" in result.reason
    assert not result.transient  # the same bytes crash again: remembered, not parsed on the next run
    assert isinstance(pool.parse(task(note)), Parsed)


def test_running_out_of_memory_names_the_setting(pool: ParsePool, note: Path) -> None:
    result = pool.parse(task(note, "testkit.hostile.faults:hog"))
    assert isinstance(result, ParseFailure)
    assert result.reason.startswith("needs more than 512 MB to parse") and "KAYNAK_PARSE_MEMORY_MB" in result.reason
    assert isinstance(pool.parse(task(note)), Parsed)


def test_a_hanging_parser_is_stopped_at_the_time_limit(pool: ParsePool, note: Path) -> None:
    t0 = time.monotonic()
    result = pool.parse(task(note, "testkit.hostile.faults:hang"))
    assert time.monotonic() - t0 < 10
    assert isinstance(result, ParseFailure)
    assert "longer than 3 s" in result.reason and "KAYNAK_PARSE_TIMEOUT_S" in result.reason
    assert result.transient  # a busy machine may have been the cause: tried again on the next run
    assert isinstance(pool.parse(task(note)), Parsed)


def test_a_worker_that_exits_is_replaced(pool: ParsePool, note: Path) -> None:
    result = pool.parse(task(note, "testkit.hostile.faults:exit_now"))
    assert isinstance(result, ParseFailure) and "exit code 7" in result.reason
    assert isinstance(pool.parse(task(note)), Parsed)


def test_library_chatter_becomes_the_files_warnings(pool: ParsePool, note: Path, capfd: pytest.CaptureFixture) -> None:
    result = pool.parse(task(note, "testkit.hostile.faults:chatter"))
    assert isinstance(result, Parsed)
    joined = " | ".join(result.warnings)
    for piece in (
        "loose print on stdout",
        "loose print on stderr",
        "C library writes to fd 2",
        "EOF marker not found",
        "a library warning",
    ):
        assert piece in joined
    out, err = capfd.readouterr()
    assert "EOF marker" not in out + err and "loose print" not in out + err


def test_many_threads_share_one_pool(pool: ParsePool, note: Path) -> None:
    results: list[object] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        call = "testkit.hostile.faults:segfault" if i % 5 == 0 else None
        r = pool.parse(task(note, call))
        with lock:
            results.append((call, r))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 20
    for call, r in results:
        assert isinstance(r, ParseFailure if call else Parsed)


def test_close_cancels_queued_work_and_stops_the_processes(note: Path) -> None:
    pool = ParsePool(workers=1, memory_mb=512, timeout_s=30)
    first = pool.submit(task(note, "testkit.hostile.faults:hang"))
    queued = pool.submit(task(note))
    time.sleep(0.5)
    pool.close()
    assert queued.cancelled()
    assert isinstance(first.result(timeout=15), ParseFailure)
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(task(note))
