"""The web page without a browser: the HTML shell, its headers (CSP, no cookies), language choice, assets and
their weight, write controls only when writes are enabled, /v1/access, /v1/highlights, and the rules for serving
original files (by document id only; symlinks, swapped folders, missing files and non-files refused)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kaynak.context import Context
from kaynak.errors import OriginalFileUnavailable
from kaynak.originals.files import open_original
from kaynak.web.i18n import STRINGS, choose_language
from kaynak.web.page import strings_json
from testkit.paths import REPO
from testkit.webapp import HOSTILE_NAME, hash_context, ingest_samples, make_app

TOKEN = "web-write-token"
READ_TOKEN = "web-read-token"
QUESTION = "Kat malikleri kurulu ne zaman toplanır?"


@pytest.fixture(scope="module")
def ctx(data_dir: Path, database_url: str) -> Iterator[Context]:
    c = hash_context(data_dir, database_url, api_token=TOKEN)
    yield c
    c.close()


@pytest.fixture(scope="module")
def client(ctx: Context) -> Iterator[TestClient]:
    with TestClient(make_app(ctx)) as c:
        yield c


@pytest.fixture(scope="module")
def samples(ctx: Context, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    name = "web_" + os.urandom(4).hex()
    docs = ingest_samples(ctx, name, tmp_path_factory.mktemp("web"))
    yield name, docs
    ctx.ingest.delete_collection(name)


# ---------------------------------------------------------------------------------------------- the page
def test_page_headers_csp_and_no_cookies(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert "set-cookie" not in r.headers
    assert "access-control-allow-origin" not in r.headers
    html = r.text
    # no inline script: every <script> either loads a same-origin file or is a JSON data block
    for tag in re.findall(r"<script[^>]*>", html):
        assert 'src="/static/' in tag or 'type="application/json"' in tag, tag
    assert not re.search(r"\son[a-z]+=", html), "no inline event handlers"
    assert "style=" not in html, "no inline styles"
    # nothing external
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    head = client.head("/")
    assert head.status_code == 200 and head.headers["content-security-policy"] == csp


def test_language_from_accept_language_and_switch(client: TestClient) -> None:
    tr = client.get("/", headers={"Accept-Language": "tr-TR,tr;q=0.9,en;q=0.8"})
    assert '<html lang="tr">' in tr.text and ">Ara</button>" in tr.text and "Koleksiyonlar" in tr.text
    assert tr.headers["content-language"] == "tr" and "accept-language" in tr.headers["vary"].lower()
    en = client.get("/", headers={"Accept-Language": "en-GB,en;q=0.9,tr;q=0.5"})
    assert '<html lang="en">' in en.text and ">Search</button>" in en.text
    assert '<html lang="en">' in client.get("/?lang=en", headers={"Accept-Language": "tr"}).text
    assert '<html lang="tr">' in client.get("/?lang=tr", headers={"Accept-Language": "en"}).text
    assert '<html lang="en">' in client.get("/?lang=%3Cscript%3E").text  # unknown values are not reflected
    assert "<script>" not in client.get("/?lang=%3Cscript%3E").text.split("</head>")[1]


def test_choose_language() -> None:
    assert choose_language(None, None) == "en"
    assert choose_language(None, "tr") == "tr"
    assert choose_language(None, "de-DE,tr;q=0.7,en;q=0.6") == "tr"
    assert choose_language(None, "en;q=0.4,tr;q=0.3") == "en"
    assert choose_language(None, "tr;q=abc,en") == "en"
    assert choose_language("tr", "en") == "tr"
    assert choose_language("xx", "tr") == "tr"


def test_strings_same_keys_and_turkish_casing() -> None:
    assert set(STRINGS["tr"]) == set(STRINGS["en"])
    tr = STRINGS["tr"]
    # Turkish dotted/dotless i written right (İngilizce, not Ingilizce), and the commands kept verbatim
    assert tr["lang_english"] == "İngilizce" and tr["col_embedder"] == "Gömme modeli"
    assert "`kaynak ingest" in tr["empty_collection"] and "`kaynak ingest" in STRINGS["en"]["empty_collection"]
    assert "nothing ingested yet" in STRINGS["en"]["no_collections"].lower()


def test_strings_json_cannot_close_the_script_block() -> None:
    raw = strings_json("tr")
    assert "<" not in raw and ">" not in raw and "&" not in raw


def test_write_controls_only_when_writes_are_enabled(data_dir: Path, database_url: str, client: TestClient) -> None:
    with_token = client.get("/").text
    assert 'id="upload-form"' in with_token and 'id="write-sign-in"' in with_token
    assert 'data-view="upload" aria-controls="upload-view" hidden' in with_token  # hidden until the token is given
    ro = hash_context(data_dir, database_url)  # no API token: no write controls at all
    try:
        with TestClient(make_app(ro)) as c:
            html = c.get("/").text
    finally:
        ro.close()
    for marker in ("upload-form", "write-sign-in", 'data-view="upload"', "up-files"):
        assert marker not in html, marker
    assert 'data-write="0"' in html


def test_static_assets_weight_and_types(client: TestClient) -> None:
    html = client.get("/").text
    total = len(html.encode())
    for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css"), ("icon.svg", "image/svg+xml")):
        ref = re.search(rf"/static/{re.escape(name)}\?v=([0-9a-f]+)", html)
        assert ref, name
        r = client.get(f"/static/{name}", params={"v": ref.group(1)})
        assert r.status_code == 200 and r.headers["content-type"].startswith(kind)
        assert "immutable" in r.headers["cache-control"] and r.headers["x-content-type-options"] == "nosniff"
        total += len(r.content)
    assert total < 100_000, f"page weight {total} bytes"
    assert client.get("/static/app.js").headers["cache-control"] == "no-cache"  # without the version: revalidate
    for bad in ("nope.js", "..%2Fpage.py", "..%2F..%2Fapi.py", "%2Fetc%2Fpasswd", "page.py", "__init__.py"):
        r = client.get(f"/static/{bad}")
        assert r.status_code == 404, (bad, r.status_code)


# ---------------------------------------------------------------------------------------------- endpoints
def test_access_reports_what_the_token_allows(client: TestClient) -> None:
    assert client.get("/v1/access").json() | {"languages": None} == {
        "read": True,
        "write": False,
        "read_token_required": False,
        "writes_enabled": True,
        "languages": None,
        "token": None,  # issue 31: a token's name and its scope per right
        "scopes": {"read": "*", "write": [], "admin": []},
    }
    assert client.get("/v1/access", headers={"Authorization": f"Bearer {TOKEN}"}).json()["write"] is True
    assert client.get("/v1/access", headers={"Authorization": "Bearer wrong"}).json()["write"] is False


def test_read_token_guards_the_web_endpoints(data_dir: Path, database_url: str, samples: tuple[str, Path]) -> None:
    name, _ = samples
    c = hash_context(data_dir, database_url, read_token=READ_TOKEN, api_token=TOKEN)
    try:
        with TestClient(make_app(c)) as http:
            assert http.get("/").status_code == 200  # the shell holds no data
            assert 'data-read-token="1"' in http.get("/").text
            body = {"q": QUESTION, "items": [{"collection": name, "text": "Kat malikleri kurulu toplanır."}]}
            r = http.post("/v1/highlights", json=body)
            assert r.status_code == 401 and r.headers["content-type"].startswith("application/problem+json")
            assert http.get("/v1/documents/1/file").status_code == 401
            pdf = _doc_id(http, name, "kat-mulkiyeti-excerpt.pdf", {"Authorization": f"Bearer {READ_TOKEN}"})
            assert http.get(f"/v1/documents/{pdf}/pages/1/image").status_code == 401
            assert (
                http.get(
                    f"/v1/documents/{pdf}/pages/1/image", headers={"Authorization": f"Bearer {READ_TOKEN}"}
                ).json()["page_count"]
                == 5
            )
            assert http.get("/v1/access").json()["read"] is False
            for tok in (READ_TOKEN, TOKEN):
                auth = {"Authorization": f"Bearer {tok}"}
                assert http.get("/v1/access", headers=auth).json()["read"] is True
                assert http.post("/v1/highlights", json=body, headers=auth).status_code == 200
    finally:
        c.close()


def test_highlights_match_the_cli(client: TestClient, ctx: Context, samples: tuple[str, Path]) -> None:
    name, _ = samples
    hits = ctx.search.search(QUESTION, name, k=3)
    expected = ctx.search.highlights(QUESTION, hits)
    r = client.post(
        "/v1/highlights",
        json={"q": QUESTION, "items": [{"collection": h.collection, "text": h.quote.text} for h in hits]},
    )
    assert r.status_code == 200, r.text
    got = [[tuple(s) for s in item] for item in r.json()["highlights"]]
    assert got == expected and any(got)
    words = {hits[0].quote.text[a:b].lower() for a, b in got[0]}
    assert words & {"kat", "malikleri", "kurulu", "toplanır"}


def test_highlights_bad_requests_are_problems(client: TestClient, samples: tuple[str, Path]) -> None:
    name, _ = samples
    for body, status in (
        ({"q": "", "items": []}, 422),
        ({"q": "x", "items": [{"collection": name, "text": "x" * 30_000}]}, 422),
        ({"q": "x", "items": [{"collection": "no_such_collection_x", "text": "x"}]}, 404),
        ({"q": "x", "items": [{"collection": name, "text": "x", "extra": 1}]}, 422),
        ({"q": "   ", "items": [{"collection": name, "text": "x"}]}, 400),
    ):
        r = client.post("/v1/highlights", json=body)
        assert r.status_code == status, (body, r.text)
        assert r.headers["content-type"].startswith("application/problem+json")


def test_hits_carry_document_ids(client: TestClient, samples: tuple[str, Path]) -> None:
    name, _ = samples
    hits = client.post("/v1/search", json={"q": QUESTION, "collections": [name], "k": 3}).json()["hits"]
    assert hits and all(isinstance(h["document_id"], int) for h in hits)


# ---------------------------------------------------------------------------------------------- original files
def _doc_id(client: TestClient, name: str, source: str, headers: dict[str, str] | None = None) -> int:
    r = client.get(f"/v1/collections/{name}/documents/{quote(source)}", headers=headers)
    assert r.status_code == 200, r.text
    return int(r.json()["id"])


def test_original_pdf_inline_and_others_as_attachments(
    client: TestClient, ctx: Context, samples: tuple[str, Path]
) -> None:
    name, docs = samples
    pdf = _doc_id(client, name, "kat-mulkiyeti-excerpt.pdf")
    r = client.get(f"/v1/documents/{pdf}/file")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/pdf"
    assert r.headers["content-disposition"].startswith("inline;")
    assert r.content == (docs / "kat-mulkiyeti-excerpt.pdf").read_bytes()
    assert r.headers["x-content-type-options"] == "nosniff" and "set-cookie" not in r.headers
    html = _doc_id(client, name, "swriter_guide_hyphen_prevent.html")
    h = client.get(f"/v1/documents/{html}/file")
    assert h.status_code == 200 and h.headers["content-type"].startswith("text/html")
    # shown, not downloaded (issue 28), but in a sandbox: no script, an opaque origin
    assert h.headers["content-disposition"].startswith("inline;")
    csp = h.headers["content-security-policy"]
    assert csp.startswith("sandbox;") and "allow-scripts" not in csp and "allow-same-origin" not in csp
    assert "default-src 'none'" in csp and "script-src" not in csp
    md = client.get(f"/v1/documents/{_doc_id(client, name, 'your-first-component.md')}/file")
    assert md.status_code == 200 and md.headers["content-type"].startswith("text/plain")
    assert md.headers["content-disposition"].startswith("inline;") and md.headers["content-security-policy"]
    hostile = client.get(f"/v1/documents/{_doc_id(client, name, HOSTILE_NAME)}/file")
    assert hostile.status_code == 200
    cd = hostile.headers["content-disposition"]
    assert "<" not in cd.split("filename*=")[0] and "filename*=UTF-8''k%C3%B6t%C3%BC%20%3Cimg" in cd
    assert client.get("/v1/documents/999999999/file").status_code == 404
    assert client.get("/v1/documents/0/file").status_code == 422
    assert client.get("/v1/documents/abc/file").status_code == 422
    assert client.get("/v1/documents/..%2F..%2Fetc%2Fpasswd/file").status_code in (404, 422)


def test_original_file_swapped_for_a_symlink_is_refused(
    client: TestClient, ctx: Context, samples: tuple[str, Path], tmp_path: Path
) -> None:
    name, docs = samples
    doc = _doc_id(client, name, "your-first-component.md")
    target = docs / "your-first-component.md"
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    saved = target.read_bytes()
    target.unlink()
    try:
        r = client.get(f"/v1/documents/{doc}/file")
        assert r.status_code == 404 and "gone" in r.json()["detail"], r.text
        target.symlink_to(secret)
        r = client.get(f"/v1/documents/{doc}/file")
        assert r.status_code == 404 and "top secret" not in r.text, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        target.unlink()
        target.write_bytes(saved + b"\nedited after the ingest\n")
        r = client.get(f"/v1/documents/{doc}/file")
        assert r.status_code == 404 and "changed since it was ingested" in r.json()["detail"], r.text
    finally:
        target.unlink(missing_ok=True)
        target.write_bytes(saved)
    assert client.get(f"/v1/documents/{doc}/file").status_code == 200


def test_open_original_rules(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    f = real / "a.pdf"
    f.write_bytes(b"%PDF-1.4 test")
    meta, handle = open_original("docs/a.pdf", str(f))
    with handle:
        assert handle.read() == b"%PDF-1.4 test"
    assert meta.content_type == "application/pdf" and meta.disposition == "inline" and meta.size == 13
    assert meta.content_disposition() == "inline; filename=\"a.pdf\"; filename*=UTF-8''a.pdf"
    link_dir = tmp_path / "link"
    link_dir.symlink_to(real, target_is_directory=True)
    (real / "b.txt").write_text("x")
    (real / "c.md").symlink_to(real / "b.txt")
    os.mkfifo(real / "d.txt")
    cases = {
        None: "remembered",
        "": "remembered",
        "relative/a.pdf": "symbolic link",
        str(link_dir / "a.pdf"): "symbolic link",  # a folder on the way is a link
        str(real / ".." / "real" / "a.pdf"): "symbolic link",  # not the real path
        str(real / "c.md"): "symbolic link",  # the file itself is a link
        str(real / "missing.pdf"): "gone",
        str(real / "d.txt"): "regular file",  # a FIFO
        str(real): "regular file",  # a folder
    }
    for origin, words in cases.items():
        with pytest.raises(OriginalFileUnavailable) as err:
            open_original("x", origin)
        assert words in str(err.value), (origin, str(err.value))
    meta, handle = open_original("notes/b.txt", str(real / "b.txt"))
    handle.close()
    assert meta.disposition == "inline" and meta.content_type == "text/plain; charset=utf-8"  # as text (issue 28)
    for origin in filter(None, cases):  # messages name the document, never the server's folders (issue 53/54)
        with pytest.raises(OriginalFileUnavailable) as err:
            open_original("x", origin)
        assert str(real) not in str(err.value) and str(link_dir) not in str(err.value), str(err.value)
    digest = hashlib.sha256(b"x").hexdigest()
    meta, handle = open_original("notes/b.txt", str(real / "b.txt"), digest)
    with handle:
        assert handle.read() == b"x"  # hashed, then rewound
    with pytest.raises(OriginalFileUnavailable, match="changed since it was ingested"):
        open_original("notes/b.txt", str(real / "b.txt"), "0" * 64)


def _luminance(hex_colour: str) -> float:
    r, g, b = (int(hex_colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4))

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_colours_meet_wcag_aa(client: TestClient) -> None:
    css = client.get("/static/app.css").text
    var = dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-f]{6})", css))
    white = "#ffffff"
    text_pairs = {
        "text": (var["fg"], var["bg"]),
        "muted text": (var["muted"], var["bg"]),
        "muted on panel": (var["muted"], var["panel"]),
        "links": (var["accent"], var["bg"]),
        "links on panel": (var["accent"], var["panel"]),
        "button text": (white, var["accent"]),
        "highlighted words": ("#000000", var["mark"]),
        "quote text": (var["fg"], var["quote"]),
        "danger button": (white, var["danger"]),
        "focus ring": (var["focus"], var["bg"]),
    }
    for what, (fg, bg) in text_pairs.items():
        assert contrast(fg, bg) >= 4.5, (what, fg, bg, contrast(fg, bg))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    q=st.text(min_size=0, max_size=60),
    texts=st.lists(st.text(max_size=200), max_size=4),
    collection=st.sampled_from(["", "x", "no_such", "a b", "ğüşiİı"]),
)
def test_highlights_never_fail_on_odd_input(
    client: TestClient, samples: tuple[str, Path], q: str, texts: list[str], collection: str
) -> None:
    name, _ = samples
    items = [{"collection": name if i % 2 else collection or name, "text": t} for i, t in enumerate(texts)]
    r = client.post("/v1/highlights", json={"q": q, "items": items})
    assert r.status_code < 500, r.text
    if r.status_code == 200:
        spans = r.json()["highlights"]
        assert len(spans) == len(items)
        for item, marks in zip(items, spans, strict=True):
            assert all(0 <= a < b <= len(item["text"]) for a, b in marks)


# ---------------------------------------------------------------------------------------------- the PDF page (issue 28)
def test_locate_matches_on_letters_and_digits() -> None:
    from kaynak.originals.pdfpage import locate

    layer = "Madde 29 –\r\nKat malikleri ku-\r\nrulu, yılda bir defadan az olmamak üzere toplanır."
    assert locate(layer, "Kat malikleri kurulu, yılda bir") == (layer.index("Kat"), layer.index("bir") + 3)
    assert locate(layer, "KAT MALİKLERİ KURULU") is not None  # case and Turkish i's folded
    # a dropped glyph in one extractor: the pieces still place the passage
    dropped = layer.replace("olmamak", "olmamk")
    span = locate(dropped, "Kat malikleri kurulu, yılda bir defadan az olmamak üzere toplanır.")
    assert span is not None and span[0] == dropped.index("Kat") and span[1] == len(dropped) - 1
    assert locate(layer, "tamamen başka bir cümle burada geçiyor") is None
    assert locate(layer, "") is None and locate("", "Kat") is None


def test_render_page_marks_the_quote_within_caps() -> None:
    from PIL import Image

    from kaynak.loaders.pdf import load_pdf
    from kaynak.originals.pdfpage import MAX_PIXELS, render_page

    path = REPO / "samples" / "kat-mulkiyeti-excerpt.pdf"
    data = path.read_bytes()
    page = load_pdf(path, data).pages[3]
    quote = page.text[200:500]
    out = render_page(data, page.number, quote, width=900)
    assert out.found and out.boxes and out.page_count == 5
    for left, top, w, h in out.boxes:
        assert 0 <= left <= 1 and 0 <= top <= 1 and 0 < w <= 1 and 0 < h <= 1
    image = Image.open(__import__("io").BytesIO(out.png))
    assert image.size == (out.width, out.height) and abs(out.width - 900) <= 2
    big = render_page(data, 1, None, width=100_000)  # asked for a huge page: capped
    assert big.width * big.height <= MAX_PIXELS * 1.01 and not big.found and not big.boxes
    with pytest.raises(Exception, match="no page 9"):
        render_page(data, 9, None)
    with pytest.raises(Exception, match="cannot be opened"):
        render_page(b"%PDF-1.4 broken", 1, None)


def test_page_image_endpoint(client: TestClient, ctx: Context, samples: tuple[str, Path]) -> None:
    import base64

    name, _ = samples
    hit = next(h for h in ctx.search.search(QUESTION, name, k=10) if h.source.endswith(".pdf"))
    url = f"/v1/documents/{hit.document_id}/pages/{hit.page}/image"
    r = client.get(url, params={"start": hit.quote.char_start, "end": hit.quote.char_end, "width": 800})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["found"] and body["boxes"] and body["page"] == hit.page and body["source"] == hit.source
    assert body["image"].startswith("data:image/png;base64,")
    assert base64.b64decode(body["image"].split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    plain = client.get(url).json()
    assert not plain["found"] and plain["boxes"] == []
    assert client.get(url, params={"start": 5}).status_code == 400  # both ends, or neither
    assert client.get(url, params={"start": 10, "end": 5}).status_code == 400
    assert client.get(url, params={"width": 50_000}).status_code == 422  # over the width cap
    assert client.get(f"/v1/documents/{hit.document_id}/pages/99/image").status_code in (400, 404)
    md = _doc_id(client, name, "your-first-component.md")
    r = client.get(f"/v1/documents/{md}/pages/1/image")
    assert r.status_code == 400 and "not a PDF" in r.json()["detail"]
    assert client.get("/v1/documents/999999999/pages/1/image").status_code == 404


def test_every_string_the_script_uses_exists_in_both_languages() -> None:
    """``T.key`` and ``fmt('key', …)`` in app.js name keys of the strings table (a missing one shows its raw key
    to a person); keys built from a prefix (``'file_' + kind``) are checked by their own tests."""
    script = (REPO / "src" / "kaynak" / "web" / "static" / "app.js").read_text(encoding="utf-8")
    formatted = " ".join(re.findall(r"fmt\([^,)]*", script))
    used = set(re.findall(r"\bT\.(\w+)", script)) | set(re.findall(r"'(\w+)'", formatted))
    used = {k for k in used if not k.endswith("_")}
    for lang in ("tr", "en"):
        assert not used - set(STRINGS[lang]), (lang, sorted(used - set(STRINGS[lang])))
