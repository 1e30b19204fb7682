"""The web page in a real headless Chromium (the system's, driven by Selenium with the system chromedriver; nothing
is downloaded). Skips with the reason when the browser, its driver or selenium is missing.

Covers: a search shows the verbatim quote with the query's words highlighted, without reloading the page; the PDF
opens at the page; the page-text view scrolls the quote into view; context expands in place; write controls
appear only with the write token; upload then find the new file, then delete it; a document containing HTML and
script shows as text; Turkish UI strings and Turkish upper-casing; empty-collection, no-result and API-error
messages; phone width and keyboard use. Issue 28: the collection choice kept across reload, language switch and
a shared link; Back and Esc out of the page view; the Collections page at phone width; errors as one sentence in
Turkish and English for each failing upload class; failing files per collection; delete and skipped-file
feedback; the cited passage highlighted on the drawn PDF page; Markdown originals shown as text; titles, folded
repeats, monospace code, one focus box, no gap after more context; weak-match marks; the small things.
Screenshots of the main screens go to ``KAYNAK_TEST_ARTIFACTS`` (default: ``<tmp>/kaynak-web-artifacts``), with
the page's own time-to-first-result measurements.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kaynak.config import load_settings
from kaynak.context import Context
from kaynak.embeddings.hashing import HashEmbedder
from kaynak.errors import CollectionNotFound
from kaynak.types import Chunk, Page
from testkit.servers import running
from testkit.webapp import HOSTILE_NAME, hash_context, ingest_samples, make_app

CHROMIUM = os.environ.get("KAYNAK_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = os.environ.get("KAYNAK_CHROMEDRIVER") or shutil.which("chromedriver") or "/usr/bin/chromedriver"
try:
    from selenium.common.exceptions import StaleElementReferenceException

    HAVE_SELENIUM = True
except ImportError:  # pragma: no cover - the test extra installs it
    HAVE_SELENIUM = False
    StaleElementReferenceException = Exception  # type: ignore[assignment,misc]

pytestmark = [
    pytest.mark.skipif(not HAVE_SELENIUM, reason="selenium is not installed (pip install -e '.[test]')"),
    pytest.mark.skipif(
        not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
        reason="no system Chromium/chromedriver (apt-get install chromium chromium-driver); browser tests skipped",
    ),
]

TOKEN = "browser-write-token"
QUESTION_TR = "Kat malikleri kurulu ne zaman toplanır?"
QUESTION_EN = "How do I stop a word from being hyphenated?"
ARTIFACTS = Path(os.environ.get("KAYNAK_TEST_ARTIFACTS") or Path(tempfile.gettempdir()) / "kaynak-web-artifacts")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,900",
]


# ---------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def ctx(data_dir: Path, database_url: str) -> Iterator[Context]:
    c = hash_context(data_dir, database_url, api_token=TOKEN)
    yield c
    c.close()


@pytest.fixture(scope="module")
def collection(ctx: Context, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    name = "ornekler_" + os.urandom(3).hex()
    ingest_samples(ctx, name, tmp_path_factory.mktemp("webdocs"))
    # a two-page document stored with ingest warnings (as a loader would leave them)
    col = ctx.store.get_collection(name)
    pages = [Page(1, "Birinci sayfa: ısıtma giderleri paylaşılır."), Page(2, "İkinci sayfa: asansör bakımı yapılır.")]
    chunks = [Chunk(i, p.number, None, 0, len(p.text), p.text) for i, p in enumerate(pages)]
    ctx.store.replace_document(
        col,
        "uyarili/rapor.txt",
        "0" * 64,
        "Uyarılı rapor",
        {},
        pages,
        chunks,
        HashEmbedder().embed_passages([c.text for c in chunks]),
        warnings=["page 3: no text layer <b>(scan?)</b>"],
    )
    yield name
    ctx.ingest.delete_collection(name)


@pytest.fixture(scope="module")
def base(ctx: Context, collection: str) -> Iterator[str]:
    with running(make_app(ctx)) as url:
        yield url


@pytest.fixture(scope="module")
def browsers() -> Iterator[Callable[[str], Any]]:
    """``browser(lang)``: one Chromium per Accept-Language, each with a fresh profile, closed at the end."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opened: dict[str, Any] = {}
    profiles: list[str] = []

    def get(lang: str) -> Any:
        if lang not in opened:
            options = webdriver.ChromeOptions()
            options.binary_location = CHROMIUM
            profile = tempfile.mkdtemp(prefix="kaynak-chromium-")
            profiles.append(profile)
            for flag in [*FLAGS, f"--user-data-dir={profile}", f"--lang={lang}"]:
                options.add_argument(flag)
            options.add_experimental_option("prefs", {"intl.accept_languages": lang})
            options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
            driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
            driver.set_page_load_timeout(30)
            opened[lang] = driver
        return opened[lang]

    yield get
    for driver in opened.values():
        driver.quit()
    for profile in profiles:
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def tr(browsers: Callable[[str], Any], base: str) -> Any:
    driver = browsers("tr-TR,tr")
    open_page(driver, base)
    return driver


@pytest.fixture
def en(browsers: Callable[[str], Any], base: str) -> Any:
    driver = browsers("en-US,en")
    open_page(driver, base)
    return driver


# ---------------------------------------------------------------------------------------------- helpers
def open_page(driver: Any, base: str, query: str = "") -> None:
    driver.set_window_size(1280, 900)
    driver.get(base + "/")
    driver.execute_script("sessionStorage.clear()")
    driver.get(base + "/" + query)
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def wait(driver: Any, condition: Callable[[Any], Any], timeout: float = 20) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def css(driver: Any, selector: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, selector)


def css_all(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def shot(driver: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def search(driver: Any, query: str, collection: str | None = None) -> list[Any]:
    """Type ``query`` into the box, press Enter, wait for highlighted results (or a status message)."""
    from selenium.webdriver.common.keys import Keys

    if collection is not None:
        pick(driver, [collection])
    before = driver.execute_script("return document.body.dataset.highlighted || ''")
    box = css(driver, "#q")
    box.clear()
    box.send_keys(query + Keys.ENTER)
    wait(
        driver,
        lambda d: d.execute_script(
            "const s = document.getElementById('status').textContent;"
            "return (document.body.dataset.highlighted || '') !== arguments[0] || (s && !s.endsWith('…'))"
            " || !document.getElementById('alert').hidden",
            before,
        ),
    )
    wait(
        driver,
        lambda d: d.execute_script(
            "return !document.querySelector('#results li')"
            " || (document.body.dataset.highlighted || '') !== arguments[0]",
            before,
        ),
    )
    return css_all(driver, "#results > li")


def pick(driver: Any, names: list[str]) -> None:
    """Choose exactly these collections in the picker (without searching)."""
    wait(
        driver,
        lambda d: d.execute_script(
            "const have = [...document.querySelectorAll('#collection-boxes input')].map(b => b.value);"
            "return arguments[0].every(n => have.includes(n))",
            names,
        ),
    )
    driver.execute_script(
        "document.getElementById('all-collections').checked = false;"
        "for (const b of document.querySelectorAll('#collection-boxes input'))"
        " b.checked = arguments[0].includes(b.value);",
        names,
    )


def record(name: str, value: Any) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / "measurements.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data[name] = value
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False))


