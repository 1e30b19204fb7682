"""The page's HTML: one server-rendered shell in the chosen language; the JavaScript fills in data from ``/v1``.

A plain string template (no template engine): every value inserted goes through ``html.escape`` (``esc``), and
the strings table handed to the script is JSON with ``<``, ``>`` and ``&`` escaped, inside a non-executable
``application/json`` block. The shell holds no document data (no text, no file names): those arrive through the
API and the script inserts them as text nodes only, never as HTML. Decision and measurements:
docs/adr/0013-web-page.md.
"""

from __future__ import annotations

import json
from html import escape

from kaynak.vocabulary import MAX_K, MAX_QUERY_CHARS, SEARCH_MODES
from kaynak.web.i18n import LANGS, STRINGS

LANG_NAMES = {"tr": "Türkçe", "en": "English"}


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def strings_json(lang: str) -> str:
    """The strings table as JSON that is safe inside a ``<script type="application/json">`` block."""
    raw = json.dumps(STRINGS[lang], ensure_ascii=False, sort_keys=True)
    return raw.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def render_page(
    lang: str,
    *,
    read_token: bool,
    write_enabled: bool,
    asset_version: str,
    extensions: frozenset[str] = frozenset(),
    max_upload_mb: float = 50,
) -> str:
    """The page in ``lang``. ``read_token``: the server wants a token for reads (the page asks for it once);
    ``write_enabled``: the server has an API token, so the page may offer to take it and show write controls;
    ``extensions``: the file types the loaders read (the loader registry: the upload form offers exactly these);
    ``max_upload_mb``: the upload limit, checked in the page before sending."""
    t = {k: esc(v) for k, v in STRINGS[lang].items()}
    accept = ",".join(sorted(extensions))
    v = esc(asset_version)
    modes = "".join(f'<option value="{esc(m)}">{t["mode_" + m]}</option>' for m in SEARCH_MODES)
    langs = "".join(
        f'<a href="?lang={code}" lang="{code}" hreflang="{code}" data-lang="{code}"'
        f"{' aria-current=true' if code == lang else ''}>{esc(LANG_NAMES[code])}</a>"
        for code in LANGS
    )
    write_tools = (
        f'<button type="button" id="write-sign-in" class="quiet">{t["write_sign_in"]}</button>'
        f'<span id="write-on" class="badge" hidden>{t["write_on"]}</span>'
        if write_enabled
        else ""
    )
    upload_tab = (
        f'<button type="button" class="tab" data-view="upload" aria-controls="upload-view" hidden>'
        f"{t['nav_upload']}</button>"
        if write_enabled
        else ""
    )
    upload_view = (
        f"""
<section id="upload-view" class="view" hidden aria-labelledby="upload-heading">
 <h2 id="upload-heading">{t["upload_heading"]}</h2>
 <form id="upload-form" novalidate>
  <label for="up-collection">{t["upload_collection"]}</label>
  <input id="up-collection" name="collection" list="collection-names" required maxlength="200" autocomplete="off">
  <datalist id="collection-names"></datalist>
  <label for="up-files">{t["upload_files"]}</label>
  <input id="up-files" type="file" multiple accept="{esc(accept)}">
  <label for="up-folder">{t["upload_folder"]}</label>
  <input id="up-folder" type="file" multiple webkitdirectory>
  <div class="row"><button type="submit" id="up-submit">{t["upload_button"]}</button></div>
  <progress id="up-progress" max="100" value="0" hidden aria-label="{t["upload_button"]}"></progress>
  <p id="up-status" role="status" aria-live="polite"></p>
  <ul id="up-failed" class="failures"></ul>
  <div id="up-skipped"></div>
 </form>
</section>"""
        if write_enabled
        else ""
    )
    return f"""<!doctype html>
<html lang="{esc(lang)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{t["title"]}</title>
<link rel="icon" href="/static/icon.svg?v={v}" type="image/svg+xml">
<link rel="stylesheet" href="/static/app.css?v={v}">
<script src="/static/app.js?v={v}" defer></script>
<script type="application/json" id="kaynak-strings">{strings_json(lang)}</script>
</head>
<body data-lang="{esc(lang)}" data-read-token="{int(read_token)}" data-write="{int(write_enabled)}" \
data-max-k="{MAX_K}" data-max-query="{MAX_QUERY_CHARS}" \
data-extensions="{esc(accept)}" data-max-upload-mb="{max_upload_mb:g}">
<a class="skip" href="#main">{t["skip"]}</a>
<header class="top">
 <h1><a class="brand" href="?lang={esc(lang)}">kaynak</a></h1>
 <nav class="tabs" aria-label="{t["nav"]}">
  <button type="button" class="tab" data-view="search" aria-controls="search-view" aria-current="page">\
{t["nav_search"]}</button>
  <button type="button" class="tab" data-view="browse" aria-controls="browse-view">{t["nav_browse"]}</button>
  {upload_tab}
 </nav>
 <div class="tools">
  {write_tools}
  <button type="button" id="sign-out" class="quiet" hidden>{t["sign_out"]}</button>
  <nav class="langs" aria-label="{t["language"]}">{langs}</nav>
 </div>
</header>
<div id="alert" class="alert" role="alert" hidden></div>
<main id="main" tabindex="-1">
<section id="token-view" class="view" hidden aria-labelledby="token-heading">
 <h2 id="token-heading">{t["token_label"]}</h2>
 <form id="token-form">
  <p id="token-why"></p>
  <label for="token-input">{t["token_label"]}</label>
  <div class="row">
   <input id="token-input" type="password" autocomplete="off" required maxlength="500">
   <button type="submit">{t["token_submit"]}</button>
   <button type="button" id="token-cancel" class="quiet">{t["cancel"]}</button>
  </div>
  <p id="token-error" class="error-text" role="alert"></p>
 </form>
</section>
<section id="search-view" class="view" aria-label="{t["nav_search"]}">
 <p class="tagline">{t["tagline"]}</p>
 <form id="search-form" role="search">
  <label for="q">{t["search_label"]}</label>
  <div class="row">
   <input id="q" name="q" type="search" autocomplete="off" placeholder="{t["search_placeholder"]}">
   <button type="submit" id="search-button">{t["search_button"]}</button>
  </div>
  <fieldset id="collections" class="picker">
   <legend>{t["collections_label"]}</legend>
   <label class="check"><input type="checkbox" id="all-collections" checked> {t["all_collections"]}</label>
   <span id="collection-boxes"></span>
  </fieldset>
  <details id="more">
   <summary>{t["more"]}</summary>
   <div class="grid">
    <label for="mode">{t["mode_label"]}</label>
    <select id="mode" name="mode">{modes}</select>
    <label for="k">{t["k_label"]}</label>
    <input id="k" name="k" type="number" min="1" max="{MAX_K}" value="10">
    <label for="prefix">{t["prefix_label"]}</label>
    <input id="prefix" name="source_prefix" maxlength="1000" autocomplete="off">
    <label for="glob">{t["glob_label"]}</label>
    <input id="glob" name="source_glob" maxlength="1000" autocomplete="off">
    <label for="meta">{t["meta_label"]}</label>
    <textarea id="meta" name="meta" rows="2" maxlength="4000"></textarea>
   </div>
  </details>
 </form>
 <p id="status" class="status" role="status" aria-live="polite"></p>
 <ol id="results" class="results" aria-label="{t["results"]}"></ol>
</section>
<section id="viewer-view" class="view" hidden aria-labelledby="viewer-heading">
 <button type="button" id="viewer-back" class="quiet">{t["back"]}</button>
 <h2 id="viewer-heading" tabindex="-1"></h2>
 <nav class="pager" aria-label="{t["pages"]}">
  <button type="button" id="viewer-prev">{t["prev_page"]}</button>
  <button type="button" id="viewer-next">{t["next_page"]}</button>
  <a id="viewer-original" href="#" target="_blank" rel="noopener">{t["open_original"]}</a>
 </nav>
 <figure id="viewer-figure" class="pdf-figure" hidden>
  <div class="pdf-page"><img id="viewer-image" alt=""><span id="viewer-box" class="pdf-box" tabindex="-1" \
role="img" aria-label="{t["quote_here"]}"></span></div>
  <figcaption id="viewer-caption" class="status"></figcaption>
 </figure>
 <h3 id="viewer-text-heading" hidden>{t["page_text_heading"]}</h3>
 <div id="viewer-text" class="page-text" lang=""></div>
</section>
<section id="browse-view" class="view" hidden aria-labelledby="browse-heading">
 <h2 id="browse-heading">{t["browse_heading"]}</h2>
 <p id="browse-status" class="status" role="status" aria-live="polite"></p>
 <div class="scroll">
 <table id="collections-table">
  <thead><tr><th scope="col">{t["col_name"]}</th><th scope="col">{t["col_language"]}</th>\
<th scope="col">{t["col_embedder"]}</th><th scope="col" class="num">{t["col_docs"]}</th>\
<th scope="col" class="num">{t["col_chunks"]}</th><th scope="col">{t["col_state"]}</th></tr></thead>
  <tbody></tbody>
 </table>
 </div>
 <div id="documents-panel" hidden>
  <h3 id="documents-heading" tabindex="-1"></h3>
  <div id="collection-problems"></div>
  <label for="doc-filter">{t["filter_path"]}</label>
  <input id="doc-filter" type="search" maxlength="1000" autocomplete="off">
  <div class="scroll">
  <table id="documents-table">
   <thead><tr>
    <th scope="col" aria-sort="ascending"><button type="button" data-sort="source">{t["doc_source"]}</button></th>
    <th scope="col"><button type="button" data-sort="title">{t["doc_title"]}</button></th>
    <th scope="col" class="num"><button type="button" data-sort="page_count">{t["doc_pages"]}</button></th>
    <th scope="col" class="num"><button type="button" data-sort="chunk_count">{t["doc_chunks"]}</button></th>
    <th scope="col"><button type="button" data-sort="ingested_at">{t["doc_ingested"]}</button></th>
   </tr></thead>
   <tbody></tbody>
  </table>
  </div>
 </div>
</section>
{upload_view}
</main>
</body>
</html>
"""
