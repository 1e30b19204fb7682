"""Build the fidelity corpus: copy real files from other projects' public test suites into ``corpus/<source>/``
and write ``corpus/MANIFEST.tsv`` (file, source repository, path, commit, licence, committable, language).

The files come from local snapshots of the repositories (``/work/.mirror/<owner>+<name>/repo``, brought here by
the session's ``fetch`` tool; any clone works: pass ``--mirrors``). The UYAP ``.udf`` files and the cp1254 text are
look-alikes written here (public real UDFs carry people's names and ID numbers): their structure follows real
UYAP Doküman Editörü files (a zip with ``content.xml``: a ``<content>`` CDATA pool, ``<properties>``, ``<elements>``
whose ``<paragraph>`` runs point into the pool, header and footer, tables, page breaks).

    python benchmarks/fidelity/build_corpus.py [--mirrors /work/.mirror]

Run once; the result is committed. Re-running rewrites ``corpus/`` from the same commits.
"""

# ruff: noqa: E501  (the look-alike documents are data: long Turkish sentences kept on one line)
from __future__ import annotations

import argparse
import hashlib
import io
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"

#: extension -> at most this many files from Tika's test-documents (smallest first after de-duplication)
TIKA_CAPS = {
    "pdf": 32, "docx": 26, "doc": 12, "rtf": 22, "html": 14, "htm": 2, "xhtml": 2, "xlsx": 16, "xls": 10,
    "txt": 10, "pptx": 16, "ppt": 10, "odt": 16, "mbox": 9, "eml": 9, "ods": 4, "odp": 3, "epub": 2, "csv": 3,
    "md": 2, "png": 3, "jpg": 2, "tif": 1,
}  # fmt: skip
MAX_BYTES = 400_000
#: Tika files left out: not documents of the format (sidecar lists, ISA-Tab tables under .txt), photos without
#: text, or duplicates of another file under another name.
TIKA_SKIP = (
    "testISATab",
    "file-list.txt",
    "testJPEG",
    "baseball",
    "testPNG.png",
    "testBMPfp",
    "testStataDTA",
    "testOCR_encode",
)
TIKA_OCR = ("testOCR",)
#: real correspondence of real people (a public mailing list, the Enron data set): measured where a mirror is at
#: hand, never committed (corpus/.gitignore, reference/.gitignore), ``committable`` = no in the manifest
PRIVATE = frozenset({"tika/complex.mbox", "tika/testMBOX_lengthy_x-headers.mbox", "tika/testRFC822_x-.eml"})


_XML_PEOPLE = re.compile(rb"(<(dc:creator|cp:lastModifiedBy|meta:initial-creator)>)(.*?)(</\2>)", re.S)
_PDF_AUTHOR = re.compile(rb"/Author\s*\((?:[^()\\]|\\.)*\)")
_XMP_CREATOR = re.compile(rb"<dc:creator>.*?</dc:creator>", re.S)
_RTF_PEOPLE = re.compile(rb"\{\\(author|operator)\s[^{}]*\}")


def scrub(name: str, data: bytes) -> tuple[bytes, str]:
    """Empty the fields that name a document's author or last editor (OOXML/ODF ``dc:creator``,
    ``cp:lastModifiedBy``, ``meta:initial-creator``; PDF ``/Author`` and XMP ``dc:creator``, blanked in place so
    every offset stays; RTF ``\\author``/``\\operator``): the corpus carries no people's names in metadata.
    Returns (bytes, a note for the manifest, empty when nothing changed)."""
    ext = name.rsplit(".", 1)[-1].lower()
    if ext == "pdf":
        out = _PDF_AUTHOR.sub(lambda m: b"/Author ()" + b" " * (len(m.group(0)) - 10), data)
        out = _XMP_CREATOR.sub(lambda m: b"<dc:creator>" + b" " * (len(m.group(0)) - 25) + b"</dc:creator>", out)
        return out, ("author metadata blanked in place" if out != data else "")
    if ext == "rtf":
        out = _RTF_PEOPLE.sub(lambda m: b"{\\" + m.group(1) + b" }", data)
        return out, ("\\author/\\operator emptied" if out != data else "")
    if ext not in ("docx", "xlsx", "pptx", "odt", "ods", "odp") or not zipfile.is_zipfile(io.BytesIO(data)):
        return data, ""
    try:
        src = zipfile.ZipFile(io.BytesIO(data))
        members = [(info, src.read(info)) for info in src.infolist()]
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError):
        return data, ""
    changed = False
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for info, body in members:
            if info.filename in ("docProps/core.xml", "meta.xml"):
                new = _XML_PEOPLE.sub(lambda m: m.group(1) + m.group(4), body)
                changed |= new != body
                body = new
            dst.writestr(info, body, compress_type=info.compress_type)
    return (buf.getvalue(), "creator/lastModifiedBy emptied") if changed else (data, "")


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def tree(repo: Path) -> list[tuple[str, int, str]]:
    """(blob sha, size, path) of every file at HEAD."""
    out = []
    for line in git(repo, "ls-tree", "-r", "-l", "HEAD").decode("utf-8", "replace").splitlines():
        meta, _, path = line.partition("\t")
        parts = meta.split()
        if parts[1] != "blob" or not parts[3].isdigit():  # "BAD": a blob this snapshot lacks
            continue
        out.append((parts[2], int(parts[3]), path))
    return out