# ---------------------------------------------------------------------------------------------- tests
def test_search_shows_highlighted_verbatim_quote_without_reload(tr: Any, collection: str, ctx: Context) -> None:
    tr.execute_script("window.__sameDocument = 'yes'")
    hits = search(tr, QUESTION_TR, collection)
    assert hits, css(tr, "#status").text
    first = hits[0]
    assert first.find_element("css selector", ".path").text == "kat-mulkiyeti-excerpt.pdf"
    assert "KAT MÜLKİYETİ" in first.find_element("css selector", "h3 a").text  # the title, the path below it
    marks = [m.text.lower() for m in first.find_elements("css selector", "blockquote mark.term")]
    assert {"kat", "malikleri", "kurulu"} <= set(marks), marks
    # the quote is verbatim: exactly the API's quote text
    api_hits = ctx.search.search(QUESTION_TR, collection, k=10)
    quote_text = tr.execute_script("return document.querySelector('#results blockquote').textContent")
    assert quote_text == api_hits[0].quote.text
    where = first.find_element("css selector", ".where").text
    assert "SAYFA" in where and str(api_hits[0].page) in where  # Turkish label, upper-cased by CSS
    assert tr.execute_script("return window.__sameDocument") == "yes", "results must arrive without a reload"
    assert "q=" in tr.current_url  # the search is in the address, so it can be shared or reloaded
    ranks = first.find_element("css selector", "details.ranks")
    assert not ranks.get_attribute("open")
    ranks.find_element("css selector", "summary").click()
    assert "anlam sırası" in ranks.text and "sözcük sırası" in ranks.text
    shot(tr, "search-results-tr")
    timings = tr.execute_script(
        "return performance.getEntriesByType('measure').filter(m => m.name.startsWith('kaynak:'))"
        ".map(m => [m.name, m.duration])"
    )
    names = {n for n, _ in timings}
    assert {"kaynak:first-result", "kaynak:first-highlighted"} <= names
    record("first_search_tr_ms", dict(timings))
    # nothing but this server was asked for anything (no fonts, CDNs, analytics)
    foreign = tr.execute_script(
        "return performance.getEntriesByType('resource').map(r => r.name)"
        ".filter(n => !n.startsWith(location.origin) && !n.startsWith('blob:'))"
    )
    assert foreign == []
    problems = [
        e["message"]
        for e in tr.get_log("browser")
        if "Content Security Policy" in e["message"] or e["level"] == "SEVERE"
    ]
    assert problems == [], problems


def test_pdf_opens_at_the_page(tr: Any, collection: str, base: str, ctx: Context) -> None:
    hits = search(tr, QUESTION_TR, collection)
    link = hits[0].find_element("css selector", "a.original")
    href = link.get_attribute("href")
    page = ctx.search.search(QUESTION_TR, collection, k=1)[0].page
    assert href.startswith(base + "/v1/documents/") and href.endswith(f"/file#page={page}"), href
    assert link.get_attribute("target") == "_blank" and "noopener" in link.get_attribute("rel")
    document_id = int(href.split("/v1/documents/")[1].split("/")[0])
    ctx.search.document_origin(document_id)
    main = tr.current_window_handle
    link.click()
    wait(tr, lambda d: len(d.window_handles) > 1)
    tab = next(h for h in tr.window_handles if h != main)
    tr.switch_to.window(tab)
    try:
        wait(tr, lambda d: d.current_url.endswith(f"#page={page}"))
        time.sleep(1.0)
        shot(tr, "pdf-at-page")
        kind = tr.execute_script("return document.contentType")
        assert kind == "application/pdf", kind
    finally:
        tr.close()
        tr.switch_to.window(main)


def test_context_expands_in_place(tr: Any, collection: str) -> None:
    hits = search(tr, QUESTION_TR, collection)
    first = hits[0]
    quote = first.find_element("css selector", "blockquote").text
    button = first.find_element("css selector", ".actions button")
    assert button.get_attribute("aria-expanded") == "false" and button.text == "Daha fazla bağlam göster"
    button.click()
    wait(tr, lambda d: button.get_attribute("aria-expanded") == "true")
    box = first.find_element("css selector", ".context")
    assert box.is_displayed()
    assert len(box.text) > len(quote)
    assert first.find_elements("css selector", ".context .ctx-near"), "neighbouring chunks are shown"
    assert first.find_element("css selector", ".context mark.quote-mark").text.strip() == quote.strip()
    assert len(css_all(tr, "#results > li")) == len(hits), "expanded in place, results kept"
    shot(tr, "context-expanded")
    button.click()
    wait(tr, lambda d: button.get_attribute("aria-expanded") == "false")
    assert not box.is_displayed()


def test_text_source_opens_at_the_quote(en: Any, collection: str) -> None:
    hits = search(en, QUESTION_EN, collection)
    html_hit = next(h for h in hits if ".html" in h.find_element("css selector", ".path").text)
    assert "SECTION" in html_hit.find_element("css selector", ".where").text  # headings become sections
    quote = html_hit.find_element("css selector", "blockquote").text
    html_hit.find_element("css selector", "h3 a").click()
    wait(en, lambda d: d.execute_script("return document.activeElement && document.activeElement.id === 'quote'"))
    assert css(en, "#viewer-view").is_displayed() and not css(en, "#search-view").is_displayed()
    mark = css(en, "#quote")
    assert mark.text.strip() == quote.strip()
    in_view = en.execute_script(
        "const r = document.getElementById('quote').getBoundingClientRect();"
        "return r.top >= 0 && r.top < window.innerHeight"
    )
    assert in_view, "the quote is scrolled into view"
    assert "page" in css(en, "#viewer-heading").text
    shot(en, "page-text-at-quote")
    css(en, "#viewer-back").click()
    wait(en, lambda d: css(d, "#search-view").is_displayed())


def test_write_controls_only_with_the_token(en: Any, collection: str) -> None:
    assert not css(en, ".tab[data-view=upload]").is_displayed()
    assert not css(en, "#upload-view").is_displayed()
    browse_documents(en, collection)
    open_document_row(en, "your-first-component.md")
    assert not css_all(en, "#documents-table button.danger"), "no delete without the token"
    css(en, "#write-sign-in").click()
    wait(en, lambda d: css(d, "#token-view").is_displayed())
    css(en, "#token-input").send_keys("wrong-token\n")
    wait(en, lambda d: css(d, "#token-error").text)
    assert css(en, "#token-error").text == "This token is not valid."
    assert not css(en, ".tab[data-view=upload]").is_displayed()
    assert en.execute_script("return sessionStorage.getItem('kaynak.token')") is None
    field = css(en, "#token-input")
    field.clear()
    field.send_keys(TOKEN + "\n")
    wait(en, lambda d: css(d, ".tab[data-view=upload]").is_displayed())
    assert css(en, "#write-on").is_displayed()
    assert en.execute_script("return sessionStorage.getItem('kaynak.token')") == TOKEN
    assert en.execute_script("return document.cookie") == "", "the token is never a cookie"
    open_document_row(en, "your-first-component.md")
    assert css_all(en, "#documents-table button.danger"), "delete appears with the token"
    css(en, "#sign-out").click()
    wait(en, lambda d: not css(d, ".tab[data-view=upload]").is_displayed())


def browse_documents(driver: Any, collection: str) -> None:
    from selenium.webdriver.common.by import By

    css(driver, ".tab[data-view=browse]").click()
    # the table re-renders when the collections arrive: find and click in one retried step
    wait(
        driver,
        lambda d: (
            d.find_element(By.XPATH, f"//table[@id='collections-table']//button[text()='{collection}']").click() or True
        ),
    )
    wait(driver, lambda d: css(d, "#documents-panel").is_displayed() and css_all(d, "#documents-table tbody tr"))


def open_document_row(driver: Any, source: str) -> None:
    """Expand the document's row (the table re-renders on changes, so look the button up afresh)."""
    xpath = f"//table[@id='documents-table']//th/button[text()={json.dumps(source)}]"
    for _ in range(10):
        try:
            button = wait(driver, lambda d: d.find_element("xpath", xpath))
            if button.get_attribute("aria-expanded") != "true":
                button.click()
            wait(driver, lambda d: d.find_element("xpath", xpath).get_attribute("aria-expanded") == "true")
            return
        except StaleElementReferenceException:
            time.sleep(0.1)
    raise AssertionError(f"could not open the row of {source}")


