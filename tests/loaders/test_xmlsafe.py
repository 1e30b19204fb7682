"""Password-protected OOXML files (OLE compound files with EncryptionInfo + EncryptedPackage, not zips) are
EncryptedFile with one message in DOCX, XLSX and PPTX; an old binary Office file under a new extension is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from kaynak.errors import CorruptFile, EncryptedFile
from kaynak.loaders import load
from kaynak.loaders.xmlsafe import is_encrypted_ooxml
from testkit.paths import FIXTURES

WORLD = FIXTURES / "world" / "tika"  # Apache Tika's test documents (Apache-2.0)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("testWORD_protected_passtika.docx", "DOCX"),
        ("testEXCEL_protected_passtika.xlsx", "XLSX"),
        ("testPPT_protected_passtika.pptx", "PPTX"),
    ],
)
def test_password_protected_ooxml_is_encrypted_file(name: str, kind: str) -> None:
    path = WORLD / name
    assert is_encrypted_ooxml(path.read_bytes())
    with pytest.raises(EncryptedFile) as err:
        load(path)
    assert str(err.value) == f"{path}: {kind} file is password-protected; save it without a password first"


def test_old_binary_office_file_under_a_new_extension(tmp_path: Path) -> None:
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 504 + "WordDocument".encode("utf-16-le") + b"\x00" * 64
    path = tmp_path / "eski.docx"
    path.write_bytes(ole)
    assert not is_encrypted_ooxml(ole)
    with pytest.raises(CorruptFile, match="old binary Office file"):
        load(path)


def test_default_password_opens_only_what_excel_opens_without_asking() -> None:
    from kaynak.loaders.ooxmlcrypt import decrypt_default

    plain = decrypt_default((WORLD / "protectedFile.xlsx").read_bytes())  # Standard encryption, "VelvetSweatshop"
    assert plain is not None and plain.startswith(b"PK")
    assert decrypt_default((WORLD / "testEXCEL_protected_passtika.xlsx").read_bytes()) is None  # a chosen password
    assert decrypt_default(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600) is None  # not a compound file