class Builder:
    def __init__(self, mirrors: Path) -> None:
        self.mirrors = mirrors
        self.rows: list[dict[str, str]] = []
        self.seen_blobs: set[str] = set()
        self.names: set[str] = set()

    def add(self, source: str, repo: str, path: str, licence: str, data: bytes, *, name: str | None = None,
            commit: str = "", committable: bool = True, language: str = "en", blob: str = "") -> None:  # fmt: skip
        if blob and blob in self.seen_blobs:
            return
        digest = hashlib.sha256(data).hexdigest()
        if digest in self.seen_blobs:
            return
        self.seen_blobs.update({blob, digest} - {""})
        name = name or Path(path).name
        data, note = scrub(name, data)
        rel = f"{source}/{name}"
        stem, ext = Path(name).stem, Path(name).suffix
        n = 2
        while rel in self.names:
            rel = f"{source}/{stem}-{n}{ext}"
            n += 1
        self.names.add(rel)
        target = CORPUS / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.rows.append(
            {"file": rel, "repo": repo, "path": path, "commit": commit, "licence": licence,
             "committable": "yes" if committable and rel not in PRIVATE else "no", "language": language,
             "sha256": hashlib.sha256(data).hexdigest(), "changed": note}
        )  # fmt: skip

    def from_repo(self, source: str, repo: str, licence: str, paths: list[str], *, rename: dict[str, str] | None = None,
                  language: str = "en") -> None:  # fmt: skip
        root = self.mirrors / repo.replace("/", "+") / "repo"
        commit = git(root, "rev-parse", "HEAD").decode().strip()
        files = {p: (b, s) for b, s, p in tree(root)}
        for path in paths:
            if path not in files:
                print(f"missing in {repo}: {path}", file=sys.stderr)
                continue
            blob, _ = files[path]
            data = git(root, "cat-file", "blob", blob)
            self.add(source, repo, path, licence, data, name=(rename or {}).get(path), commit=commit, blob=blob,
                     language=language)  # fmt: skip

    def tika(self) -> None:
        root = self.mirrors / "apache+tika" / "repo"
        commit = git(root, "rev-parse", "HEAD").decode().strip()
        taken: dict[str, int] = {}
        candidates = []
        for blob, size, path in tree(root):
            if "/test-documents/" not in path or size > MAX_BYTES or size == 0:
                continue
            name = path.rsplit("/", 1)[1]
            ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
            if ext not in TIKA_CAPS or any(s in path for s in TIKA_SKIP):
                continue
            if ext in ("png", "jpg", "tif") and not any(s in name for s in TIKA_OCR):
                continue
            candidates.append((ext, name.lower(), size, blob, path))
        # spread over the alphabet: every k-th file of a format, so the corpus is not only "test1…"
        by_ext: dict[str, list[tuple[str, str, int, str, str]]] = {}
        for c in sorted(candidates):
            by_ext.setdefault(c[0], []).append(c)
        for ext, items in sorted(by_ext.items()):
            unique = []
            blobs = set()
            for item in items:
                if item[3] not in blobs:
                    blobs.add(item[3])
                    unique.append(item)
            cap = TIKA_CAPS[ext]
            step = max(1.0, len(unique) / cap)
            picked = [unique[int(i * step)] for i in range(min(cap, len(unique)))]
            for _, _, _, blob, path in picked:
                data = git(root, "cat-file", "blob", blob)
                self.add("tika", "apache/tika", path, "Apache-2.0", data, commit=commit, blob=blob)
                taken[ext] = taken.get(ext, 0) + 1
        print("tika:", taken)

    def write(self) -> None:
        cols = ["file", "repo", "path", "commit", "licence", "committable", "language", "sha256", "changed"]
        lines = ["\t".join(cols)] + ["\t".join(r[c] for c in cols) for r in sorted(self.rows, key=lambda r: r["file"])]
        (CORPUS / "MANIFEST.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        private = sorted(r["file"] for r in self.rows if r["committable"] != "yes")
        (CORPUS / ".gitignore").write_text("".join(f"/{f}\n" for f in private), encoding="utf-8")


# ---------------------------------------------------------------------------------------------- look-alikes
UDF_DOCS = [
    (
        "dilekce-kira.udf",
        "T.C. İSTANBUL 5. SULH HUKUK MAHKEMESİ",
        [
            ("T.C.", True),
            ("İSTANBUL 5. SULH HUKUK MAHKEMESİ", True),
            ("ESAS NO: 2024/1234", False),
            ("DAVACI: (look-alike: no real person)", False),
            ("DAVALI: Örnek Kiracı Ltd. Şti.", False),
            ("KONU: Kira bedelinin tespiti istemidir.", False),
            ("AÇIKLAMALAR", True),
            (
                "Taraflar arasında 01.01.2020 tarihli kira sözleşmesi bulunmaktadır. Kira bedeli aylık 12.500,00 TL "
                "olarak belirlenmiş, sözleşmenin 4. maddesinde yıllık artışın TÜFE oranında yapılacağı kararlaştırılmıştır.",
                False,
            ),
            (
                "Davalı, sözleşmenin yenilenen dönemlerinde kira bedelini ödemekte gecikmiş, ihtarnameye rağmen borcunu "
                "ödememiştir. Emsal kira bedelleri bilirkişi incelemesiyle tespit edilmelidir.",
                False,
            ),
            ("HUKUKİ NEDENLER", True),
            ("6098 sayılı Türk Borçlar Kanunu m. 344, HMK ve ilgili mevzuat.", False),
            ("DELİLLER", True),
            ("Kira sözleşmesi, ihtarname, bilirkişi incelemesi, tanık beyanları.", False),
            ("SONUÇ VE İSTEM", True),
            (
                "Kira bedelinin aylık 18.750,00 TL olarak tespitine, yargılama giderlerinin davalıya yükletilmesine "
                "karar verilmesini saygıyla arz ederim.",
                False,
            ),
        ],
        3,
        [["Sözleşme tarihi", "01.01.2020"], ["Aylık kira", "12.500,00 TL"]],
    ),
    (
        "karar-tazminat.udf",
        "T.C. ANKARA 12. İŞ MAHKEMESİ",
        [
            ("T.C.", True),
            ("ANKARA 12. İŞ MAHKEMESİ", True),
            ("GEREKÇELİ KARAR", True),
            ("ESAS NO: 2023/456  KARAR NO: 2024/789", False),
            ("DAVA: İşçilik alacağı (kıdem ve ihbar tazminatı)", False),
            ("GEREKÇE", True),
            (
                "Davacı vekili dava dilekçesinde; müvekkilinin davalı işyerinde 2015 yılından itibaren çalıştığını, iş "
                "sözleşmesinin haklı bir neden olmaksızın feshedildiğini, kıdem ve ihbar tazminatlarının ödenmediğini ileri sürmüştür.",
                False,
            ),
            (
                "Davalı vekili cevap dilekçesinde; fesihin devamsızlık nedeniyle haklı olduğunu savunmuştur. Dosyadaki "
                "tanık beyanları ve SGK kayıtları birlikte değerlendirildiğinde feshin haklı nedene dayanmadığı anlaşılmıştır.",
                False,
            ),
            ("Bilirkişi raporunda hesaplanan kıdem tazminatı 145.320,55 TL, ihbar tazminatı 28.410,00 TL'dir.", False),
            ("HÜKÜM", True),
            (
                "Davanın KABULÜ ile 145.320,55 TL kıdem tazminatının ve 28.410,00 TL ihbar tazminatının fesih tarihinden "
                "itibaren işleyecek en yüksek mevduat faiziyle davalıdan alınarak davacıya verilmesine,",
                False,
            ),
            (
                "Karar kesinleştiğinde harçların Hazineye gelir kaydına, kararın tebliğinden itibaren iki hafta içinde "
                "istinaf yolu açık olmak üzere karar verildi.",
                False,
            ),
        ],
        5,
        [["Kalem", "Tutar"], ["Kıdem tazminatı", "145.320,55 TL"], ["İhbar tazminatı", "28.410,00 TL"]],
    ),
    (
        "icra-takip.udf",
        "T.C. İZMİR 3. İCRA DAİRESİ",
        [
            ("T.C.", True),
            ("İZMİR 3. İCRA DAİRESİ", True),
            ("ÖDEME EMRİ", True),
            ("Dosya No: 2024/10101 Esas", False),
            ("Alacaklı: Örnek Finans A.Ş.  Borçlu: Örnek Ticaret Ltd. Şti.", False),
            ("Alacağın tutarı ve cinsi: 56.000,00 TL asıl alacak, 4.312,87 TL işlemiş faiz.", False),
            ("İHTARAT", True),
            (
                "Borçlu, bu ödeme emrinin tebliğinden itibaren yedi gün içinde borcu ödemek, borcun tamamına veya bir "
                "kısmına itirazı varsa bunu aynı süre içinde icra dairesine bildirmek zorundadır.",
                False,
            ),
            ("Süresi içinde itiraz edilmez veya borç ödenmezse cebri icraya devam olunacağı ihtar olunur.", False),
        ],
        None,
        None,
    ),
    (
        "bilirkisi-raporu.udf",
        "BİLİRKİŞİ RAPORU",
        [
            ("BİLİRKİŞİ RAPORU", True),
            ("İSTANBUL ANADOLU 7. ASLİYE TİCARET MAHKEMESİ'NE", True),
            ("Dosya: 2022/3344 Esas", False),
            ("I. GÖREV", True),
            (
                "Sayın Mahkemenin ara kararı ile taraflar arasındaki cari hesap ilişkisinin incelenmesi ve alacak "
                "miktarının tespiti görevi tarafımıza verilmiştir.",
                False,
            ),
            ("II. İNCELEME", True),
            (
                "Davacının ticari defterleri 2021 ve 2022 yılları için usulüne uygun tutulmuş olup açılış ve kapanış "
                "onayları zamanında yaptırılmıştır. Davalının defterlerinde 3 adet faturanın kaydı bulunmamaktadır.",
                False,
            ),
            ("Faturaların toplam tutarı 87.654,32 TL olup davalı tarafından iade faturası düzenlenmemiştir.", False),
            ("III. SONUÇ", True),
            (
                "Davacının davalıdan 87.654,32 TL alacaklı olduğu, takdiri Sayın Mahkemeye ait olmak üzere rapor "
                "olunur.",
                False,
            ),
        ],
        6,
        [
            ["Fatura No", "Tarih", "Tutar"],
            ["A-101", "12.03.2021", "30.000,00 TL"],
            ["A-117", "05.06.2021", "27.654,32 TL"],
            ["A-129", "21.09.2021", "30.000,00 TL"],
        ],
    ),
    (
        "tutanak-kisa.udf",
        "DURUŞMA TUTANAĞI",
        [
            ("DURUŞMA TUTANAĞI", True),
            ("Celse: 3", False),
            ("Açık yargılamaya devam olundu. Taraf vekilleri hazır, davalı asil gelmedi.", False),
            ("Davacı vekili: Önceki beyanlarımızı tekrar ederiz, tanıklarımızın dinlenmesini talep ederiz.", False),
            ("ARA KARAR", True),
            ("1- Davacı tanıklarının bir sonraki celsede dinlenmesine,", False),
            ("2- Duruşmanın 14.11.2024 günü saat 10:30'a bırakılmasına karar verildi.", False),
        ],
        None,
        None,
    ),
]
UDF_HEADER = "UYAP BİLİŞİM SİSTEMİ"
UDF_FOOTER = "Bu belge 5070 sayılı Elektronik İmza Kanunu uyarınca güvenli elektronik imza ile imzalanmıştır."


def make_udf(paragraphs: list[tuple[str, bool]], page_break_after: int | None,
             table: list[list[str]] | None) -> bytes:  # fmt: skip
    """A UDF like UYAP Doküman Editörü writes: one text pool, header and footer, paragraphs, a table, a break."""
    pool: list[str] = []
    at = 0

    def run(text: str, bold: bool = False) -> str:
        nonlocal at
        start = at
        pool.append(text)
        at += len(text)
        b = ' bold="true"' if bold else ""
        return f'<content family="Times New Roman" size="12"{b} startOffset="{start}" length="{len(text)}" />'

    def para(text: str, bold: bool = False, align: int = 3) -> str:
        inner = run(text, bold)
        nl = run("\n")
        return f'<paragraph Alignment="{align}" LeftIndent="0.0" family="Times New Roman" size="12">{inner}{nl}</paragraph>'

    header = f"<header>{para(UDF_HEADER, False, 1)}</header>"
    body: list[str] = []
    for i, (text, bold) in enumerate(paragraphs):
        body.append(para(text, bold, 1 if bold else 3))
        if table and i == 5:
            rows = []
            for r in table:
                cells = "".join(f'<cell width="150">{para(c)}</cell>' for c in r)
                rows.append(f'<row rowName="row{len(rows) + 1}" rowType="dataRow">{cells}</row>')
            body.append(
                f'<table tableName="Sabit" columnCount="{len(table[0])}" columnSpans="150,150,150" border="borderCell">{"".join(rows)}</table>'
            )
        if page_break_after is not None and i == page_break_after:
            body.append("<page-break />")
    footer = f"<footer>{para(UDF_FOOTER, False, 1)}</footer>"
    text = "".join(pool)
    xml = (
        '<?xml version="1.0" encoding="UTF-8" ?>\n'
        '<template format_id="1.8">\n'
        f"<content><![CDATA[{text}]]></content>\n"
        '<properties><pageFormat mediaSizeName="1" leftMargin="70.875" rightMargin="70.875" topMargin="56.7" '
        'bottomMargin="56.7" paperOrientation="1" headerFOffset="20.0" footerFOffset="20.0" /></properties>\n'
        f'<elements resolver="hvl-default">{header}{"".join(body)}{footer}</elements>\n'
        '<styles><style name="default" description="Geçerli" family="Dialog" size="12" bold="false" italic="false" '
        'foreground="-13421773" FONT_ATTRIBUTE_KEY="javax.swing.plaf.FontUIResource[family=Dialog]" />'
        '<style name="hvl-default" family="Times New Roman" size="12" description="Gövde" /></styles>\n'
        "</template>\n"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        info = zipfile.ZipInfo("content.xml", date_time=(2024, 11, 14, 10, 30, 0))  # fixed: the same bytes each build
        zf.writestr(info, xml.encode("utf-8"), compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


CP1254_TEXT = """GENEL KURUL TOPLANTI TUTANAĞI

Derneğin olağan genel kurul toplantısı 15 Mart 2024 Cuma günü saat 14:00'te dernek merkezinde yapıldı.
Toplantıya üyelerin çoğunluğu katıldı; yeter sayının bulunduğu görülerek gündeme geçildi.

1. Açılış ve saygı duruşu yapıldı.
2. Divan kurulu seçildi: başkanlığa, yazmanlığa ve oy toplayıcılığa birer üye oybirliğiyle seçildi.
3. Yönetim kurulunun çalışma raporu okundu; gelir-gider çizelgesi ve bütçe önerisi tartışıldı.
4. Denetim kurulu raporu okundu; yönetim kurulu oy çokluğuyla aklandı.
5. Dilek ve öneriler: üyeler, aidatların düzenli ödenmesi ve kütüphanenin genişletilmesi konusunda görüş bildirdi.

Başka söz alan olmadığından toplantı saat 16:30'da kapatıldı. Işık, ılık, çiğdem, öğrenci, şüphe, İğdır.
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--cpython-email", type=Path, default=Path("/tmp/cpython-email"))
    args = ap.parse_args()
    if CORPUS.exists():
        shutil.rmtree(CORPUS)
    CORPUS.mkdir(parents=True)
    b = Builder(args.mirrors)
    b.tika()
    b.from_repo("python-docx", "python-openxml/python-docx", "MIT", [
        f"features/steps/test_files/{n}.docx" for n in (
            "blk-paras-and-tables", "comments-rich-para", "doc-access-sections", "hdr-header-footer",
            "doc-odd-even-hdrs", "num-having-numbering-part", "par-known-paragraphs", "par-known-styles",
            "par-rendered-page-breaks", "par-hyperlinks", "sct-first-page-hdrftr", "tbl-having-tables",
            "tbl-cell-access", "txt-font-props")
    ] + ["tests/test_files/having-images.docx"])  # fmt: skip
    b.from_repo("python-pptx", "scanny/python-pptx", "MIT", [
        f"features/steps/test_files/{n}.pptx" for n in (
            "prs-notes", "ph-populated-placeholders", "cht-charts", "cht-category-access", "shp-groupshape",
            "lyt-shapes", "mst-placeholders", "shp-common-props", "shp-access-chart", "minimal", "font-color")
    ] + ["features/steps/test_files/shp-embedded-xlsx.xlsx"])  # fmt: skip
    b.from_repo("odfpy", "eea/odfpy", "Apache-2.0", [
        "api-for-odfpy.odt", "contrib/odfsign/testdocs/ClimateChange2.odt", "samples/Electra.odt",
        "examples/countrystatistics.ods", "odfimgimport/textWithImages.odt",
    ] + [f"tests/examples/{n}" for n in (
        "chinese_spreadsheet.ods", "cols.odp", "contextualspacing.odt", "definitionlists.odt", "emb_spreadsheet.odp",
        "headerfooter.odt", "images.odt", "imageslabels.odt", "ol.odp", "parastyles.odt", "pythagoras.ods",
        "serious_poem.odt", "simplelist.odt", "simpletable.odt", "twolevellist.odt", "userfields.odt")])  # fmt: skip
    b.from_repo("calamine", "tafia/calamine", "MIT", [f"tests/{n}" for n in (
        "any_sheets.ods", "any_sheets.xlsx", "date.ods", "date.xlsx", "date_1904.xlsx", "covered.ods", "errors.xlsx",
        "header-row.xlsx", "hyperlinks.xlsx", "inventory-table.xlsx", "issue127.ods", "merged_cells.ods",
        "richtext_issue.ods", "special_cells.ods", "strict_iso_paths.xlsx", "table-multiple.xlsx", "temperature.xlsx",
        "with-annotation.ods", "pass_protected.xlsx", "richtext-namespaced.xlsx", "date.xls", "issue127.xls")]
    + ["README.md", "Changelog.md"])  # fmt: skip
    b.from_repo("epubjs", "futurepress/epub.js", "BSD-2-Clause", ["test/fixtures/alice_without_cover.epub"])
    b.from_repo("tesseract", "tesseract-ocr/test", "Apache-2.0", [
        "testing/phototest.tif", "testing/eurotext.tif", "testing/8071_093.3B.tif", "testing/8087_054.3B.tif",
        "testing/phototest-rotated-R.png", "testing/phototestrot.tif"])  # fmt: skip
    b.from_repo("odfpy", "eea/odfpy", "Apache-2.0", ["README.md"], rename={"README.md": "odfpy-README.md"})
    b.from_repo("tesseract", "tesseract-ocr/test", "Apache-2.0", ["README.md"], rename={"README.md": "test-README.md"})
    # CPython's e-mail test messages (PSF): .txt files that are RFC 5322 messages, stored as .eml
    # CPython's e-mail test messages (PSF), read one by one from GitHub (the repository is too large to mirror):
    # ``--cpython-email`` holds them, each with a ``<name>.commit`` file; the .txt messages are stored as .eml
    cp = args.cpython_email
    if cp.exists():
        for f in sorted(p for p in cp.glob("*") if p.suffix != ".commit"):
            name = f.name.replace(".txt", ".eml")
            commit = (cp / (f.name + ".commit")).read_text().strip()
            b.add("cpython", "python/cpython", f"Lib/test/test_email/data/{f.name}", "PSF-2.0", f.read_bytes(),
                  name=name, commit=commit)  # fmt: skip
    # files LibreOffice wrote (issue 50's first examples), committed with kaynak's tests
    lo = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "world" / "libreoffice"
    for f in sorted(lo.glob("*")):
        b.add("libreoffice", "kaynak tests/fixtures/world/libreoffice (LibreOffice 7.4 output)",
              f"tests/fixtures/world/libreoffice/{f.name}", "Apache-2.0", f.read_bytes(), language="tr")  # fmt: skip
    for name, _title, paras, brk, table in UDF_DOCS:
        b.add("lookalike", "kaynak (written for this benchmark)", f"benchmarks/fidelity/build_corpus.py#{name}",
              "Apache-2.0", make_udf(paras, brk, table), name=name, language="tr")  # fmt: skip
    b.add("lookalike", "kaynak (written for this benchmark)", "benchmarks/fidelity/build_corpus.py#CP1254_TEXT",
          "Apache-2.0", CP1254_TEXT.encode("cp1254"), name="genel-kurul-cp1254.txt", language="tr")  # fmt: skip
    b.write()
    print(len(b.rows), "files")


if __name__ == "__main__":
    main()