def test_browse_documents_pages_warnings_and_sorting(en: Any, collection: str) -> None:
    browse_documents(en, collection)
    row = next(r for r in css_all(en, "#collections-table tbody tr") if collection in r.text)
    assert "Turkish" in row.text and "hash" in row.text  # language and embedder
    sources = [b.text for b in css_all(en, "#documents-table tbody th button")]
    assert sources == sorted(sources) and HOSTILE_NAME in sources
    css(en, "#documents-table thead button[data-sort=page_count]").click()
    css(en, "#documents-table thead button[data-sort=page_count]").click()  # twice: descending
    th = css(en, "#documents-table thead th:nth-child(3)")
    assert th.get_attribute("aria-sort") == "descending"
    assert css_all(en, "#documents-table tbody th button")[0].text == "kat-mulkiyeti-excerpt.pdf"
    open_document_row(en, "uyarili/rapor.txt")
    detail = css(en, "#documents-table tr.doc-detail")
    assert "page 3: no text layer <b>(scan?)</b>" in detail.text  # shown as text
    assert [b.text for b in detail.find_elements("css selector", ".pages button")] == ["1", "2"]
    shot(en, "browse-warnings")
    detail.find_elements("css selector", ".pages button")[1].click()
    wait(en, lambda d: "İkinci sayfa" in css(d, "#viewer-text").text)
    assert css(en, "#viewer-heading").text == "uyarili/rapor.txt — page 2"
    assert css(en, "#viewer-next").get_attribute("disabled") and not css(en, "#viewer-prev").get_attribute("disabled")
    css(en, "#viewer-prev").click()
    wait(en, lambda d: "Birinci sayfa" in css(d, "#viewer-text").text)
    css(en, "#viewer-back").click()
    wait(en, lambda d: css(d, "#browse-view").is_displayed())


