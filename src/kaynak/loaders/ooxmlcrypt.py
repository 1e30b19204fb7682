"""Excel workbooks encrypted with Excel's built-in default password, which Excel opens without asking for one.

Excel writes a workbook whose structure is protected, or that has only a password *to modify*, encrypted with the
password "VelvetSweatshop" ([MS-OFFCRYPTO] 2.3.4, ECMA-376 Standard Encryption, AES-ECB): to the person it is an
ordinary workbook. ``decrypt_default`` returns the zip inside such a file, or None when the file needs a password
the person set (Agile encryption, or a Standard key that the default password does not open): then the loader
refuses it as EncryptedFile. The decrypted package is never larger than the encrypted stream, and it goes through
the zip guard like any other workbook.
"""

from __future__ import annotations

import hashlib
import io
import struct

DEFAULT_PASSWORD = "VelvetSweatshop"
_AES_IDS = {0x660E: 128, 0x660F: 192, 0x6610: 256}
_SPIN = 50_000


def decrypt_default(data: bytes) -> bytes | None:
    """The plain OOXML package inside ``data`` (an OLE compound file) if Excel's default password opens it."""
    try:
        import olefile

        ole = olefile.OleFileIO(io.BytesIO(data))
        try:
            info = ole.openstream("EncryptionInfo").read(64 * 1024)
            if len(info) < 8 or struct.unpack("<HH", info[:4]) not in ((3, 2), (4, 2), (2, 2)):
                return None  # Agile (4.4) or extensible encryption: always a password the person chose
            key = _standard_key(info, DEFAULT_PASSWORD)
            if key is None:
                return None
            package = ole.openstream("EncryptedPackage").read()
        finally:
            ole.close()
    except Exception:  # not a readable compound file: the caller reports it as encrypted or corrupt
        return None
    if len(package) < 8:
        return None
    size = struct.unpack("<Q", package[:8])[0]
    body = package[8:]
    body = body[: len(body) - len(body) % 16]
    plain = _aes_ecb(key, body)[:size]
    return plain if plain.startswith(b"PK") else None


def _standard_key(info: bytes, password: str) -> bytes | None:
    """The AES key of Standard Encryption for ``password``, or None when the verifier says it is not the key."""
    header_size = struct.unpack("<I", info[8:12])[0]
    header = info[12 : 12 + header_size]
    if len(header) < 32:
        return None
    alg_id, _hash_id, key_bits = struct.unpack("<III", header[8:20])
    if alg_id not in _AES_IDS:
        return None
    key_bits = key_bits or _AES_IDS[alg_id]
    verifier = info[12 + header_size :]
    salt_size = struct.unpack("<I", verifier[:4])[0]
    if salt_size != 16 or len(verifier) < 4 + 16 + 16 + 4 + 32:
        return None
    salt = verifier[4:20]
    encrypted_verifier = verifier[20:36]
    encrypted_hash = verifier[40:72]
    h = hashlib.sha1(salt + password.encode("utf-16-le")).digest()
    for i in range(_SPIN):
        h = hashlib.sha1(struct.pack("<I", i) + h).digest()
    h = hashlib.sha1(h + struct.pack("<I", 0)).digest()
    x1 = hashlib.sha1(bytes(b ^ 0x36 for b in h.ljust(64, b"\x00")[:20]) + b"\x36" * 44).digest()
    x2 = hashlib.sha1(bytes(b ^ 0x5C for b in h.ljust(64, b"\x00")[:20]) + b"\x5c" * 44).digest()
    key = (x1 + x2)[: key_bits // 8]
    plain_verifier = _aes_ecb(key, encrypted_verifier)
    plain_hash = _aes_ecb(key, encrypted_hash)[:20]
    return key if hashlib.sha1(plain_verifier).digest() == plain_hash else None


def _aes_ecb(key: bytes, data: bytes) -> bytes:
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    decryptor = Cipher(algorithms.AES(key), modes.ECB()).decryptor()  # ECB: the format says so
    return decryptor.update(data) + decryptor.finalize()
