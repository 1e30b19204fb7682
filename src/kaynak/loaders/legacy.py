"""Legacy binary Office files (``.doc``, ``.xls``, ``.ppt``) through LibreOffice, an optional system tool.

``soffice --headless --convert-to odt|ods|odp`` turns the file into OpenDocument in a temporary folder, and the
OpenDocument loader reads the result (pages, sheets, slides and sections as for ``.odt`` / ``.ods`` / ``.odp``).
LibreOffice runs as a child of the parse worker, so the worker's memory limit (RLIMIT_AS is inherited) and a time
limit of its own (``CONVERT_TIMEOUT_S``; the whole process group is killed past it) hold; its user profile is a
private folder per worker process, never the person's own, so parallel workers do not share one and nothing of the
person's LibreOffice settings is touched.

Without LibreOffice the file fails with the command that installs it (``kaynak doctor`` says whether it is
there); the ingest's failure memory is keyed on ``office_fingerprint()``, so such a file is read once it is
installed. A file LibreOffice cannot open fails with its reason, without LibreOffice's own noise (the ``javaldx``
warning); one that is password-protected (the compound file's encryption flags and streams, read with olefile) is
EncryptedFile, and a rights-managed (IRM) document is refused before LibreOffice reads its stub page.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from kaynak.errors import CorruptFile, EncryptedFile, LoaderError
from kaynak.types import LoadedDocument

INSTALL_HINT = (
    "install LibreOffice: sudo apt-get install libreoffice-writer-nogui libreoffice-calc-nogui "
    "libreoffice-impress-nogui (Debian/Ubuntu), sudo dnf install libreoffice-writer libreoffice-calc "
    "libreoffice-impress (Fedora), brew install --cask libreoffice (macOS)"
)
TARGETS = {".doc": "odt", ".xls": "ods", ".ppt": "odp"}
CONVERT_TIMEOUT_S = 300
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_PROFILE: dict[int, str] = {}


@lru_cache(maxsize=1)
def soffice_path() -> str | None:
    """LibreOffice's ``soffice`` (``KAYNAK_SOFFICE`` overrides the search of PATH), or None."""
    override = os.environ.get("KAYNAK_SOFFICE")
    if override:
        return override if os.access(override, os.X_OK) else None
    for name in ("soffice", "libreoffice"):
        found = shutil.which(name)
        if found:
            return found
    for candidate in ("/usr/lib/libreoffice/program/soffice", "/Applications/LibreOffice.app/Contents/MacOS/soffice"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


@lru_cache(maxsize=1)
def soffice_version() -> str | None:
    exe = soffice_path()
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return " ".join(out.split()[:2]) or "LibreOffice"


def office_status() -> dict[str, Any]:
    """For ``kaynak doctor``: whether .doc/.xls/.ppt can be read, and what to install if not."""
    exe = soffice_path()
    if exe is None:
        return {
            "available": False,
            "engine": None,
            "problem": f"LibreOffice not found (.doc, .xls, .ppt): {INSTALL_HINT}",
        }
    return {"available": True, "engine": soffice_version() or "LibreOffice", "path": exe}


def office_fingerprint() -> str:
    """What reads legacy Office files here, in one line (part of the key of remembered ingest failures)."""
    return soffice_version() or ("LibreOffice" if soffice_path() else "no LibreOffice")


def _profile() -> str:
    """This process's private LibreOffice profile folder (made once, removed at exit)."""
    pid = os.getpid()
    if pid not in _PROFILE:
        folder = tempfile.mkdtemp(prefix=f"kaynak-soffice-{pid}-")
        _PROFILE[pid] = folder
        atexit.register(shutil.rmtree, folder, True)
    return _PROFILE[pid]


def convert(path: Path, data: bytes, target: str, timeout: float = CONVERT_TIMEOUT_S) -> bytes:
    """``data`` converted by LibreOffice to ``target`` (``odt``, ``ods``, ``odp``); LoaderError naming why not."""
    exe = soffice_path()
    if exe is None:
        raise LoaderError(path, f"{path.suffix.lower()} files are read through LibreOffice, which is not installed; "
                          f"{INSTALL_HINT}; then ingest again")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="kaynak-convert-") as work:
        source = Path(work) / ("input" + path.suffix.lower())
        source.write_bytes(data)
        out_dir = Path(work) / "out"
        out_dir.mkdir()
        cmd = [
            exe, f"-env:UserInstallation=file://{_profile()}", "--headless", "--invisible", "--norestore",
            "--nologo", "--nodefault", "--nolockcheck", "--convert-to", target, "--outdir", str(out_dir), str(source),
        ]  # fmt: skip
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise LoaderError(
                path, f"LibreOffice took longer than {timeout:g} s to convert the file; stopped"
            ) from None
        result = out_dir / f"input.{target}"
        if not result.is_file():
            detail = _clean_stderr(err.decode("utf-8", "replace"))[-200:]
            if data.startswith(_OLE) and b"E\x00n\x00c\x00r\x00y\x00p\x00t\x00" in data[:65536]:
                raise EncryptedFile(path, f"{path.name} is password-protected; save it without a password first")
            raise CorruptFile(
                path,
                f"LibreOffice could not convert {path.name} (damaged, or not really a {path.suffix.lower()} file)"
                + (f": {detail}" if detail else ""),
            )
        return result.read_bytes()