def test_upload_then_find_then_delete(en: Any, collection: str, tmp_path: Path) -> None:
    en.execute_script("sessionStorage.setItem('kaynak.token', arguments[0])", TOKEN)
    en.refresh()
    wait(en, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    css(en, ".tab[data-view=upload]").click()
    doc = tmp_path / "zebercet-notlari.md"
    doc.write_text("# Zebercet\n\nZebercet defteri her salı güncellenir ve arşive kaldırılır.\n", encoding="utf-8")
    field = css(en, "#up-collection")
    field.clear()
    field.send_keys(collection)
    css(en, "#up-files").send_keys(str(doc))
    en.execute_script(
        "window.__statuses = []; new MutationObserver(() => window.__statuses.push("
        "document.getElementById('up-status').textContent)).observe(document.getElementById('up-status'),"
        " {childList: true, characterData: true, subtree: true})"
    )
    css(en, "#up-submit").click()
    wait(en, lambda d: "1 added" in css(d, "#up-status").text, timeout=60)
    statuses = en.execute_script("return window.__statuses")
    assert any(s.startswith("Sending") for s in statuses) and "Reading and ingesting the documents…" in statuses
    shot(en, "upload-done")
    css(en, ".tab[data-view=search]").click()
    hits = search(en, "zebercet defteri", collection)
    assert hits and hits[0].find_element("css selector", ".path").text == "zebercet-notlari.md"
    browse_documents(en, collection)
    css(en, "#doc-filter").send_keys("ZEBERCET")
    wait(en, lambda d: len(css_all(d, "#documents-table tbody th button")) == 1)
    open_document_row(en, "zebercet-notlari.md")
    shot(en, "browse-documents")
    css(en, "#documents-table button.danger").click()
    alert = wait(en, lambda d: d.switch_to.alert)
    assert "zebercet-notlari.md" in alert.text
    alert.accept()
    wait(
        en,
        lambda d: (
            "Deleted" in css(d, "#status").text
            or not any(b.text == "zebercet-notlari.md" for b in css_all(d, "#documents-table tbody th button"))
        ),
    )
    wait(en, lambda d: not any(b.text == "zebercet-notlari.md" for b in css_all(d, "#documents-table tbody th button")))
    css(en, ".tab[data-view=search]").click()
    hits = search(en, "zebercet defteri", collection)
    assert all(h.find_element("css selector", ".path").text != "zebercet-notlari.md" for h in hits)


def test_upload_a_folder(en: Any, ctx: Context, collection: str, tmp_path: Path) -> None:
    folder = tmp_path / "klasor"
    (folder / "alt").mkdir(parents=True)
    (folder / "a.md").write_text("# Alfa\n\nKuşkonmaz çorbası tarifi.\n", encoding="utf-8")
    (folder / "alt" / "b.txt").write_text("Kuşkonmaz haziranda toplanır.\n", encoding="utf-8")
    (folder / "resim.xyz").write_bytes(b"not a document")  # skipped by the page: kaynak does not read it
    target = "klasor_" + os.urandom(3).hex()
    en.execute_script("sessionStorage.setItem('kaynak.token', arguments[0])", TOKEN)
    en.refresh()
    wait(en, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    try:
        css(en, ".tab[data-view=upload]").click()
        css(en, "#up-collection").send_keys(target)
        css(en, "#up-folder").send_keys(str(folder))
        css(en, "#up-submit").click()
        wait(en, lambda d: "2 added" in css(d, "#up-status").text, timeout=60)
        sources = sorted(d.source for d in ctx.search.list_documents(target))
        assert sources == ["klasor/a.md", "klasor/alt/b.txt"], sources
        # several collections at once: hits from both, each labelled with its collection
        css(en, ".tab[data-view=search]").click()
        pick(en, [collection, target])
        hits = search(en, "kuşkonmaz")
        labels = {h.find_element("css selector", ".where").text.split("COLLECTION")[-1].split()[0] for h in hits}
        assert labels == {collection, target}, labels
        assert en.current_url.count("c=") == 2
    finally:
        en.execute_script("sessionStorage.clear()")
        with contextlib.suppress(CollectionNotFound):  # the upload may have failed before creating it
            ctx.ingest.delete_collection(target)


def test_document_with_script_shows_as_text(tr: Any, collection: str) -> None:
    title = tr.title
    hits = search(tr, "zararlı betik yalnızca metin olarak görünmeli", collection)
    hostile = next(h for h in hits if h.find_element("css selector", ".path").text == HOSTILE_NAME)
    text = hostile.find_element("css selector", "blockquote").text
    assert "<script>window.__pwned = true</script>" in text
    assert not hostile.find_elements("css selector", "blockquote script, blockquote b, h3 img, h3 script")
    assert tr.execute_script("return window.__pwned === undefined && !document.querySelector('#results img')")
    hostile.find_element("css selector", "h3 a").click()
    wait(tr, lambda d: css(d, "#viewer-view").is_displayed() and "<script>" in css(d, "#viewer-text").text)
    assert not css_all(tr, "#viewer-text script")
    assert HOSTILE_NAME in css(tr, "#viewer-heading").text
    assert tr.title == title and tr.execute_script("return window.__pwned === undefined")
    shot(tr, "hostile-as-text")
    css(tr, "#viewer-back").click()


def test_turkish_ui_strings_and_casing(tr: Any, base: str, collection: str) -> None:
    assert tr.find_element("css selector", "html").get_attribute("lang") == "tr"
    assert css(tr, ".tab[data-view=search]").text == "Ara"
    assert css(tr, ".tab[data-view=browse]").text == "Koleksiyonlar"
    assert css(tr, "label[for=q]").text == "Soru ya da sözcükler"
    assert css(tr, "#write-sign-in").text == "Yazma anahtarı gir"
    css(tr, ".tab[data-view=browse]").click()
    header = css_all(tr, "#collections-table thead th")[2]
    assert tr.execute_script("return arguments[0].textContent", header) == "Gömme modeli"
    assert header.value_of_css_property("text-transform") == "uppercase"
    assert tr.execute_script("return arguments[0].closest('[lang]').lang", header) == "tr"
    # what the browser draws: the upper-cased label matches "GÖMME MODELİ" (dotted İ), not "GÖMME MODELI"
    # (WebDriver's element text upper-cases without the locale, so compare pixels instead)
    samples = tr.execute_script(
        "const box = document.createElement('div'); box.id = 'casing-check';"
        "for (const [text, transform] of [['gömme modeli dil', 'uppercase'], ['GÖMME MODELİ DİL', 'none'],"
        "                                  ['GÖMME MODELI DIL', 'none']]) {"
        "  const s = document.createElement('span'); s.className = 'label'; s.textContent = text;"
        "  s.style.textTransform = transform; box.append(s, document.createElement('br')); }"
        "document.getElementById('browse-view').prepend(box); return [...box.querySelectorAll('span')];"
    )
    drawn, turkish, wrong = (s.screenshot_as_png for s in samples)
    assert drawn == turkish and drawn != wrong, "Turkish upper-casing (i → İ) is not applied"
    tr.execute_script("document.getElementById('casing-check').remove()")
    row = wait(tr, lambda d: next((r for r in css_all(d, "#collections-table tbody tr") if collection in r.text), None))
    assert "Türkçe" in row.text
    shot(tr, "collections-tr")
    css(tr, ".langs a[data-lang=en]").click()
    wait(tr, lambda d: d.find_element("css selector", "html").get_attribute("lang") == "en")
    assert css(tr, ".tab[data-view=search]").text == "Search"


def test_messages_for_empty_collection_and_no_results(en: Any, ctx: Context, collection: str) -> None:
    empty = "bos_" + os.urandom(3).hex()
    ctx.ingest.create_collection(empty, "english", "hash")
    try:
        en.refresh()
        wait(en, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
        search(en, "anything at all", empty)
        status = css(en, "#status").text
        assert "Nothing ingested" in status and f"kaynak ingest FOLDER -c {empty}" in status, status
        assert css(en, "#status code").text.startswith("kaynak ingest")
        shot(en, "empty-collection")
    finally:
        ctx.ingest.delete_collection(empty)
    css(en, "#more summary").click()
    css(en, "#prefix").send_keys("no/such/folder/")
    search(en, QUESTION_EN, collection)
    assert not css_all(en, "#results > li")
    assert css(en, "#status").text.startswith("No results")
    css(en, "#prefix").clear()


def test_api_problem_is_shown(en: Any, collection: str) -> None:
    # a collection deleted after the page loaded: the API answers 404 problem+json and the page shows its detail
    en.execute_script(
        "const label = document.createElement('label'); const box = document.createElement('input');"
        "box.type = 'checkbox'; box.value = 'no_such_collection_q'; box.checked = true; label.append(box, 'gone');"
        "document.getElementById('collection-boxes').append(label);"
        "document.getElementById('all-collections').checked = false;"
    )
    css(en, "#q").send_keys("kat\n")
    wait(en, lambda d: css(d, "#alert").is_displayed())
    alert = css(en, "#alert").text
    assert alert.startswith("One of the chosen collections no longer exists") and "(404)" not in alert, alert
    css(en, "#alert details summary").click()  # the API's own words stay available under the details
    assert "(404)" in css(en, "#alert").text and "no_such_collection_q" in css(en, "#alert").text
    assert css(en, "#alert").get_attribute("role") == "alert"
    shot(en, "api-error")


def test_filters_under_more(en: Any, collection: str) -> None:
    css(en, "#more summary").click()
    assert css(en, "#mode").is_displayed()
    Select = __import__("selenium.webdriver.support.ui", fromlist=["Select"]).Select
    Select(css(en, "#mode")).select_by_value("keyword")
    css(en, "#glob").send_keys("*.html")
    hits = search(en, "hyphenation word", collection)
    sources = {h.find_element("css selector", ".path").text for h in hits}
    assert sources and all(s.endswith(".html") for s in sources), sources
    assert "mode=keyword" in en.current_url and "glob=" in en.current_url
    css(en, "#glob").clear()
    css(en, "#prefix").send_keys("uyarili/")
    hits = search(en, "asansör bakımı", collection)
    assert {h.find_element("css selector", ".path").text for h in hits} == {"uyarili/rapor.txt"}
    css(en, "#prefix").clear()
    css(en, "#meta").send_keys("no_such_key=1")
    search(en, "asansör bakımı", collection)
    assert not css_all(en, "#results > li") and css(en, "#status").text.startswith("No results")
    css(en, "#meta").clear()


def test_read_token_asked_once_per_session(browsers: Callable[[str], Any], ctx: Context, collection: str) -> None:
    reader = Context(
        load_settings(
            data_dir=ctx.settings.data_dir,
            database_url=ctx.settings.database_url,
            embedder="hash",
            api_token=TOKEN,
            read_token="reader-token",
        )
    )
    driver = browsers("en-US,en")
    try:
        with running(make_app(reader)) as url:
            driver.get(url + "/")
            driver.execute_script("sessionStorage.clear()")
            driver.get(url + "/")
            wait(driver, lambda d: css(d, "#token-view").is_displayed())
            assert not css(driver, "#search-view").is_displayed()
            assert "KAYNAK_READ_TOKEN" in css(driver, "#token-why").text
            assert not css(driver, "#token-cancel").is_displayed()
            assert not css(driver, ".tab[data-view=browse]").is_displayed()  # nothing else until the token
            shot(driver, "read-token")
            css(driver, "#token-input").send_keys("nope\n")
            wait(driver, lambda d: css(d, "#token-error").text)
            field = css(driver, "#token-input")
            field.clear()
            field.send_keys("reader-token\n")
            wait(driver, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
            assert css(driver, "#search-view").is_displayed() and css(driver, ".tab[data-view=browse]").is_displayed()
            assert not css(driver, "#write-on").is_displayed()  # a read token does not enable writes
            hits = search(driver, QUESTION_TR, collection)
            assert hits and hits[0].find_elements("css selector", "blockquote mark.term")
            driver.refresh()  # same tab, same session: not asked again
            wait(driver, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
            assert not css(driver, "#token-view").is_displayed()
            assert driver.execute_script("return document.cookie") == ""
            # with a token, the PDF opens through a blob URL at the page (a link cannot send the header)
            search(driver, QUESTION_TR, collection)
            main = driver.current_window_handle
            # after a refresh the list may be drawn once more: find the link anew until a click lands
            wait(driver, lambda d: css(d, "#results > li a.original").click() or True)
            wait(driver, lambda d: len(d.window_handles) > 1)
            driver.switch_to.window(next(h for h in driver.window_handles if h != main))
            try:
                wait(driver, lambda d: d.current_url.startswith("blob:") and "#page=" in d.current_url)
            finally:
                driver.close()
                driver.switch_to.window(main)
            driver.execute_script("sessionStorage.clear()")
    finally:
        reader.close()


def test_phone_width_and_keyboard(tr: Any, collection: str) -> None:
    from selenium.webdriver.common.keys import Keys

    tr.set_window_size(390, 844)
    hits = search(tr, QUESTION_TR, collection)
    assert hits
    overflow = tr.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"page is {overflow}px wider than a phone screen"
    shot(tr, "search-phone")
    # keyboard only: from the search box, Tab reaches the first result's link, Enter on "more context" expands it
    css(tr, "#q").click()
    reached = None
    for _ in range(600):  # the shared test database may hold many collections, each a checkbox on the way
        tr.switch_to.active_element.send_keys(Keys.TAB)
        active = tr.switch_to.active_element
        if active.get_attribute("aria-expanded") == "false" and "bağlam" in active.text:
            reached = active
            break
    assert reached is not None, "Tab never reached a result's context button"
    reached.send_keys(Keys.ENTER)
    wait(tr, lambda d: reached.get_attribute("aria-expanded") == "true")
    # every input and button has an accessible name
    unnamed = tr.execute_script(
        "return [...document.querySelectorAll('input, select, textarea, button')].filter(e => {"
        " if (e.closest('[hidden]') || e.type === 'hidden') return false;"
        " const id = e.id && document.querySelector(`label[for='${e.id}']`);"
        " return !(id || e.closest('label') || e.getAttribute('aria-label') || e.textContent.trim());"
        "}).map(e => e.outerHTML.slice(0, 80))"
    )
    assert not unnamed, unnamed
    tr.set_window_size(1280, 900)


# ---------------------------------------------------------------------------------------------- issue 28
def reload_ready(driver: Any, url: str | None = None) -> None:
    if url is None:
        driver.refresh()
    else:
        driver.get(url)
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def ticked(driver: Any) -> dict[str, bool]:
    return dict(
        driver.execute_script(
            "return [['*', document.getElementById('all-collections').checked]].concat("
            "[...document.querySelectorAll('#collection-boxes input')].map(b => [b.value, b.checked]))"
        )
    )


def test_collection_choice_survives_reload_language_switch_and_shared_link(
    tr: Any, base: str, collection: str, ctx: Context
) -> None:
    other = "diger_" + os.urandom(3).hex()
    ctx.ingest.create_collection(other, "turkish", "hash")
    try:
        reload_ready(tr)
        search(tr, QUESTION_TR, collection)
        assert f"c={collection}" in tr.current_url
        for step in ("reload", "language", "shared"):
            if step == "reload":
                reload_ready(tr)
            elif step == "language":
                css(tr, ".langs a[data-lang=en]").click()
                wait(tr, lambda d: d.find_element("css selector", "html").get_attribute("lang") == "en")
                wait(tr, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
            else:
                reload_ready(tr, f"{base}/?lang=tr&q=kat&c={collection}")
            boxes = ticked(tr)
            assert boxes["*"] is False and boxes[collection] is True and boxes[other] is False, (step, boxes)
            assert f"c={collection}" in tr.current_url, (step, tr.current_url)
            wait(tr, lambda d: css_all(d, "#results > li"))
            collections_shown = {h.get_attribute("data-collection") for h in css_all(tr, "#results li.hit")}
            assert collections_shown == {collection}, (step, collections_shown)
    finally:
        ctx.ingest.delete_collection(other)
        reload_ready(tr, base + "/?lang=tr")


def test_back_and_escape_return_to_the_results(tr: Any, collection: str) -> None:
    from selenium.webdriver.common.keys import Keys

    hits = search(tr, QUESTION_EN, collection)
    html_hit = next(h for h in hits if ".html" in h.find_element("css selector", ".path").text)
    depth = tr.execute_script("return history.length")
    html_hit.find_element("css selector", "h3 a").click()
    wait(tr, lambda d: css(d, "#viewer-view").is_displayed())
    assert tr.execute_script("return history.length") == depth + 1, "the page view is a history entry"
    tr.back()  # the browser's (or phone's) Back button
    wait(tr, lambda d: css(d, "#search-view").is_displayed() and not css(d, "#viewer-view").is_displayed())
    assert css_all(tr, "#results > li"), "the results are still there"
    assert tr.current_url.startswith(tr.execute_script("return location.origin")), "still in kaynak"
    tr.forward()
    wait(tr, lambda d: css(d, "#viewer-view").is_displayed() and css(d, "#quote"))
    tr.switch_to.active_element.send_keys(Keys.ESCAPE)
    wait(tr, lambda d: css(d, "#search-view").is_displayed() and not css(d, "#viewer-view").is_displayed())
    # the Collections tab is an entry too: Back from it comes back to the search
    css(tr, ".tab[data-view=browse]").click()
    wait(tr, lambda d: css(d, "#browse-view").is_displayed())
    tr.back()
    wait(tr, lambda d: css(d, "#search-view").is_displayed())


def test_collections_page_at_phone_width(tr: Any, collection: str) -> None:
    tr.set_window_size(390, 844)
    try:
        browse_documents(tr, collection)
        wait(tr, lambda d: len(css_all(d, "#collections-table tbody td")) >= 5)
        overflow = tr.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"page is {overflow}px wider than the phone"
        hidden = tr.execute_script(
            "return [...document.querySelectorAll('.scroll')].filter(s => s.scrollWidth > s.clientWidth + 1)"
            ".map(s => s.firstElementChild.id)"
        )
        assert hidden == [], f"tables scroll sideways (something cut off): {hidden}"
        # no cell narrower than its longest word: a word is never broken letter by letter
        narrow = tr.execute_script(
            "const out = []; const c = document.createElement('canvas').getContext('2d');"
            "for (const cell of document.querySelectorAll('#collections-table tbody th, #collections-table tbody td,"
            " #documents-table tbody th, #documents-table tbody td')) {"
            "  const el = cell.querySelector('button') || cell; const st = getComputedStyle(el);"
            "  c.font = st.fontWeight + ' ' + st.fontSize + ' ' + st.fontFamily;"
            "  for (const w of el.textContent.split(/\\s+/)) {"
            "    if (w && w.length < 30 && c.measureText(w).width > el.getBoundingClientRect().width + 1)"
            "      out.push(w); } } return out"
        )
        assert narrow == [], narrow
        # the samples hold Turkish and English documents: the collection says so (issue 27)
        row = next(r for r in css_all(tr, "#collections-table tbody tr") if collection in r.text)
        assert "İngilizce, Türkçe" in row.text, row.text
        shot(tr, "collections-phone-tr")
    finally:
        tr.set_window_size(1280, 900)


def upload_files(driver: Any, target: str, *paths: Path, folder: Path | None = None) -> None:
    driver.execute_script("sessionStorage.setItem('kaynak.token', arguments[0])", TOKEN)
    reload_ready(driver)
    wait(driver, lambda d: css(d, ".tab[data-view=upload]").is_displayed())
    css(driver, ".tab[data-view=upload]").click()
    field = css(driver, "#up-collection")
    field.clear()
    field.send_keys(target)
    if paths:
        css(driver, "#up-files").send_keys("\n".join(str(p) for p in paths))
    if folder is not None:
        css(driver, "#up-folder").send_keys(str(folder))
    css(driver, "#up-submit").click()
    wait(
        driver,
        lambda d: d.execute_script(
            "return !document.getElementById('up-submit').disabled && (!document.getElementById('alert').hidden"
            " || /\\d/.test(document.getElementById('up-status').textContent))"
        ),
        timeout=60,
    )


@pytest.mark.parametrize(
    ("lang", "expected"),
    [
        (
            "tr",
            {
                "none": "Hiçbir dosya eklenemedi.",
                "bos.pdf": "bos.pdf: dosyada okunabilir metin yok (boş ya da taranmış bir belge olabilir).",
                "bozuk.docx": "bozuk.docx: dosya bozuk ya da uzantısının söylediği türde değil.",
                "gizli.pdf": "gizli.pdf: dosya parolayla korunuyor; parolasız bir kopyasını ekleyin.",
            },
        ),
        (
            "en",
            {
                "none": "No file could be added.",
                "bos.pdf": "bos.pdf: the file holds no readable text (it may be empty or a scan).",
                "bozuk.docx": "bozuk.docx: the file is damaged or not the type its extension says.",
                "gizli.pdf": "gizli.pdf: the file is password-protected; add a copy without the password.",
            },
        ),
    ],
)
def test_upload_errors_are_one_sentence_in_the_page_language(
    browsers: Callable[[str], Any], base: str, ctx: Context, tmp_path: Path, lang: str, expected: dict[str, str]
) -> None:
    from pypdf import PdfWriter

    driver = browsers("tr-TR,tr" if lang == "tr" else "en-US,en")
    open_page(driver, base)
    empty = tmp_path / "bos.pdf"
    empty.write_bytes(b"")
    broken = tmp_path / "bozuk.docx"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    locked = tmp_path / "gizli.pdf"
    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    writer.encrypt("sir")
    with locked.open("wb") as fh:
        writer.write(fh)
    target = "hatalar_" + os.urandom(3).hex()
    try:
        upload_files(driver, target, empty, broken, locked)
        wait(driver, lambda d: css(d, "#alert").is_displayed())
        alert = css(driver, "#alert")
        assert alert.find_element("css selector", ".say").text == expected["none"]
        items = sorted(li.text for li in alert.find_elements("css selector", "ul.failures li"))
        assert items == sorted(v for k, v in expected.items() if k != "none"), items
        text = alert.text
        assert "(422)" not in text and "no file could be stored" not in text, "raw API text stays under details"
        assert "bos.pdf: bos.pdf" not in text, "a file name is never doubled"
        shot(driver, f"upload-error-{lang}")
        # the next action clears the old banner
        css(driver, ".tab[data-view=search]").click()
        assert not css(driver, "#alert").is_displayed()
    finally:
        driver.execute_script("sessionStorage.clear()")
        with contextlib.suppress(CollectionNotFound):
            ctx.ingest.delete_collection(target)


def test_upload_of_a_file_over_the_limit_in_both_languages(
    browsers: Callable[[str], Any], ctx: Context, tmp_path: Path
) -> None:
    small = Context(
        load_settings(
            data_dir=ctx.settings.data_dir,
            database_url=ctx.settings.database_url,
            embedder="hash",
            api_token=TOKEN,
            max_file_mb=0.001,
        )
    )
    big = tmp_path / "buyuk.txt"
    big.write_text("Uzun bir metin. " * 400, encoding="utf-8")
    target = "sinir_" + os.urandom(3).hex()
    expected = {
        "tr-TR,tr": ("Hiçbir dosya eklenemedi.", "buyuk.txt: dosya izin verilen boyuttan büyük."),
        "en-US,en": ("No file could be added.", "buyuk.txt: the file is over the size limit."),
    }
    try:
        with running(make_app(small)) as url:
            for lang, (head, line) in expected.items():
                driver = browsers(lang)
                open_page(driver, url)
                try:
                    upload_files(driver, target, big)
                    wait(driver, lambda d: css(d, "#alert").is_displayed())
                    assert css(driver, "#alert .say").text == head
                    assert [li.text for li in css_all(driver, "#alert ul.failures li")] == [line]
                finally:
                    driver.execute_script("sessionStorage.clear()")
    finally:
        with contextlib.suppress(CollectionNotFound):
            ctx.ingest.delete_collection(target)
        small.close()


def test_other_errors_in_the_page_language(tr: Any, collection: str, ctx: Context) -> None:
    # a page the document does not have: a Turkish sentence, and no "Next page" into nothing
    tr.execute_script(
        "const b = document.createElement('button'); b.id = 'probe'; document.body.append(b);"
        "b.addEventListener('click', () => {});"
    )
    search(tr, "asansör bakımı", collection)
    hit = next(
        h for h in css_all(tr, "#results li.hit") if h.find_element("css selector", ".path").text.startswith("uyarili")
    )
    hit.find_element("css selector", "h3 a").click()
    wait(tr, lambda d: css(d, "#viewer-view").is_displayed() and "sayfa" in css(d, "#viewer-text").text)
    css(tr, "#viewer-next").click()
    wait(tr, lambda d: "İkinci" in css(d, "#viewer-text").text)
    # the document disappears while the page view is open
    ctx.ingest.delete_document(collection, "uyarili/rapor.txt")
    try:
        css(tr, "#viewer-prev").click()
        wait(tr, lambda d: css(d, "#alert").is_displayed())
        say = css(tr, "#alert .say").text
        assert say.startswith("Bu belge artık koleksiyonda yok"), say
        assert css(tr, "#viewer-next").get_attribute("disabled")
        assert "(404)" not in css(tr, "#alert").text
    finally:
        col = ctx.store.get_collection(collection)
        pages = [
            Page(1, "Birinci sayfa: ısıtma giderleri paylaşılır."),
            Page(2, "İkinci sayfa: asansör bakımı yapılır."),
        ]
        chunks = [Chunk(i, p.number, None, 0, len(p.text), p.text) for i, p in enumerate(pages)]
        ctx.store.replace_document(
            col,
            "uyarili/rapor.txt",
            "0" * 64,
            "Uyarılı rapor",
            {},
            pages,
            chunks,
            HashEmbedder().embed_passages([c.text for c in chunks]),
            warnings=["page 3: no text layer <b>(scan?)</b>"],
        )
        css(tr, "#viewer-back").click()
    # over the limit: said, not cut; only spaces: said
    tr.execute_script("document.getElementById('q').value = 'ğ'.repeat(4001)")
    css(tr, "#search-button").click()
    wait(tr, lambda d: "4001" in css(d, "#status").text)
    assert (
        "4000" in css(tr, "#status").text
        and tr.execute_script("return document.getElementById('q').value.length") == 4001
    )
    tr.execute_script("document.getElementById('q').value = '    '")
    css(tr, "#search-button").click()
    wait(tr, lambda d: "boşluk" in css(d, "#status").text)


def test_failing_files_and_warnings_per_collection(tr: Any, ctx: Context, tmp_path: Path) -> None:
    folder = tmp_path / "karisik"
    folder.mkdir()
    (folder / "iyi.md").write_text("# İyi\n\nAidatlar her ayın beşinde ödenir.\n", encoding="utf-8")
    (folder / "bozuk.docx").write_bytes(b"PK\x03\x04 not a zip")
    target = "karisik_" + os.urandom(3).hex()
    ctx.ingest.ingest([folder], target, language="turkish")
    try:
        reload_ready(tr)
        browse_documents(tr, target)
        row = wait(tr, lambda d: next((r for r in css_all(d, "#collections-table tbody tr") if target in r.text), None))
        wait(tr, lambda d: "1 dosya eklenemedi" in row.text)
        failing = wait(tr, lambda d: css_all(d, "#failing-files li"))
        assert failing[0].text.startswith("bozuk.docx: dosya bozuk"), failing[0].text
        shot(tr, "collections-failing-tr")
    finally:
        ctx.ingest.delete_collection(target)


def test_delete_feedback_and_skipped_files(en: Any, ctx: Context, tmp_path: Path) -> None:
    folder = tmp_path / "klasor2"
    folder.mkdir()
    (folder / "a.md").write_text("# Alfa\n\nKuşkonmaz çorbası tarifi.\n", encoding="utf-8")
    (folder / "resim.xyz").write_bytes(b"not a document")
    (folder / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")  # left by a desktop: never listed
    target = "sil_" + os.urandom(3).hex()
    try:
        upload_files(en, target, folder=folder)
        wait(en, lambda d: "1 added" in css(d, "#up-status").text, timeout=60)
        skipped = css(en, "#up-skipped").text
        assert "klasor2/resim.xyz" in skipped and ".DS_Store" not in skipped, skipped
        # the types are named once, and they are the loader registry's (scans and archives included)
        assert skipped.count("kaynak reads these types") == 1 and " .png " in skipped and " .zip" in skipped
        browse_documents(en, target)
        open_document_row(en, "klasor2/a.md")
        css(en, "#documents-table button.danger").click()
        wait(en, lambda d: d.switch_to.alert).accept()
        wait(en, lambda d: "Deleted" in css(d, "#browse-status").text)
        assert css(en, "#browse-status").is_displayed(), "the message shows where the person is looking"
    finally:
        en.execute_script("sessionStorage.clear()")
        with contextlib.suppress(CollectionNotFound):
            ctx.ingest.delete_collection(target)


def test_pdf_citation_highlights_the_passage_on_the_page(
    browsers: Callable[[str], Any], base: str, collection: str
) -> None:
    driver = browsers("tr-TR,tr")
    for size in ((1366, 900), (390, 844)):
        open_page(driver, base)
        driver.set_window_size(*size)
        hits = search(driver, QUESTION_TR, collection)
        hits[0].find_element("css selector", "h3 a").click()
        wait(driver, lambda d: d.execute_script("return !!document.body.dataset.pageDrawn"))
        box = css(driver, "#viewer-box")
        assert box.is_displayed()
        # the box is in view, focused, and the image under it is painted yellow (the passage), not white paper
        state = driver.execute_script(
            "const b = document.getElementById('viewer-box').getBoundingClientRect();"
            "const img = document.getElementById('viewer-image'); const r = img.getBoundingClientRect();"
            "const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight;"
            "const g = c.getContext('2d'); g.drawImage(img, 0, 0);"
            "const sx = img.naturalWidth / r.width; let yellow = 0, n = 0;"
            "for (let y = b.top + 2; y < b.bottom - 2; y += 3) for (let x = b.left + 2; x < b.right - 2; x += 7) {"
            "  const p = g.getImageData((x - r.left) * sx, (y - r.top) * sx, 1, 1).data; n++;"
            "  if (p[0] > 200 && p[1] > 160 && p[2] < 120) yellow++; }"
            "return {inView: b.top >= 0 && b.top < innerHeight, focused: document.activeElement.id,"
            " share: yellow / Math.max(n, 1)}"
        )
        assert state["inView"] and state["focused"] == "viewer-box", state
        assert state["share"] > 0.15, state  # yellow paper between the dark letters
        name = "pdf-citation-tr" if size[0] > 400 else "pdf-citation-phone-tr"
        shot(driver, name)
        overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
    driver.set_window_size(1280, 900)


def test_original_markdown_opens_as_text(tr: Any, collection: str) -> None:
    hits = search(tr, "What is a React component?", collection)
    md = next(h for h in hits if h.find_element("css selector", ".path").text == "your-first-component.md")
    main = tr.current_window_handle
    md.find_element("css selector", "a.original").click()
    wait(tr, lambda d: len(d.window_handles) > 1)
    tr.switch_to.window(next(h for h in tr.window_handles if h != main))
    try:
        wait(tr, lambda d: "Your First Component" in d.find_element("css selector", "body").text)
        assert tr.execute_script("return document.contentType") == "text/plain"
    finally:
        tr.close()
        tr.switch_to.window(main)


def test_reading_the_results(tr: Any, collection: str) -> None:
    hits = search(tr, QUESTION_TR, collection)
    first = hits[0]
    title = first.find_element("css selector", "h3 a")
    path = first.find_element("css selector", ".path")
    assert float(path.value_of_css_property("font-size")[:-2]) < float(title.value_of_css_property("font-size")[:-2])
    # repeated hits of one document fold under its first one
    sources = [h.find_element("css selector", ".path").text for h in css_all(tr, "#results > li")]
    assert len(sources) == len(set(sources)), sources
    more = first.find_elements("css selector", "details.more-hits")
    assert more and not more[0].get_attribute("open")
    # code in a monospace font
    search(tr, "first React component article", collection)
    code = css_all(tr, "#results blockquote.code")
    assert code and "mono" in code[0].value_of_css_property("font-family").lower()
    # the focus of a quote is one box (not one stripe per line), and "more context" leaves no blank gap
    hits = search(tr, QUESTION_EN, collection)
    html_hit = next(h for h in hits if ".html" in h.find_element("css selector", ".path").text)
    button = html_hit.find_element("css selector", ".actions button")
    button.click()
    wait(tr, lambda d: button.get_attribute("aria-expanded") == "true")
    edges = tr.execute_script(
        "return [...document.querySelectorAll('.context p')].map(p => p.textContent)"
        ".filter(t => t !== t.trim() && !t.startsWith(' '))"
    )
    assert edges == [], edges
    html_hit.find_element("css selector", "h3 a").click()
    wait(tr, lambda d: d.execute_script("return document.activeElement && document.activeElement.id === 'quote'"))
    assert tr.execute_script("return document.getElementById('quote').getClientRects().length") == 1
    css(tr, "#viewer-back").click()


def test_weak_matches_marked_only_when_the_api_says_so(tr: Any, collection: str) -> None:
    # The API's answer is rewritten in the page: first every hit strong (no mark, no notice), then weak ones.
    rewrite = (
        "const real = window.__realFetch || window.fetch; window.__realFetch = real;"
        "window.fetch = async (url, opts) => { const res = await real(url, opts);"
        " if (!String(url).endsWith('/v1/search')) return res;"
        " const body = await res.json(); body.no_good_match = arguments[0];"
        " body.hits.forEach((h, i) => { h.match = {probability: arguments[0] ? 0.1 : 0.9,"
        "   label: arguments[0] ? (i ? 'weak' : 'partial') : 'strong'}; });"
        " return new Response(JSON.stringify(body), {status: 200, headers: {'Content-Type': 'application/json'}}); }"
    )
    try:
        tr.execute_script(rewrite, False)
        search(tr, QUESTION_TR, collection)
        assert not css_all(tr, ".badge.weak") and not css_all(tr, ".weak-notice")
        tr.execute_script(rewrite, True)
        search(tr, QUESTION_TR + " ", collection)
        assert css_all(tr, ".badge.weak") and css_all(tr, ".badge.partial")
        assert css(tr, ".weak-notice").text.startswith("Belgelerinizde bu soruyu iyi karşılayan")
        shot(tr, "weak-match-tr")
    finally:
        tr.execute_script("window.fetch = window.__realFetch")


def test_small_things(tr: Any, ctx: Context, collection: str, browsers: Callable[[str], Any], base: str) -> None:
    # Turkish case-folding of Latin file names in the document filter
    col = ctx.store.get_collection(collection)
    pages = [Page(1, "Form 1040-NR talimatı.")]
    ctx.store.replace_document(
        col,
        "vergi/i1040nr.txt",
        "1" * 64,
        "Talimat",
        {},
        pages,
        [Chunk(0, 1, None, 0, len(pages[0].text), pages[0].text)],
        HashEmbedder().embed_passages([pages[0].text]),
    )
    try:
        reload_ready(tr)
        browse_documents(tr, collection)
        css(tr, "#doc-filter").send_keys("I1040")
        wait(tr, lambda d: [b.text for b in css_all(d, "#documents-table tbody th button")] == ["vergi/i1040nr.txt"])
    finally:
        ctx.ingest.delete_document(collection, "vergi/i1040nr.txt")
    # the empty-collection message offers the upload tab when uploads are enabled
    empty = "bos_" + os.urandom(3).hex()
    ctx.ingest.create_collection(empty, "turkish", "hash")
    try:
        tr.execute_script("sessionStorage.setItem('kaynak.token', arguments[0])", TOKEN)
        reload_ready(tr)
        css(tr, ".tab[data-view=search]").click()
        search(tr, "herhangi bir şey", empty)
        offer = css(tr, "#offer-upload")
        assert offer.text == "Belge ekle"
        offer.click()
        wait(tr, lambda d: css(d, "#upload-view").is_displayed())
        assert css(tr, "#up-collection").get_attribute("value") == empty
    finally:
        tr.execute_script("sessionStorage.clear()")
        ctx.ingest.delete_collection(empty)
    # the phone placeholder fits its box
    tr.set_window_size(390, 844)
    try:
        reload_ready(tr)
        fits = tr.execute_script(
            "const q = document.getElementById('q'); const st = getComputedStyle(q);"
            "const c = document.createElement('canvas').getContext('2d'); c.font = st.fontSize + ' ' + st.fontFamily;"
            "const inner = q.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);"
            "return [c.measureText(q.placeholder).width, inner]"
        )
        assert fits[0] <= fits[1], fits
        shot(tr, "search-phone-placeholder-tr")
    finally:
        tr.set_window_size(1280, 900)


# ----------------------------------------------------------------------------- issue 54: a person's journeys
# A database outage as the page meets it: every /v1 answer is the server's 503 until the test lifts it.
OUTAGE_JS = """
(() => {
  const real = window.fetch.bind(window);
  window.__outage = true;
  window.fetch = (url, opts) => {
    if (window.__outage && String(url).startsWith('/v1/')) {
      const body = JSON.stringify({ type: 'about:blank', title: 'database unavailable', status: 503,
        detail: 'the database cannot be reached right now; try again in a moment' });
      return Promise.resolve(new Response(body, { status: 503,
        headers: { 'Content-Type': 'application/problem+json' } }));
    }
    return real(url, opts);
  };
})();
"""


def test_journey_outage_then_recovery_keeps_the_chosen_collection(tr: Any, base: str, collection: str) -> None:
    added = tr.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": OUTAGE_JS})
    try:
        tr.get(f"{base}/?lang=tr&c={collection}")
        wait(tr, lambda d: css(d, "#alert").is_displayed())
        assert css(tr, "#alert .say").text.startswith("Veritabanına"), css(tr, "#alert").text
        assert f"c={collection}" in tr.current_url  # the link's collection is kept while the list cannot load
        shot(tr, "journey-outage-tr")
        tr.execute_script("window.__outage = false")  # the server is back
        hits = search(tr, QUESTION_TR)
        assert hits and not css(tr, "#alert").is_displayed()
        assert "Henüz" not in css(tr, "#status").text and "`" not in css(tr, "#status").text
        assert ticked(tr).get(collection) is True and f"c={collection}" in tr.current_url
        assert {h.get_attribute("data-collection") for h in hits} == {collection}
    finally:
        tr.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": added["identifier"]})


def test_journey_two_searches_and_back(tr: Any, base: str, collection: str) -> None:
    search(tr, QUESTION_TR, collection)
    first = css(tr, "#results > li .quote").text
    search(tr, "asansör bakımı", collection)
    assert css(tr, "#results > li .quote").text != first
    tr.back()  # the previous search, not out of the app
    wait(tr, lambda d: css(d, "#q").get_attribute("value") == QUESTION_TR)
    wait(tr, lambda d: css(d, "#results > li .quote").text == first)
    assert tr.current_url.startswith(base)
    tr.forward()
    wait(tr, lambda d: css(d, "#q").get_attribute("value") == "asansör bakımı")
    shot(tr, "journey-back-tr")


def test_journey_shared_link_to_a_missing_collection(en: Any, base: str, collection: str) -> None:
    from urllib.parse import quote

    reload_ready(en, f"{base}/?lang=en&c=no_such_one&q={quote(QUESTION_EN)}")
    wait(en, lambda d: css_all(d, "#collections-notice"))
    assert "no_such_one" in css(en, "#collections-notice").text  # said, not silently dropped
    shot(en, "journey-missing-collection-en")


def test_journey_changed_and_cp1254_originals(tr: Any, base: str, ctx: Context, tmp_path: Path) -> None:
    import httpx

    folder = tmp_path / "asil"
    folder.mkdir()
    (folder / "haber.txt").write_bytes("Takımın savunması ligdeki derecesi altıncı.".encode("cp1254"))
    (folder / "toplanti-notu.md").write_text("# Toplantı\n\nKuşkonmaz ihalesi görüşüldü.\n", encoding="utf-8")
    name = "asil_" + os.urandom(3).hex()
    try:
        assert not ctx.ingest.ingest([folder], name, language="turkish").failed
        col = ctx.store.get_collection(name)
        txt_id = ctx.store.get_document(col, "haber.txt").id
        res = httpx.get(f"{base}/v1/documents/{txt_id}/file")
        assert res.status_code == 200 and res.headers["content-type"] == "text/plain; charset=utf-8"
        assert "savunması ligdeki derecesi altıncı" in res.text  # as kaynak read it, not as mojibake
        (folder / "toplanti-notu.md").write_text("# Toplantı\n\nDeğişti.\n", encoding="utf-8")
        md_id = ctx.store.get_document(col, "toplanti-notu.md").id
        gone = httpx.get(f"{base}/v1/documents/{md_id}/file")
        assert gone.status_code == 404 and str(folder) not in gone.text  # no server folder in the answer
        reload_ready(tr)
        search(tr, "kuşkonmaz ihalesi", name)
        main = tr.current_window_handle
        css(tr, "#results > li a.original").click()
        wait(tr, lambda d: css(d, "#alert").is_displayed())
        say = css(tr, "#alert .say").text
        assert say.startswith("Özgün dosya") and "{" not in css(tr, "#alert").text, css(tr, "#alert").text
        assert str(folder) not in css(tr, "#alert").text
        wait(tr, lambda d: len(d.window_handles) == 1)  # the tab opened for it is closed again
        assert tr.current_window_handle == main
        shot(tr, "journey-original-changed-tr")
    finally:
        with contextlib.suppress(CollectionNotFound):
            ctx.ingest.delete_collection(name)


def test_journey_team_member_sees_only_what_the_token_can_do(
    browsers: Callable[[str], Any], ctx: Context, tmp_path: Path
) -> None:
    from kaynak.access import new_secret, secret_hash

    tag = os.urandom(3).hex()
    readonly, writable = f"notlar_{tag}", f"yukleme_{tag}"
    for name in (readonly, writable):
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.md").write_text(f"# {name}\n\nEkip notu {name}.\n", encoding="utf-8")
        assert not ctx.ingest.ingest([folder], name, language="turkish").failed
    secret = new_secret()
    ctx.store.create_token(f"uye-{tag}", secret_hash(secret), {readonly, writable}, {writable}, set(), None)
    team = Context(
        load_settings(data_dir=ctx.settings.data_dir, database_url=ctx.settings.database_url, embedder="hash")
    )
    driver = browsers("tr-TR,tr")
    try:
        with running(make_app(team)) as url:
            driver.get(url + "/?lang=tr")
            driver.execute_script("sessionStorage.clear()")
            driver.get(url + "/?lang=tr")
            wait(driver, lambda d: css(d, "#token-view").is_displayed())
            css(driver, "#token-input").send_keys(secret + "\n")
            wait(driver, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
            browse_documents(driver, readonly)
            open_document_row(driver, f"{readonly}.md")
            assert not css_all(driver, "#documents-table button.danger")  # no delete where it cannot write
            browse_documents(driver, writable)
            open_document_row(driver, f"{writable}.md")
            wait(driver, lambda d: css_all(d, "#documents-table button.danger"))
            css(driver, ".tab[data-view=upload]").click()
            label = css(driver, "label[for=up-collection]").text
            assert "oluşturulur" not in label, label  # this token cannot create collections
            note = tmp_path / "yeni.md"
            note.write_text("# Yeni\n\nYeni not.\n", encoding="utf-8")
            field = css(driver, "#up-collection")
            field.clear()
            field.send_keys("yepyeni")
            css(driver, "#up-files").send_keys(str(note))
            css(driver, "#up-submit").click()
            wait(driver, lambda d: writable in css(d, "#up-status").text)
            assert not css(driver, "#alert").is_displayed()
            shot(driver, "journey-team-member-tr")
            driver.set_window_size(390, 844)
            shot(driver, "journey-team-member-phone-tr")
            driver.set_window_size(1280, 900)
            driver.execute_script("sessionStorage.clear()")
    finally:
        team.close()
        with ctx.store.pool.connection() as conn:
            conn.execute("DELETE FROM access_tokens WHERE name = %s", (f"uye-{tag}",))
        for name in (readonly, writable):
            with contextlib.suppress(CollectionNotFound):
                ctx.ingest.delete_collection(name)


def test_journey_labels_and_phrase_notice(en: Any, collection: str) -> None:
    search(en, '"mavi balina kanunu"', collection)
    wait(en, lambda d: css_all(d, "#phrase-notice"))
    assert "quoted phrase" in css(en, "#phrase-notice").text
    en.set_window_size(390, 844)
    shot(en, "journey-phrase-phone-en")
    en.set_window_size(1280, 900)


def test_journey_reload_and_language_switch_stay_on_collections(tr: Any, collection: str) -> None:
    css(tr, ".tab[data-view=browse]").click()
    wait(tr, lambda d: css(d, "#browse-view").is_displayed())
    assert "v=browse" in tr.current_url
    reload_ready(tr)
    assert css(tr, "#browse-view").is_displayed() and not css(tr, "#search-view").is_displayed()
    css(tr, ".langs a[data-lang=en]").click()
    wait(tr, lambda d: d.execute_script("return document.body.dataset.ready === '1' && document.body.dataset.lang"))
    wait(tr, lambda d: css(d, "#browse-view").is_displayed())
    css(tr, ".tab[data-view=search]").click()
    wait(tr, lambda d: css(d, "#search-view").is_displayed() and "v=browse" not in d.current_url)


def test_journey_warnings_in_the_page_language(tr: Any, collection: str) -> None:
    browse_documents(tr, collection)
    open_document_row(tr, "uyarili/rapor.txt")
    detail = css(tr, "#documents-table tr.doc-detail")
    assert "1 uyarı" in detail.text and "no text layer" not in detail.text  # the loader's English: under details
    detail.find_element("css selector", "details.tech summary").click()
    wait(tr, lambda d: "page 3: no text layer <b>(scan?)</b>" in css(d, "#documents-table tr.doc-detail").text)
