"""Faults a parse worker must survive, run inside a worker through ``ParseTask.call`` (tests only)."""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import time
import warnings

from kaynak.ingest.workers import ParseFailure, ParseTask, parse_file


def segfault(task: ParseTask) -> ParseFailure:
    ctypes.string_at(0)  # reads address 0: SIGSEGV
    return ParseFailure("unreachable")


def hog(task: ParseTask) -> ParseFailure:
    blocks = []
    while True:  # until RLIMIT_AS says no (MemoryError)
        blocks.append(bytearray(64 * 1024 * 1024))


def hang(task: ParseTask) -> ParseFailure:
    time.sleep(3600)
    return ParseFailure("unreachable")


def exit_now(task: ParseTask) -> ParseFailure:
    os._exit(7)


def chatter(task: ParseTask) -> object:
    """Talk on every channel a library might, then parse the file normally."""
    print("loose print on stdout")
    print("loose print on stderr", file=sys.stderr)
    os.write(2, b"C library writes to fd 2\n")
    logging.getLogger("pypdf._reader").warning("EOF marker not found")
    warnings.warn("a library warning", UserWarning, stacklevel=1)
    return parse_file(task)
