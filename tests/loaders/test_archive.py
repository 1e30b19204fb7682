"""Archives (kaynak.loaders.archive): real archives from Apache Tika's test suite, archives written here with the
standard library, hostile ones (bombs, 10,000 entries, nesting, links, '..', encryption), and an archive through
the ingest as documents of their own (``bundle.zip#folder/report.md``)."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from kaynak.config import Settings, load_settings
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.errors import CorruptFile, EncryptedFile, NoText, UnsupportedFileType
from kaynak.ingest import IngestService
from kaynak.ingest.sources import container_of
from kaynak.loaders import CONTAINER_EXTENSIONS, SUPPORTED_EXTENSIONS, load
from kaynak.loaders.archive import MAX_DEPTH
from kaynak.search import SearchService
from kaynak.store import Store
from kaynak.types import LoadedDocument
from testkit.format_samples import TR_PASSAGE, make_eml, make_odt

WORLD = Path(__file__).resolve().parents[1] / "fixtures" / "world" / "tika"


def zip_of(files: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def tar_of(files: dict[str, bytes], mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:  # type: ignore[call-overload]
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def put(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def texts(doc_parts: list) -> dict[str, str]:
    """Member name (the part's suffix without its '#') → its text."""
    return {suffix.removeprefix("#"): "\n".join(p.text for p in part.pages) for suffix, part in doc_parts}


def names(doc: LoadedDocument) -> list[str]:
    return [suffix.removeprefix("#") for suffix, _ in doc.parts]


def test_archives_are_containers() -> None:
    for ext in (".zip", ".tar", ".tgz", ".gz", ".bz2", ".xz", ".msg"):
        assert ext in SUPPORTED_EXTENSIONS and ext in CONTAINER_EXTENSIONS
    assert container_of("bundle.zip#folder/report.pdf") == "bundle.zip"
    assert container_of("bundle.zip#mail.eml#report.pdf") == "bundle.zip"


# ------------------------------------------------------------------------------------------ real archives (Tika)
def test_tika_tgz_every_member_a_document() -> None:
    doc = load(WORLD / "test-documents.tgz")
    got = texts(doc.parts)
    assert doc.pages == [] and doc.metadata["format"] == "gzip"
    for member in ("testHTML.html", "testTXT.txt", "testOpenOffice2.odt", "testPDF.pdf", "testRTF.rtf"):
        assert f"test-documents/{member}" in got, sorted(got)
    assert "Test Indexation Html" in got["test-documents/testHTML.html"]
    assert "Tika" in got["test-documents/testPDF.pdf"]
    assert any(".xml" in w for w in doc.warnings)  # the member kaynak does not read is named, not hidden


def test_tika_nested_archives_and_single_compressed_file() -> None:
    nested = load(WORLD / "test-nested-tarball.tar")
    assert names(nested) == ["folderContainingTgz/inner/nested.tgz/folderWithinTgz/testTXT.txt"]
    zipped = load(WORLD / "test-zip-of-zip.zip")
    assert names(zipped) == ["html-within-zip.zip/text.html"]
    single = load(WORLD / "test-bz2.txt.bz2")
    assert names(single) == ["test-bz2.txt"]
    assert texts(single.parts)["test-bz2.txt"].strip()


def test_tika_zip_with_an_encrypted_member_keeps_the_rest() -> None:
    doc = load(WORLD / "testZipEncrypted.zip")
    assert names(doc) == ["unencrypted.txt"]
    assert any("password-protected" in w for w in doc.warnings)


# ------------------------------------------------------------------------------------------------ written here
def test_zip_members_keep_their_folders_and_formats(tmp_path: Path) -> None:
    eml = make_eml(subject="Rapor ekte", body="Rapor ektedir.", attachments={"rapor.odt": make_odt()})
    data = zip_of(
        {
            "belgeler/karar.txt": TR_PASSAGE.encode("cp1254"),
            "belgeler/plan.odt": make_odt(),
            "posta/tek.eml": eml,
            "__MACOSX/belgeler/._karar.txt": b"\x00\x05\x16\x07junk",
            "belgeler/.DS_Store": b"\x00\x00\x00\x01Bud1",
            "program.exe": b"MZ\x90\x00",
        }
    )
    doc = load(put(tmp_path, "paket.zip", data))
    got = texts(doc.parts)
    assert set(got) == {"belgeler/karar.txt", "belgeler/plan.odt", "posta/tek.eml", "posta/tek.eml#rapor.odt"}
    assert "ocak ayında" in got["belgeler/karar.txt"]  # Windows-1254 read as such inside the archive too
    assert doc.warnings == ["files of types kaynak does not read were left out: .exe (1)"]  # junk without a word


def test_zip_names_from_a_turkish_windows_zip_tool(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo("x")
        info.filename = "dilekçe.txt".encode("cp857").decode("cp437")  # no UTF-8 flag: the OEM code page
        zf.writestr(info, b"Mahkeme karari")
    doc = load(put(tmp_path, "eski.zip", buf.getvalue()))
    assert names(doc) == ["dilekçe.txt"]


def test_tar_xz_and_bz2_and_a_gzipped_document(tmp_path: Path) -> None:
    files = {"a/not.txt": b"Kat malikleri kurulu toplanir."}
    for name, mode in (("x.tar.xz", "w:xz"), ("x.tbz2", "w:bz2"), ("x.tar", "w")):
        doc = load(put(tmp_path, name, tar_of(files, mode)))
        assert names(doc) == ["a/not.txt"], name
    import gzip

    doc = load(put(tmp_path, "rapor.md.gz", gzip.compress(b"# Rapor\n\nYillik rapor metni.")))
    assert names(doc) == ["rapor.md"] and doc.parts[0][1].pages[0].sections
    with pytest.raises(UnsupportedFileType, match="cannot tell"):
        load(put(tmp_path, "veri.gz", gzip.compress(b"\x00\x01binary")))


# ---------------------------------------------------------------------------------------------------- hostile
def test_zip_bomb_is_refused_within_the_budget(tmp_path: Path) -> None:
    zeros = b"\x00" * (8 * 1024 * 1024)
    data = zip_of({f"part{i}.txt": zeros for i in range(40)})  # 320 MB inflated from ~300 KB
    with pytest.raises(CorruptFile, match="archive bomb"):
        load(put(tmp_path, "bomb.zip", data))


def test_tar_gz_bomb_is_refused_while_streaming(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("zeros.bin")  # an unread type: skipped, but skipping inflates it
        info.size = 300 * 1024 * 1024
        tf.addfile(info, io.BytesIO(b"\x00" * info.size))
    with pytest.raises(CorruptFile, match="archive bomb"):
        load(put(tmp_path, "bomb.tar.gz", buf.getvalue()))


def test_ten_thousand_entries_and_deep_nesting_are_bounded(tmp_path: Path) -> None:
    many = zip_of({f"d/{i}.txt": f"belge {i}".encode() for i in range(10_000)}, zipfile.ZIP_STORED)
    doc = load(put(tmp_path, "many.zip", many))
    assert len(doc.parts) == 5_000 and any("first 5,000 documents" in w for w in doc.warnings)

    inner = zip_of({"derin.txt": b"en derindeki metin"})
    for level in range(MAX_DEPTH + 1):
        inner = zip_of({f"k{level}.zip": inner, f"s{level}.txt": f"seviye {level}".encode()})
    doc = load(put(tmp_path, "nested.zip", inner))
    got = names(doc)
    assert "s3.txt" in got and "k3.zip/s2.txt" in got and "k3.zip/k2.zip/s1.txt" in got
    assert not any("derin" in n for n in got)
    assert any(f"deeper than {MAX_DEPTH}" in w for w in doc.warnings)


def test_links_and_climbing_paths_are_never_read(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../../etc/kacak.txt", b"disari")
        zf.writestr("/mutlak.txt", b"mutlak")
        link = zipfile.ZipInfo("baglanti.txt")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, b"/etc/passwd")
        zf.writestr("iyi.txt", b"guvenli metin")
    doc = load(put(tmp_path, "kotu.zip", buf.getvalue()))
    assert names(doc) == ["iyi.txt"]
    assert any("3 link(s)" in w for w in doc.warnings)

    tbuf = io.BytesIO()
    with tarfile.open(fileobj=tbuf, mode="w") as tf:
        sym = tarfile.TarInfo("passwd.txt")
        sym.type, sym.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(sym)
        up = tarfile.TarInfo("../yukari.txt")
        up.size = 4
        tf.addfile(up, io.BytesIO(b"yuk!"))
    with pytest.raises(NoText, match="holds no file"):
        load(put(tmp_path, "kotu.tar", tbuf.getvalue()))


def encrypt_flags(data: bytes) -> bytes:
    """The same zip with every entry flagged as encrypted (local and central headers)."""
    raw = bytearray(data)
    for sig, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = raw.find(sig)
        while at >= 0:
            raw[at + offset] |= 0x01
            at = raw.find(sig, at + 4)
    return bytes(raw)


def test_encrypted_zip_and_broken_archives(tmp_path: Path) -> None:
    locked = encrypt_flags(zip_of({"gizli.txt": b"gizli metin", "plan.odt": make_odt()}, zipfile.ZIP_STORED))
    with pytest.raises(EncryptedFile, match=r"kilitli\.zip is password-protected; save it without a password first"):
        load(put(tmp_path, "kilitli.zip", locked))
    with pytest.raises(CorruptFile, match="zip"):
        load(put(tmp_path, "kirik.zip", b"PK\x03\x04" + b"\x00" * 100))
    with pytest.raises(CorruptFile, match="gzip"):
        load(put(tmp_path, "kirik.tgz", b"\x1f\x8b\x08\x00garbage-garbage"))
    with pytest.raises(CorruptFile, match="not a readable zip"):
        load(put(tmp_path, "sahte.zip", b"this is plain text, not a zip"))
    good = zip_of({"iyi.txt": b"iyi metin", "kotu.odt": b"PK\x03\x04broken"})
    doc = load(put(tmp_path, "karisik.zip", good))
    assert names(doc) == ["iyi.txt"] and any("kotu.odt could not be read" in w for w in doc.warnings)


# ------------------------------------------------------------------------------------------- through the ingest
@pytest.fixture
def settings(env: dict[str, str]) -> Settings:
    return load_settings(chunk_size=200)


def test_archive_ingest_search_unchanged_and_delete(
    tmp_path: Path, store: Store, settings: Settings, unique_name: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    bundle = root / "paket.zip"
    bundle.write_bytes(
        zip_of(
            {
                "klasor/karar.md": b"# Karar\n\nDavanin reddine karar verildi. Salmon swim upstream.",
                "plan.odt": make_odt(),
            }
        )
    )
    emb = HashEmbedder(64)
    ingest = IngestService(store, settings, lambda _: emb)
    search = SearchService(store, Settings(collection=unique_name, embedder="hash"), lambda _: emb)
    report = ingest.ingest([root], unique_name, language="turkish", prune=True)
    assert not report.failed and set(report.added) == {"paket.zip#klasor/karar.md", "paket.zip#plan.odt"}
    hit = search.search("salmon swim up", mode="keyword", k=1)[0]
    assert hit.source == "paket.zip#klasor/karar.md" and hit.section == "Karar"

    again = ingest.ingest([root], unique_name, prune=True)
    assert again.unchanged == ["paket.zip"] and not again.added and again.embedded == 0

    bundle.write_bytes(zip_of({"plan.odt": make_odt()}))
    third = ingest.ingest([root], unique_name, prune=True)
    assert set(store.document_hashes(store.get_collection(unique_name))) == {"paket.zip#plan.odt"}
    assert third.updated == ["paket.zip#plan.odt"] or third.added == ["paket.zip#plan.odt"]

    ingest.delete_document(unique_name, "paket.zip")
    assert store.document_hashes(store.get_collection(unique_name)) == {}