_NOISE = re.compile(
    r"javaldx|java may not function|^\s*warning:|gtk-|dbus|fontconfig|^\(process:|^\s*$|"
    r"^convert .* using filter|^i/o error|^error: please verify input parameters",
    re.IGNORECASE,
)


def _clean_stderr(text: str) -> str:
    """LibreOffice's complaint without third-party noise (the ``javaldx`` warning, toolkit chatter)."""
    lines = [line.strip() for line in text.splitlines() if not _NOISE.search(line.strip())]
    reason = " ".join(" ".join(lines).split())
    return re.sub(r"^Error:\s*", "", reason).rstrip(".")


def _filepass(stream: bytes) -> bool:
    """Whether an Excel BIFF workbook stream has a FILEPASS record (it follows the BOF within the first records)."""
    pos = 0
    for _ in range(64):
        if pos + 4 > len(stream):
            return False
        kind = int.from_bytes(stream[pos : pos + 2], "little")
        if kind == 0x002F:
            return True
        if kind == 0x000A:  # the end of the workbook globals
            return False
        pos += 4 + int.from_bytes(stream[pos + 2 : pos + 4], "little")
    return False


def _protection(data: bytes) -> str | None:
    """Why a legacy Office file cannot be read without its password, from its compound-file streams, or None:
    an encrypted Word document (``fEncrypted`` in the FIB), an Excel workbook with a ``FILEPASS`` record, a
    PowerPoint deck with an ``EncryptedSummary`` stream or an encrypted current-user token, a password-protected
    .docx/.xlsx/.pptx saved under the old name, a rights-managed (IRM/DRM) document."""
    if not data.startswith(_OLE):
        return None
    import olefile

    try:
        ole = olefile.OleFileIO(data)
    except Exception:  # not a readable compound file: LibreOffice says what it makes of it
        return None
    try:
        names = {"/".join(entry).lower() for entry in ole.listdir(streams=True, storages=True)}
        if "encryptioninfo" in names and "encryptedpackage" in names:
            return "password"
        if any(n.startswith("\x06dataspaces") for n in names) and "\tdrmcontent" in names:
            return "rights"
        if "worddocument" in names:
            fib = ole.openstream("WordDocument").read(12)
            if len(fib) >= 12 and int.from_bytes(fib[10:12], "little") & 0x0100:
                return "password"
        if any(book in names and _filepass(ole.openstream(book).read(1 << 16)) for book in ("workbook", "book")):
            return "password"
        if "encryptedsummary" in names:
            return "password"
        if "current user" in names:
            token = ole.openstream("Current User").read(12)[4:8]
            if token == b"\xdf\xc4\xd1\xf3":
                return "password"
    except Exception:  # a damaged stream: leave the verdict to LibreOffice
        return None
    finally:
        ole.close()
    return None


def load_legacy(path: Path, data: bytes) -> LoadedDocument:
    from .opendocument import load_opendocument

    ext = path.suffix.lower()
    target = TARGETS.get(ext, "odt")
    if data.lstrip()[:5] == b"{\\rtf":  # Word wrote many ".doc" files that are RTF inside
        from .rtf import load_rtf

        return load_rtf(path, data)
    if data.startswith(b"PK"):
        raise CorruptFile(
            path, f"not a legacy {ext} file: it is a zip (a newer Office file? rename it to .{ext.lstrip('.')}x)"
        )
    protection = _protection(data)
    if protection == "rights":  # LibreOffice would read the stub page that asks for Office 2003 or later
        raise EncryptedFile(
            path, f"{path.name} is protected by rights management (IRM); save an unprotected copy first"
        )
    try:
        converted = convert(path, data, target)
    except CorruptFile:
        # LibreOffice opens a file locked with Excel's built-in default password, so this is asked only after
        if protection == "password":
            raise EncryptedFile(path, f"{path.name} is password-protected; save it without a password first") from None
        raise
    doc = load_opendocument(path.with_suffix("." + target), converted)
    doc.metadata = {**doc.metadata, "format": ext.lstrip("."), "converted_by": office_fingerprint()}
    return doc
