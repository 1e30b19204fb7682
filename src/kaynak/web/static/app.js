/* kaynak web page: search with highlighted verbatim quotes, open the source at the place, browse collections and
 * documents, add and delete documents with the write token. Talks only to this server's REST API.
 *
 * Safety rules kept everywhere below: document text, file names and API messages enter the page only as text
 * nodes (el(), textContent), never as HTML; links are built from numeric ids and encoded path parts; the token
 * lives in sessionStorage and travels in the Authorization header, never in a cookie or a URL.
 * Offsets from the API count Unicode code points (Python str indices), so text is sliced as code points.
 * Errors reach a person as one sentence in the page's language (say(), fileSentence()); the API's own text is kept
 * under "technical details". The chosen collections, query and options live in the URL; the page view and the
 * tabs are history entries, so Back (and Esc in the page view) return to the results.
 * Each search leaves two Performance API measures (benchmarks/bench_web.py reads them): kaynak:first-result (API
 * answer parsed → results in the DOM) and kaynak:first-highlighted (the same answer → highlight marks in place). */
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const T = JSON.parse($('kaynak-strings').textContent);
  const LANG = document.body.dataset.lang;
  const TOKEN_KEY = 'kaynak.token';
  // The file types kaynak reads come from the server's loader registry (one source of truth).
  const EXTENSIONS = (document.body.dataset.extensions || '').split(',').filter(Boolean);
  const MAX_UPLOAD_MB = Number(document.body.dataset.maxUploadMb) || 50;
  const MAX_K = Number(document.body.dataset.maxK) || 100;
  const JUNK = /(^|\/)(\.ds_store|thumbs\.db|desktop\.ini|\._[^/]*)$/i; // left by desktops: never listed
  const MAX_QUERY = Number(document.body.dataset.maxQuery) || 4000;
  const PHONE = window.matchMedia('(max-width: 40rem)');

  // ---------------------------------------------------------------- helpers
  const fmt = (key, vars = {}) =>
    (T[key] || key).replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') node.className = v;
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(4)) {
      if (c === null || c === undefined || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  /* A message whose `backticked` parts are commands: text nodes and <code> elements. */
  const withCode = (text) => String(text).split('`').map((part, i) => (i % 2 ? el('code', {}, part) : part));

  const enc = encodeURIComponent;
  const encPath = (path) => path.split('/').map(enc).join('/');

  /* Text pieces of `text` with the code-point spans [a, b) wrapped in <mark class=term>. */
  function marked(text, spans, offset = 0) {
    const cps = Array.from(text);
    const out = [];
    let pos = 0;
    for (const [a0, b0] of spans || []) {
      const a = a0 - offset;
      const b = b0 - offset;
      if (a < pos || b <= a || b > cps.length) continue;
      if (a > pos) out.push(cps.slice(pos, a).join(''));
      out.push(el('mark', { class: 'term' }, cps.slice(a, b).join('')));
      pos = b;
    }
    if (pos < cps.length) out.push(cps.slice(pos).join(''));
    return out;
  }

  const token = {
    get: () => sessionStorage.getItem(TOKEN_KEY),
    set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
    clear: () => sessionStorage.removeItem(TOKEN_KEY),
  };

  class ApiError extends Error {
    constructor(status, title, detail, body = null) {
      super(detail || title);
      this.status = status;
      this.title = title;
      this.detail = detail;
      this.body = body || {};
    }
  }

  async function problem(res) {
    let b = null;
    try {
      b = await res.json();
    } catch (_) {
      /* not JSON: fall back to the status line */
    }
    return new ApiError(res.status, (b && b.title) || res.statusText || T.error, (b && b.detail) || '', b);
  }

  function authHeaders() {
    const t = token.get();
    return t ? { Authorization: 'Bearer ' + t } : {};
  }

  async function api(path, { method = 'GET', json, raw = false } = {}) {
    const headers = authHeaders();
    let body;
    if (json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(json);
    }
    let res;
    try {
      res = await fetch(path, { method, headers, body, credentials: 'omit', cache: 'no-store' });
    } catch (_) {
      throw new ApiError(0, T.error, T.unreachable);
    }
    if (!res.ok) throw await problem(res);
    return raw ? res : res.json();
  }

  /* What went wrong with one file, as a sentence: the API's reasons are English, so they are sorted into kinds. */
  function fileKind(reason) {
    const r = String(reason || '').toLowerCase();
    if (/unsupported file type|does not read/.test(r)) return 'unsupported';
    if (/encrypted|password/.test(r)) return 'encrypted';
    if (/not even by ocr|found by ocr/.test(r)) return 'no_text'; // OCR ran and found nothing
    if (/needs ocr|tesseract|not ocr'd|ocr not available/.test(r)) return 'ocr';
    if (/no text|is empty|empty file|no pages/.test(r)) return 'no_text';
    if (/took longer|timed? ?out/.test(r)) return 'slow';
    if (/needs more than|memory/.test(r)) return 'memory';
    if (/over the .*limit|too large|larger than/.test(r)) return 'too_large';
    if (/corrupt|damaged|not a (readable|docx|pdf|zip)|broken|zip archive|cannot be (read|opened)|invalid|malformed/
      .test(r)) return 'corrupt';
    return 'other';
  }

  /* The reason without the file name the API puts in front of it (so a name is never shown twice). */
  const bareReason = (source, reason) => {
    let r = String(reason || '');
    while (source && r.startsWith(source + ': ')) r = r.slice(source.length + 2);
    return r;
  };

  const fileSentence = (source, reason) => fmt('file_' + fileKind(reason), { source });

  /* One sentence in the page's language for an API problem (the technical text goes under details). */
  function say(err, hint = {}) {
    const title = String(err.title || '').toLowerCase();
    const errors = (err.body && err.body.errors) || [];
    if (err.status === 0) return T.unreachable;
    if (err.status === 403) return hint.write ? fmt('err_no_write', { name: hint.write }) : T.err_no_read;
    if (err.status === 401) return T.err_token;
    if (title === 'collection not found') return T.err_collection_gone;
    if (title === 'document not found') return T.err_document_gone;
    if (title === 'original file unavailable') return T.err_original_gone;
    if (title === 'not found' && /page/.test(err.detail || '')) return T.err_page_gone;
    if (title === 'no file could be ingested') return T.err_upload_none;
    if (errors.some((e) => (e.loc || []).includes('q') && /too_long/.test(e.type || ''))) {
      return fmt('err_query_too_long', { max: MAX_QUERY });
    }
    if (err.status === 413) return T.err_too_large;
    if (err.status === 409) return T.err_conflict;
    if (err.status === 503) return T.err_database;
    if (err.status === 422 && err.body && err.body.file) return fileSentence(err.body.file, err.detail);
    if (err.status === 400 || err.status === 422) return T.err_invalid;
    return T.err_generic;
  }

  function technical(err) {
    const text = [err.title, err.status ? `(${err.status})` : '', err.detail ? ': ' + err.detail : ''].join(' ');
    return el('details', { class: 'tech' }, el('summary', {}, T.details), el('p', {}, text.trim()));
  }

  function showError(err, extra, hint) {
    const box = $('alert');
    const report = err.body && err.body.report;
    const files = report && report.failed
      ? el('ul', { class: 'failures' }, report.failed.map((f) => el('li', {}, fileSentence(f.source, f.error))))
      : null;
    box.replaceChildren(...[el('p', { class: 'say' }, withCode(say(err, hint))), files, extra,
      err.status === 0 ? null : technical(err)].filter(Boolean));
    box.hidden = false;
  }

  function clearError() {
    $('alert').hidden = true;
    $('alert').replaceChildren();
  }

  const setStatus = (...parts) => $('status').replaceChildren(...parts.flat());

  // ---------------------------------------------------------------- views
  const VIEWS = ['search', 'viewer', 'browse', 'upload', 'token'];
  let lastView = 'search';

  function show(view) {
    for (const v of VIEWS) {
      const section = $(v + '-view');
      if (section) section.hidden = v !== view;
    }
    const tab = view === 'viewer' ? 'search' : view;
    for (const b of document.querySelectorAll('.tab')) {
      if (b.dataset.view === tab) b.setAttribute('aria-current', 'page');
      else b.removeAttribute('aria-current');
    }
    if (view !== 'token') lastView = view;
  }

  // ---------------------------------------------------------------- access and tokens
  let access = { read: true, write: false, read_token_required: false, writes_enabled: false };

  /* Rights per collection, from /v1/access: a token's scopes name its collections, or "*" for all. */
  const scopeOf = (right) => (access.scopes && access.scopes[right] !== undefined ? access.scopes[right] : '*');
  const writeAll = () => !!access.write && scopeOf('write') === '*';
  const canWrite = (name) => !!access.write && (writeAll() || [].concat(scopeOf('write')).includes(name));
  const writable = () => collections.filter((c) => canWrite(c.name)).map((c) => c.name);
  let tokenWaiter = null;

  async function refreshAccess() {
    access = await api('/v1/access');
    const write = !!access.write;
    const signIn = $('write-sign-in');
    if (signIn) signIn.hidden = write;
    if ($('write-on')) $('write-on').hidden = !write;
    $('sign-out').hidden = !token.get();
    const uploadTab = document.querySelector('.tab[data-view=upload]');
    if (uploadTab) uploadTab.hidden = !write;
    const upLabel = document.querySelector('label[for=up-collection]');
    if (upLabel) upLabel.textContent = writeAll() ? T.upload_collection : T.upload_collection_scoped;
    fillUploadNames();
    if (!write && lastView === 'upload') show('search');
    if (docs.name) renderDocs();
    return access;
  }

  /* Ask for a token once ('read' or 'write'); resolves true when it is accepted. */
  function askToken(kind) {
    $('token-why').replaceChildren(withCode(kind === 'read' ? T.read_token_needed : T.write_token_needed));
    $('token-error').textContent = '';
    $('token-input').value = '';
    $('token-cancel').hidden = kind === 'read';
    $('token-view').dataset.kind = kind;
    if (kind === 'read') document.body.dataset.locked = '1'; // nothing else works until the token is given
    const back = lastView;
    show('token');
    $('token-input').focus();
    return new Promise((resolve) => {
      tokenWaiter = (ok) => {
        tokenWaiter = null;
        if (ok) delete document.body.dataset.locked;
        show(ok || kind !== 'read' ? back : 'token');
        resolve(ok);
      };
    });
  }

  async function submitToken(ev) {
    ev.preventDefault();
    const kind = $('token-view').dataset.kind;
    const value = $('token-input').value.trim();
    if (!value) return;
    const previous = token.get();
    token.set(value);
    try {
      await refreshAccess();
    } catch (err) {
      showError(err);
      return;
    }
    if (kind === 'read' ? access.read : access.write) {
      $('token-input').value = '';
      if (tokenWaiter) tokenWaiter(true);
    } else {
      if (previous) token.set(previous);
      else token.clear();
      await refreshAccess().catch(() => {});
      $('token-error').textContent = T.token_wrong;
      $('token-input').select();
    }
  }

  // ---------------------------------------------------------------- collections
  let collections = [];

  async function loadCollections() {
    const data = await api('/v1/collections');
    collections = data.collections;
    renderPicker();
    renderCollectionsTable();
    fillUploadNames();
  }

  /* The upload form offers the collections this token may write to. */
  function fillUploadNames() {
    const names = $('collection-names');
    if (names) names.replaceChildren(...writable().map((n) => el('option', { value: n })));
  }

  function renderPicker() {
    const chosen = new Set(selectedCollections() || []);
    $('collection-boxes').replaceChildren(
      ...collections.map((c) =>
        el('label', { class: 'check' },
          el('input', { type: 'checkbox', name: 'collection', value: c.name, checked: chosen.has(c.name) }),
          ' ', c.name)),
    );
    $('all-collections').checked = !chosen.size || ![...chosen].some((n) => collections.some((c) => c.name === n));
  }

  /* Tick exactly `names` (those the page knows); "All" only when none of them is known. */
  function choose(names) {
    let any = false;
    for (const box of document.querySelectorAll('#collection-boxes input')) {
      box.checked = names.includes(box.value);
      any = any || box.checked;
    }
    $('all-collections').checked = !any;
  }

  /* null = all collections, else the chosen names (before the list could be loaded: the link's names). */
  function selectedCollections() {
    if (!loaded && wanted.length) return wanted;
    if ($('all-collections').checked) return null;
    const names = [...document.querySelectorAll('#collection-boxes input:checked')].map((i) => i.value);
    return names.length ? names : null;
  }

  function onPickerChange(ev) {
    const all = $('all-collections');
    const boxes = [...document.querySelectorAll('#collection-boxes input')];
    if (ev.target === all) {
      if (all.checked) boxes.forEach((b) => { b.checked = false; });
      else if (!boxes.some((b) => b.checked)) all.checked = true;
    } else {
      all.checked = !boxes.some((b) => b.checked);
    }
    if ($('q').value.trim()) runSearch();
  }

  /* The message for searching nothing, or null when at least one chosen collection has documents. */
  function emptyMessage(names) {
    if (!collections.length) return withCode(T.no_collections);
    const cols = names ? collections.filter((c) => names.includes(c.name)) : collections;
    if (names && cols.length < names.length) return null; // a name the page does not know: the API answers
    if (cols.some((c) => c.document_count > 0)) return null;
    const name = cols.length ? cols[0].name : 'NAME';
    if (!access.writes_enabled) return withCode(fmt('empty_collection', { name }));
    return [...withCode(fmt('empty_collection_upload', { name })), ' ',
      el('button', { type: 'button', class: 'quiet', id: 'offer-upload', onclick: () => offerUpload(name) },
        T.upload_offer)];
  }

  async function offerUpload(name) {
    if (!access.write && !(await askToken('write'))) return;
    if (!$('upload-form')) return;
    $('up-collection').value = name;
    go('upload');
    $('up-files').focus();
  }

  // ---------------------------------------------------------------- start-up (again after an outage)
  let loaded = false; // access and collections known
  let wanted = []; // the link's collections, kept until the list of collections could be loaded
  let notice = null; // one sentence to show with the next results (a link's unknown collections)

  /* What the page needs before it can search; a search calls it again when it failed (the database was away). */
  async function boot() {
    await refreshAccess();
    while (!access.read) await askToken('read');
    await loadCollections();
    loaded = true;
    const known = wanted.filter((n) => collections.some((c) => c.name === n));
    const unknown = wanted.filter((n) => !known.includes(n));
    choose(known);
    notice = unknown.length ? fmt('collections_unknown', { names: unknown.join(', ') }) : null;
    wanted = [];
  }

  // ---------------------------------------------------------------- search
  let searchSeq = 0;
  let shownSearch = null; // the URL query of the search whose results are shown

  function searchRequest(q) {
    const req = { q, mode: $('mode').value, k: Number($('k').value) || 10 };
    req.collections = selectedCollections() || '*';
    const filters = {};
    if ($('prefix').value.trim()) filters.source_prefix = $('prefix').value.trim();
    if ($('glob').value.trim()) filters.source_glob = $('glob').value.trim();
    const meta = {};
    for (const line of $('meta').value.split('\n')) {
      const i = line.indexOf('=');
      if (i > 0) meta[line.slice(0, i).trim()] = line.slice(i + 1).trim();
    }
    if (Object.keys(meta).length) filters.metadata = meta;
    if (Object.keys(filters).length) req.filters = filters;
    return req;
  }

  /* The search in the URL; `push`: a new history entry (Back returns to the previous search). */
  function saveState(push = false) {
    const p = new URLSearchParams();
    p.set('lang', LANG);
    const q = $('q').value.trim();
    if (q) p.set('q', q);
    for (const c of selectedCollections() || []) p.append('c', c);
    if ($('mode').value !== 'auto') p.set('mode', $('mode').value);
    if ($('k').value !== '10') p.set('k', $('k').value);
    if ($('prefix').value.trim()) p.set('prefix', $('prefix').value.trim());
    if ($('glob').value.trim()) p.set('glob', $('glob').value.trim());
    if ($('meta').value.trim()) p.set('meta', $('meta').value.trim());
    const url = '?' + p.toString();
    if (push && url !== location.search) history.pushState({ view: 'search' }, '', url);
    else history.replaceState(history.state, '', url);
    langLinks(p);
  }

  /* The language links keep everything else in the URL (search, collections, view). */
  function langLinks(params) {
    const p = new URLSearchParams(params);
    for (const a of document.querySelectorAll('.langs a')) {
      p.set('lang', a.dataset.lang);
      a.href = '?' + p.toString();
    }
  }

  function restoreState() {
    const p = new URLSearchParams(location.search);
    $('q').value = p.get('q') || '';
    const mode = p.get('mode');
    if (mode && [...$('mode').options].some((o) => o.value === mode)) $('mode').value = mode;
    if (p.get('k')) $('k').value = String(Math.min(MAX_K, Math.max(1, Math.round(Number(p.get('k'))) || 10)));
    $('prefix').value = p.get('prefix') || '';
    $('glob').value = p.get('glob') || '';
    $('meta').value = p.get('meta') || '';
    if (mode || p.get('prefix') || p.get('glob') || p.get('meta')) $('more').open = true;
    return p.getAll('c');
  }

  async function runSearch({ push = true } = {}) {
    const raw = $('q').value;
    const q = raw.trim();
    clearError();
    if (!loaded) {
      try {
        await boot();
      } catch (err) {
        showError(err);
        return;
      }
    }
    if (!q) {
      $('results').replaceChildren();
      setStatus(raw.length ? T.query_blank : '');
      $('q').focus();
      return;
    }
    const n = Array.from(q).length;
    if (n > MAX_QUERY) {
      $('results').replaceChildren();
      setStatus(fmt('query_too_long', { n, max: MAX_QUERY }));
      $('q').focus();
      return;
    }
    saveState(push);
    shownSearch = location.search;
    const seq = ++searchSeq;
    const req = searchRequest(q);
    const empty = emptyMessage(selectedCollections());
    if (empty) {
      $('results').replaceChildren();
      setStatus(empty);
      return;
    }
    setStatus(T.searching);
    $('results').setAttribute('aria-busy', 'true');
    let data;
    try {
      data = await api('/v1/search', { method: 'POST', json: req });
    } catch (err) {
      if (seq !== searchSeq) return;
      $('results').removeAttribute('aria-busy');
      $('results').replaceChildren();
      setStatus('');
      showError(err);
      return;
    }
    if (seq !== searchSeq) return;
    for (const name of ['kaynak:search-response', 'kaynak:results-rendered', 'kaynak:highlighted']) {
      performance.clearMarks(name); // keep the latest search's timings only
    }
    performance.clearMeasures('kaynak:first-result');
    performance.clearMeasures('kaynak:first-highlighted');
    performance.mark('kaynak:search-response');
    const hits = data.hits || [];
    const quotes = renderResults(hits);
    performance.mark('kaynak:results-rendered');
    performance.measure('kaynak:first-result', 'kaynak:search-response', 'kaynak:results-rendered');
    $('results').removeAttribute('aria-busy');
    const docsCount = new Set(hits.map(docKey)).size;
    let count = T.no_results;
    if (hits.length) {
      if (docsCount >= hits.length) count = fmt('n_results', { n: hits.length });
      else count = fmt(docsCount === 1 ? 'n_results_doc1' : 'n_results_docs', { n: hits.length, d: docsCount });
    }
    const notes = [];
    if (notice) notes.push(el('span', { class: 'weak-notice', id: 'collections-notice' }, notice), ' ');
    notice = null;
    if (data.phrase_missing === true) notes.push(el('span', { class: 'weak-notice', id: 'phrase-notice' }, T.phrase_missing), ' ');
    if (data.no_good_match === true && hits.length) notes.push(el('span', { class: 'weak-notice' }, T.no_good_match), ' ');
    setStatus(...notes, count);
    if (hits.length) await highlight(q, hits, quotes, seq);
  }

  async function highlight(q, hits, quotes, seq) {
    let data;
    try {
      data = await api('/v1/highlights', {
        method: 'POST', json: { q, items: hits.map((h) => ({ collection: h.collection, text: h.quote.text })) },
      });
    } catch (err) {
      showError(err);
      return;
    }
    if (seq !== searchSeq) return;
    data.highlights.forEach((spans, i) => {
      hits[i].spans = spans;
      quotes[i].replaceChildren(...marked(hits[i].quote.text, spans));
    });
    performance.mark('kaynak:highlighted');
    performance.measure('kaynak:first-highlighted', 'kaynak:search-response', 'kaynak:highlighted');
    document.body.dataset.highlighted = String(seq);
  }

  const isPdf = (source) => /\.pdf$/i.test(source);
  const fileUrl = (id) => `/v1/documents/${Number(id)}/file`;

  /* Opens an original file; with a token, through a blob (links cannot send the header). A PDF is shown as an
   * application/pdf blob at the page; every other format as text/plain (shown, never interpreted in this origin);
   * DOCX, which a browser cannot show, is saved as a download. */
  async function openFile(ev, id, page, source) {
    ev.preventDefault();
    const pdf = isPdf(source);
    const docx = /\.docx$/i.test(source);
    const tab = docx ? null : window.open('', '_blank');
    if (!token.get()) { // the server's own answer (HTML in its sandbox), once it is known to be there
      try {
        const ctrl = new AbortController();
        const res = await fetch(fileUrl(id), { credentials: 'omit', cache: 'no-store', signal: ctrl.signal });
        if (!res.ok) throw await problem(res);
        ctrl.abort();
      } catch (err) {
        if (tab) tab.close();
        showError(err.status === undefined ? new ApiError(0, T.error, T.unreachable) : err);
        return;
      }
      const target = fileUrl(id) + (pdf ? '#page=' + page : '');
      if (tab) tab.location.href = target;
      else window.location.href = target;
      return;
    }
    try {
      const res = await api(fileUrl(id), { raw: true });
      const type = pdf ? 'application/pdf' : docx ? 'application/octet-stream' : 'text/plain;charset=utf-8';
      const blob = new Blob([await res.blob()], { type });
      const url = URL.createObjectURL(blob);
      setTimeout(() => URL.revokeObjectURL(url), 120000);
      const target = url + (pdf ? '#page=' + page : '');
      if (docx) {
        const a = el('a', { href: url, download: source.split('/').pop() || 'document' });
        document.body.append(a);
        a.click();
        a.remove();
      } else if (tab) {
        tab.location.href = target;
      } else {
        window.location.href = target;
      }
    } catch (err) {
      if (tab) tab.close();
      showError(err);
    }
  }

  function badge(text, title, cls) {
    return el('span', { class: 'badge' + (cls ? ' ' + cls : ''), title }, text);
  }

  const docKey = (hit) => hit.collection + '\u0000' + hit.source;
  const baseName = (source) => source.split('/').pop() || source;

  /* Code reads better in a monospace font: fenced blocks, or mostly indented lines or lines ending like code. */
  function looksLikeCode(text) {
    if (/```|~~~/.test(text)) return true;
    const lines = text.split('\n').filter((l) => l.trim());
    if (lines.length < 2) return false;
    const codeLine = /[;{}]\s*$|^\s*(import|from|def|class|const|let|function|return|<\/?[a-z])\b/;
    const codeish = lines.filter((l) => /^(\t| {2,})\S/.test(l) || codeLine.test(l));
    return codeish.length * 2 >= lines.length;
  }

  function matchBadge(hit) {
    const m = hit.match;
    if (!m || typeof m !== 'object') return null;
    if (m.label === 'weak') return [' ', badge(T.weak_match, T.weak_match_title, 'weak')];
    if (m.label === 'partial') return [' ', badge(T.partial_match, null, 'partial')];
    if (m.label === 'strong') return [' ', badge(T.strong_match, T.strong_match_title, 'strong')];
    return null;
  }

  function hitItem(hit, quotes, i, extra) {
    const cls = ['quote', looksLikeCode(hit.quote.text) ? 'code' : '', hit.quote.cut_start ? 'cut-start' : '',
      hit.quote.cut_end ? 'cut-end' : ''].filter(Boolean).join(' ');
    const quote = el('blockquote', { class: cls }, hit.quote.text);
    quotes[i] = quote;
    const ctxBox = el('div', { class: 'context', hidden: true });
    const ctxBtn = el('button', { type: 'button', class: 'quiet', 'aria-expanded': 'false' }, T.more_context);
    ctxBtn.addEventListener('click', () => toggleContext(hit, ctxBtn, ctxBox, quote));
    const pdf = isPdf(hit.source) && hit.document_id;
    const name = hit.title && hit.title.trim() ? hit.title.trim() : baseName(hit.source);
    const title = el('a', {
      class: 'source', href: '#page', title: pdf ? T.open_page : T.open_text, onclick: (ev) => openHit(ev, hit),
    }, name);
    const original = hit.document_id
      ? el('a', {
        class: 'original', href: fileUrl(hit.document_id) + (pdf ? `#page=${hit.page}` : ''), target: '_blank',
        rel: 'noopener', 'data-action': 'original',
        onclick: (ev) => openFile(ev, hit.document_id, hit.page, hit.source),
      }, T.open_original)
      : null;
    const ranks = el('details', { class: 'ranks' }, el('summary', {}, T.ranks), rankList(hit.scores || {}));
    const weak = hit.match && hit.match.label === 'weak';
    return el('li', { class: weak ? 'hit weak' : 'hit', 'data-collection': hit.collection },
      el('h3', {}, title),
      el('p', { class: 'path' }, hit.source),
      el('p', { class: 'where' },
        el('span', { class: 'label' }, T.page), ' ', String(hit.page),
        hit.section ? [' · ', el('span', { class: 'label' }, T.section), ' ', hit.section] : null,
        ' · ', el('span', { class: 'label' }, T.collection), ' ', hit.collection,
        hit.ocr ? [' ', badge('OCR', hit.ocr.confidence != null ? String(hit.ocr.confidence) : null)] : null,
        hit.stale ? [' ', badge(T.stale)] : null,
        matchBadge(hit)),
      quote,
      ctxBox,
      el('div', { class: 'actions' }, ctxBtn, original, ranks),
      extra || null);
  }

  /* Hits in rank order; later hits of a document already shown fold under its first hit. */
  function renderResults(hits) {
    const quotes = [];
    const groups = new Map();
    hits.forEach((hit, i) => {
      const key = docKey(hit);
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(i);
    });
    const items = [];
    for (const idx of groups.values()) {
      const [first, ...rest] = idx;
      let more = null;
      if (rest.length) {
        const list = el('ol', { class: 'results nested' }, rest.map((j) => hitItem(hits[j], quotes, j)));
        more = el('details', { class: 'more-hits' }, el('summary', {}, fmt('more_from_doc', { n: rest.length })), list);
      }
      items.push(hitItem(hits[first], quotes, first, more));
    }
    $('results').replaceChildren(...items);
    return quotes;
  }

  function rankList(s) {
    const rank = (r) => (r === null || r === undefined ? T.not_found_by : '#' + r);
    const rows = [[T.rank_vector, rank(s.vector_rank)], [T.rank_keyword, rank(s.keyword_rank)]];
    if (typeof s.fused === 'number') rows.push([T.score_fused, s.fused.toFixed(4)]);
    if (typeof s.rerank === 'number') rows.push([T.score_rerank, s.rerank.toFixed(3)]);
    return el('dl', {}, rows.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  }

  /* Neighbouring chunks around the hit, in place of the quote; overlapping text on the same page is cut. */
  async function toggleContext(hit, btn, box, quote) {
    const open = btn.getAttribute('aria-expanded') === 'true';
    if (open || box.dataset.loaded) {
      box.hidden = open;
      quote.hidden = !open;
      btn.setAttribute('aria-expanded', String(!open));
      btn.textContent = open ? T.more_context : T.less_context;
      return;
    }
    let data;
    try {
      data = await api(`/v1/chunks/${enc(hit.chunk_id)}?before=1&after=1`);
    } catch (err) {
      showError(err);
      return;
    }
    const parts = [];
    for (const c of data.context) {
      const cps = Array.from(c.text);
      if (c.id === hit.chunk_id) {
        const qs = hit.quote.char_start - c.char_start;
        const qe = hit.quote.char_end - c.char_start;
        parts.push(el('p', { class: 'ctx-hit' },
          cps.slice(0, qs).join('').trimStart(),
          el('mark', { class: 'quote-mark' }, marked(hit.quote.text, hit.spans)),
          cps.slice(qe).join('').trimEnd()));
      } else if (c.ord < (data.chunk ? data.chunk.ord : 0)) {
        const cut = c.page === hit.page ? Math.max(0, Math.min(cps.length, hit.char_start - c.char_start)) : cps.length;
        const text = cps.slice(0, cut).join('').trim(); // no blank lines at the edges: they showed as a gap
        if (text) parts.push(el('p', { class: 'ctx-near' }, text));
      } else {
        const from = c.page === hit.page ? Math.max(0, Math.min(cps.length, hit.char_end - c.char_start)) : 0;
        const text = cps.slice(from).join('').trim();
        if (text) parts.push(el('p', { class: 'ctx-near' }, text));
      }
    }
    box.replaceChildren(...parts);
    box.classList.toggle('code', looksLikeCode(data.context.map((c) => c.text).join('\n')));
    box.dataset.loaded = '1';
    box.hidden = false;
    quote.hidden = true;
    btn.setAttribute('aria-expanded', 'true');
    btn.textContent = T.less_context;
    btn.scrollIntoView({ block: 'nearest' });
  }

  // ---------------------------------------------------------------- page viewer
  let viewer = null;
  let viewerReturn = null;

  const viewerState = (v) => ({
    collection: v.collection, source: v.source, page: v.page, documentId: v.documentId, pageCount: v.pageCount,
    start: v.start, end: v.end, quoteText: v.quoteText, spans: v.spans, from: v.from,
  });

  function openHit(ev, hit) {
    ev.preventDefault();
    viewerReturn = ev.currentTarget;
    openViewer({
      collection: hit.collection, source: hit.source, page: hit.page, documentId: hit.document_id,
      start: hit.quote.char_start, end: hit.quote.char_end, spans: hit.spans, quoteText: hit.quote.text,
      from: 'search',
    });
  }

  /* The page view of one page; `push`: a new history entry (Back returns), else the current one is replaced. */
  async function openViewer(v, push = true) {
    viewer = v;
    clearError();
    if (push) history.pushState({ view: 'viewer', viewer: viewerState(v) }, '', location.href);
    else history.replaceState({ view: 'viewer', viewer: viewerState(v) }, '', location.href);
    show('viewer');
    $('viewer-heading').textContent = fmt('viewer_heading', { source: v.source, page: v.page });
    const text = $('viewer-text');
    text.replaceChildren(T.loading);
    const pdf = isPdf(v.source) && !!v.documentId;
    $('viewer-figure').hidden = !pdf;
    $('viewer-text-heading').hidden = !pdf;
    $('viewer-image').removeAttribute('src');
    $('viewer-box').hidden = true;
    $('viewer-caption').textContent = '';
    const original = $('viewer-original');
    original.hidden = !v.documentId;
    if (v.documentId) original.href = fileUrl(v.documentId) + (isPdf(v.source) ? '#page=' + v.page : '');
    $('viewer-prev').disabled = v.page <= 1;
    $('viewer-next').disabled = v.pageCount !== undefined && v.page >= v.pageCount;
    const quoted = v.start !== undefined && v.start >= 0 && v.end > v.start;
    if (pdf) drawPdfPage(v, quoted);
    let data;
    try {
      const [page, doc] = await Promise.all([
        api(`/v1/collections/${enc(v.collection)}/page?source=${enc(v.source)}&number=${v.page}`),
        v.pageCount === undefined
          ? api(`/v1/collections/${enc(v.collection)}/documents/${encPath(v.source)}`).catch(() => null)
          : null,
      ]);
      data = page;
      if (doc) v.pageCount = doc.page_count;
    } catch (err) {
      if (viewer !== v) return;
      text.replaceChildren();
      $('viewer-figure').hidden = true;
      $('viewer-next').disabled = true; // a page that is not there has no next one
      if (err.status === 404) {
        $('viewer-prev').disabled = true;
        $('viewer-original').hidden = true; // the document is gone: so is its original
      }
      showError(err);
      return;
    }
    if (viewer !== v) return;
    $('viewer-next').disabled = v.pageCount !== undefined && v.page >= v.pageCount;
    const cps = Array.from(data.text);
    if (quoted && v.end <= cps.length) {
      const quote = cps.slice(v.start, v.end).join('');
      const mark = el('mark', { id: 'quote', class: 'quote-mark', tabindex: '-1', 'aria-label': T.quote_here },
        quote === v.quoteText ? marked(quote, v.spans) : quote);
      text.replaceChildren(cps.slice(0, v.start).join('').trimEnd(), mark, cps.slice(v.end).join('').trimStart());
      if (!pdf) {
        mark.scrollIntoView({ block: 'center' });
        mark.focus({ preventScroll: true });
      }
    } else {
      text.replaceChildren(data.text);
      if (!pdf) $('viewer-heading').focus();
    }
  }

  /* The PDF page drawn by the server with the quote marked; one focusable box around the passage. */
  async function drawPdfPage(v, quoted) {
    const q = quoted ? `&start=${Number(v.start)}&end=${Number(v.end)}` : '';
    const wanted = Math.min(window.innerWidth, 1100) * (window.devicePixelRatio || 1);
    const width = Math.min(2000, Math.max(600, Math.round(wanted)));
    let data;
    try {
      data = await api(`/v1/documents/${Number(v.documentId)}/pages/${Number(v.page)}/image?width=${width}${q}`);
    } catch (err) {
      if (viewer !== v) return;
      $('viewer-figure').hidden = true;
      $('viewer-text-heading').hidden = true;
      if (err.status !== 404) showError(err);
      return;
    }
    if (viewer !== v) return;
    const img = $('viewer-image');
    img.alt = fmt('page_image_alt', { source: v.source, page: v.page });
    img.width = data.width;
    img.height = data.height;
    await new Promise((resolve) => {
      img.onload = resolve;
      img.onerror = resolve;
      img.src = data.image;
    });
    if (viewer !== v) return;
    const box = $('viewer-box');
    for (const extra of document.querySelectorAll('.pdf-box.extra')) extra.remove();
    if (data.found && data.boxes.length) {
      // one frame per column the passage runs through (a quote wrapping from one column to the next is two
      // frames, not one over both columns), a little outside the letters so it never covers them
      const frames = columnFrames(data.boxes);
      frames.forEach(([x0, y0, x1, y1], i) => {
        const frame = i === 0 ? box : el('span', { class: 'pdf-box extra', 'aria-hidden': 'true' });
        frame.style.left = (100 * x0) + '%';
        frame.style.top = (100 * y0) + '%';
        frame.style.width = (100 * (x1 - x0)) + '%';
        frame.style.height = (100 * (y1 - y0)) + '%';
        if (i > 0) box.after(frame);
      });
      box.hidden = false;
      box.scrollIntoView({ block: 'center' });
      box.focus({ preventScroll: true });
    } else {
      box.hidden = true;
      if (quoted) $('viewer-caption').textContent = T.page_image_missing;
      $('viewer-heading').focus();
    }
    document.body.dataset.pageDrawn = String(v.page);
  }

  /* The passage's line boxes grouped by column (boxes whose horizontal extents overlap), each group's frame
   * [x0, y0, x1, y1] in page fractions, widened by a small margin and kept on the page. */
  function columnFrames(boxes) {
    const groups = [];
    for (const [l, t, w, h] of [...boxes].sort((a, b) => a[0] - b[0])) {
      const g = groups.find((f) => l < f[2] && l + w > f[0]);
      if (g) {
        g[0] = Math.min(g[0], l); g[1] = Math.min(g[1], t); g[2] = Math.max(g[2], l + w); g[3] = Math.max(g[3], t + h);
      } else groups.push([l, t, l + w, t + h]);
    }
    const pad = 0.004;
    return groups.sort((a, b) => a[0] - b[0]).map(([x0, y0, x1, y1]) =>
      [Math.max(0, x0 - pad), Math.max(0, y0 - pad), Math.min(1, x1 + pad), Math.min(1, y1 + pad)]);
  }

  function viewerPage(delta) {
    if (!viewer) return;
    openViewer({
      collection: viewer.collection, source: viewer.source, page: viewer.page + delta,
      documentId: viewer.documentId, pageCount: viewer.pageCount, from: viewer.from,
    }, false);
  }

  /* Leaving the page view: back through history when the view is an entry of its own. */
  function viewerBack() {
    if (history.state && history.state.view === 'viewer') history.back();
    else closeViewer('search');
  }

  function closeViewer(to) {
    viewer = null;
    const back = to || (viewerReturn && viewerReturn.closest('#browse-view') ? 'browse' : 'search');
    show(back);
    if (viewerReturn && document.contains(viewerReturn)) viewerReturn.focus();
  }

  /* Tabs are history entries too, so Back walks through what the person saw. */
  function go(view) {
    const p = new URLSearchParams(location.search);
    if (view === 'browse' || view === 'upload') p.set('v', view);
    else p.delete('v'); // the view is in the URL, so a reload or a language switch stays on it
    history.pushState({ view }, '', '?' + p.toString());
    langLinks(p);
    show(view);
  }

  function onPopState(ev) {
    const state = ev.state || { view: 'search' };
    if (document.body.dataset.locked) return;
    clearError();
    if (state.view === 'viewer' && state.viewer) {
      openViewer(state.viewer, false);
    } else if (!$('viewer-view').hidden) {
      closeViewer(state.view || 'search');
    } else {
      const known = state.view && $(state.view + '-view') && (state.view !== 'upload' || access.write);
      show(known ? state.view : 'search');
      if (state.view === 'browse') loadCollections().catch(showError);
    }
    if ((!state.view || state.view === 'search') && location.search !== shownSearch) {
      const names = restoreState(); // Back or Forward to another search: show it again
      if (loaded) choose(names);
      if ($('q').value.trim()) runSearch({ push: false });
      else {
        shownSearch = location.search;
        $('results').replaceChildren();
        setStatus('');
      }
    }
  }

  // ---------------------------------------------------------------- browse
  const docs = { name: null, list: [], sort: 'source', dir: 1, open: new Set() };

  const statuses = new Map(); // collection name → /status answer (failing files)

  function stateCell(c) {
    const st = statuses.get(c.name);
    if (!st) return el('td', { 'data-label': T.col_state }, '');
    if (!st.files_failing) return el('td', { 'data-label': T.col_state }, T.state_ok);
    return el('td', { 'data-label': T.col_state },
      el('button', { type: 'button', class: 'linkish failing', onclick: () => openDocuments(c.name) },
        '⚠ ' + fmt('failing_count', { n: st.files_failing })));
  }

  function renderCollectionsTable() {
    const tbody = document.querySelector('#collections-table tbody');
    if (!collections.length) {
      tbody.replaceChildren(el('tr', {}, el('td', { colspan: '6' }, withCode(T.no_collections))));
      return;
    }
    tbody.replaceChildren(...collections.map((c) => el('tr', {},
      el('th', { scope: 'row', 'data-label': T.col_name },
        el('button', { type: 'button', class: 'linkish', onclick: () => openDocuments(c.name) }, c.name)),
      el('td', { 'data-label': T.col_language }, languageLabel(c)),
      el('td', { 'data-label': T.col_embedder }, c.embedder),
      el('td', { class: 'num', 'data-label': T.col_docs }, String(c.document_count)),
      el('td', { class: 'num', 'data-label': T.col_chunks }, String(c.chunk_count)),
      stateCell(c))));
  }

  /* A collection's language; one holding documents in several languages names them all ("İngilizce, Türkçe"). */
  function languageLabel(c) {
    const langs = (c.document_languages || []).length > 1 ? c.document_languages : [c.language];
    return langs.map((l) => T['lang_' + l] || l).join(', ');
  }

  /* Failing files of each collection (at most 50 collections asked, in parallel), then the table again. */
  async function loadStatuses() {
    await Promise.all(collections.slice(0, 50).map(async (c) => {
      try {
        statuses.set(c.name, await api(`/v1/collections/${enc(c.name)}/status`));
      } catch (_) {
        statuses.delete(c.name);
      }
    }));
    renderCollectionsTable();
    if (docs.name) renderProblems();
  }

  async function openDocuments(name) {
    clearError();
    let data;
    try {
      data = await api(`/v1/collections/${enc(name)}/documents?limit=10000`);
    } catch (err) {
      showError(err);
      return;
    }
    Object.assign(docs, { name, list: data.documents, open: new Set() });
    $('documents-panel').hidden = false;
    $('documents-heading').textContent = fmt('documents_of', { name });
    renderProblems();
    renderDocs();
    $('documents-heading').focus();
    if (!statuses.has(name)) {
      try {
        statuses.set(name, await api(`/v1/collections/${enc(name)}/status`));
        if (docs.name === name) renderProblems();
      } catch (_) { /* the list of documents is what matters */ }
    }
  }

  /* The opened collection's failing files (with reasons) and its documents with warnings. */
  function renderProblems() {
    const st = statuses.get(docs.name);
    const failing = (st && st.failing) || [];
    const warned = docs.list.filter((d) => (d.warnings || []).length);
    const out = [];
    if (failing.length) {
      out.push(el('h4', {}, T.failing_heading), el('ul', { class: 'failures', id: 'failing-files' },
        failing.map((f) => el('li', {}, fileSentence(f.source, f.reason), ' ',
          el('details', { class: 'tech' }, el('summary', {}, T.details),
            el('p', {}, bareReason(f.source, f.reason)))))));
    }
    if (warned.length) {
      out.push(el('h4', {}, T.warnings_heading), el('ul', { class: 'warnings', id: 'warned-docs' },
        warned.map((d) => el('li', {}, d.source + ': ', warningsView(d.warnings || [])))));
    }
    $('collection-problems').replaceChildren(...out);
  }

  /* Warnings are the loaders' English sentences: on a page in another language, one sentence in it, with the
   * English text under "technical details" (as for errors). */
  function warningsView(list) {
    const texts = list.map(warningText);
    if (LANG === 'en') return texts.join('; ');
    return [fmt('warnings_summary', { n: texts.length }), ' ',
      el('details', { class: 'tech' }, el('summary', {}, T.details), el('p', {}, texts.join('; ')))];
  }

  const warningText = (w) => (typeof w === 'string' ? w : [w.page ? `p. ${w.page}` : '', w.message || w.warning
    || JSON.stringify(w)].filter(Boolean).join(': '));

  /* Folding for the path filter: Turkish İ/I/ı/i are one letter, so "I1040" finds "i1040nr.pdf" in any language. */
  const fold = (text) => String(text).replace(/[İIı]/g, 'i').toLocaleLowerCase(LANG);

  function renderDocs() {
    const filter = fold($('doc-filter').value.trim());
    const key = docs.sort;
    const rows = docs.list
      .filter((d) => !filter || fold(d.source).includes(filter))
      .sort((a, b) => {
        const x = a[key] ?? '';
        const y = b[key] ?? '';
        const c = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y), LANG);
        return c * docs.dir;
      });
    for (const th of document.querySelectorAll('#documents-table th')) {
      const b = th.querySelector('button');
      if (b && b.dataset.sort === key) th.setAttribute('aria-sort', docs.dir > 0 ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    }
    const tbody = document.querySelector('#documents-table tbody');
    if (!rows.length) {
      const col = collections.find((c) => c.name === docs.name);
      const msg = col && col.document_count === 0 && !docs.list.length
        ? fmt('empty_collection', { name: docs.name }) : T.no_documents;
      tbody.replaceChildren(el('tr', {}, el('td', { colspan: '5' }, withCode(msg))));
      return;
    }
    const out = [];
    for (const d of rows) {
      const isOpen = docs.open.has(d.id);
      const warnings = d.warnings || [];
      out.push(el('tr', {},
        el('th', { scope: 'row', 'data-label': T.doc_source },
          el('button', {
            type: 'button', class: 'linkish', 'aria-expanded': String(isOpen),
            onclick: () => { if (isOpen) docs.open.delete(d.id); else docs.open.add(d.id); renderDocs(); },
          }, d.source),
          warnings.length ? [' ', badge('⚠ ' + warnings.length, T.doc_warnings)] : null),
        el('td', { 'data-label': T.doc_title }, d.title),
        el('td', { class: 'num', 'data-label': T.doc_pages }, String(d.page_count)),
        el('td', { class: 'num', 'data-label': T.doc_chunks }, String(d.chunk_count)),
        el('td', { 'data-label': T.doc_ingested }, localTime(d.ingested_at))));
      if (isOpen) out.push(el('tr', { class: 'doc-detail' }, el('td', { colspan: '5' }, docDetail(d, warnings))));
    }
    tbody.replaceChildren(...out);
  }

  /* An ISO 8601 time from the API in the browser's time zone and language ("8.12.2026 01:23"). */
  function localTime(iso) {
    if (!iso) return '';
    const t = new Date(String(iso).replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'));
    if (Number.isNaN(t.getTime())) return String(iso).slice(0, 16).replace('T', ' ');
    return t.toLocaleString(LANG === 'tr' ? 'tr-TR' : 'en-GB', { dateStyle: 'short', timeStyle: 'short' });
  }

  function docDetail(d, warnings) {
    const pages = [];
    for (let p = 1; p <= Math.min(d.page_count, 500); p++) {
      pages.push(el('li', {}, el('button', {
        type: 'button', class: 'linkish',
        onclick: (ev) => {
          viewerReturn = ev.currentTarget;
          openViewer({ collection: d.collection, source: d.source, page: p, documentId: d.id,
            pageCount: d.page_count, from: 'browse' });
        },
      }, String(p))));
    }
    return [
      el('p', { class: 'label' }, T.pages),
      el('ul', { class: 'pages' }, pages),
      warnings.length ? [el('p', { class: 'label' }, T.doc_warnings),
        el('p', { class: 'warnings' }, warningsView(warnings))] : null,
      el('div', { class: 'actions' },
        d.origin === null ? null : el('a', {
          href: fileUrl(d.id) + (isPdf(d.source) ? '#page=1' : ''), target: '_blank', rel: 'noopener',
          onclick: (ev) => openFile(ev, d.id, 1, d.source),
        }, T.open_original),
        canWrite(d.collection)
          ? el('button', { type: 'button', class: 'danger', onclick: () => deleteDoc(d) }, T.delete) : null),
    ];
  }

  async function deleteDoc(d) {
    if (!canWrite(d.collection) || !window.confirm(fmt('confirm_delete', { source: d.source }))) return;
    clearError();
    $('browse-status').textContent = '';
    try {
      await api(`/v1/collections/${enc(d.collection)}/documents/${encPath(d.source)}`, { method: 'DELETE' });
    } catch (err) {
      showError(err, null, { write: d.collection });
      return;
    }
    await loadCollections().catch(showError);
    await openDocuments(d.collection);
    $('browse-status').textContent = fmt('deleted', { source: d.source }); // where the person is looking
  }

  // ---------------------------------------------------------------- upload
  function upload(ev) {
    ev.preventDefault();
    if (!access.write) return;
    const name = $('up-collection').value.trim();
    const status = $('up-status');
    clearError();
    $('up-failed').replaceChildren();
    $('up-skipped').replaceChildren();
    const pathOf = (f) => f.webkitRelativePath || f.name;
    const picked = [...$('up-files').files, ...$('up-folder').files].filter((f) => !JUNK.test(pathOf(f)));
    const readable = (f) => EXTENSIONS.some((x) => f.name.toLowerCase().endsWith(x));
    const limit = MAX_UPLOAD_MB * 1024 * 1024;
    const tooBig = picked.filter((f) => readable(f) && f.size > limit);
    const files = picked.filter((f) => readable(f) && f.size <= limit);
    const skipped = picked.filter((f) => !readable(f));
    const notes = [];
    if (skipped.length) {
      notes.push(el('p', { class: 'label' }, T.skipped_heading),
        el('ul', { class: 'skipped' }, skipped.map((f) => el('li', {}, fmt('skipped_file', { source: pathOf(f) })))),
        el('p', { class: 'types' }, fmt('skipped_types', { exts: EXTENSIONS.join(' ') })));
    }
    if (tooBig.length) {
      notes.push(el('ul', { class: 'failures' }, tooBig.map((f) => el('li', {}, fmt('upload_too_big', {
        source: pathOf(f), size: (f.size / 1048576).toFixed(1), max: MAX_UPLOAD_MB,
      })))));
    }
    $('up-skipped').replaceChildren(...notes);
    if (!name) {
      status.textContent = T.upload_collection;
      $('up-collection').focus();
      return;
    }
    if (!canWrite(name)) {
      status.textContent = fmt('upload_no_new_collection', { names: writable().join(', ') || '-' });
      $('up-collection').focus();
      return;
    }
    if (!files.length) {
      status.textContent = picked.length ? (tooBig.length ? '' : T.upload_none_readable) : T.upload_pick;
      return;
    }
    if (files.reduce((n, f) => n + f.size, 0) > limit) {
      status.textContent = T.err_too_large;
      return;
    }
    const form = new FormData();
    for (const f of files) form.append('files', f, f.webkitRelativePath || f.name);
    const progress = $('up-progress');
    progress.hidden = false;
    progress.value = 0;
    $('up-submit').disabled = true;
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/v1/collections/${enc(name)}/documents`);
    for (const [k, v] of Object.entries(authHeaders())) xhr.setRequestHeader(k, v);
    xhr.upload.addEventListener('progress', (e) => {
      if (!e.lengthComputable) return;
      const pct = Math.round((100 * e.loaded) / e.total);
      progress.value = pct;
      status.textContent = fmt('upload_sending', { pct });
    });
    xhr.upload.addEventListener('load', () => {
      progress.removeAttribute('value');
      status.textContent = T.upload_ingesting;
    });
    const done = () => {
      $('up-submit').disabled = false;
      progress.hidden = true;
    };
    xhr.addEventListener('error', () => {
      done();
      status.textContent = '';
      showError(new ApiError(0, T.error, T.unreachable));
    });
    xhr.addEventListener('load', async () => {
      done();
      statuses.clear();
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch (_) {
        /* not JSON */
      }
      if (xhr.status !== 200 && xhr.status !== 207) {
        status.textContent = '';
        showError(new ApiError(xhr.status, (body && body.title) || T.error, (body && body.detail) || xhr.statusText,
          body), null, { write: name });
        $('up-files').value = '';
        $('up-folder').value = '';
        await loadCollections().catch(() => {});
        return;
      }
      status.textContent = fmt('upload_done', {
        added: body.added.length, updated: body.updated.length, unchanged: body.unchanged.length,
        partial: (body.partial || []).length, failed: body.failed.length,
      });
      $('up-failed').replaceChildren(...body.failed.map((f) => el('li', {}, fileSentence(f.source, f.error || f.reason),
        ' ', el('details', { class: 'tech' }, el('summary', {}, T.details),
          el('p', {}, bareReason(f.source, f.error || f.reason || ''))))));
      const failedNames = new Set(body.failed.map((f) => f.source));
      const warned = (body.warnings || []).filter((w) => !failedNames.has(w.source));
      if (warned.length) {
        $('up-skipped').append(el('p', { class: 'label' }, T.upload_warnings_heading),
          el('ul', { class: 'warnings', id: 'up-warnings' }, warned.map((w) => el('li', {}, w.source + ': ',
            warningsView([w.warning])))));
      }
      $('up-files').value = '';
      $('up-folder').value = '';
      await loadCollections().catch(showError);
    });
    clearError();
    xhr.send(form);
  }

  // ---------------------------------------------------------------- start
  async function start() {
    $('search-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      runSearch();
    });
    $('collections').addEventListener('change', onPickerChange);
    $('token-form').addEventListener('submit', submitToken);
    $('token-cancel').addEventListener('click', () => tokenWaiter && tokenWaiter(false));
    $('viewer-back').addEventListener('click', viewerBack);
    $('viewer-original').addEventListener('click', (ev) => {
      if (viewer) openFile(ev, viewer.documentId, viewer.page, viewer.source);
    });
    $('viewer-prev').addEventListener('click', () => viewerPage(-1));
    $('viewer-next').addEventListener('click', () => viewerPage(1));
    $('doc-filter').addEventListener('input', renderDocs);
    for (const b of document.querySelectorAll('#documents-table thead button')) {
      b.addEventListener('click', () => {
        docs.dir = docs.sort === b.dataset.sort ? -docs.dir : 1;
        docs.sort = b.dataset.sort;
        renderDocs();
      });
    }
    for (const tab of document.querySelectorAll('.tab')) {
      tab.addEventListener('click', () => {
        clearError();
        const view = tab.dataset.view;
        if (view === lastView && $('viewer-view').hidden) return;
        go(view);
        if (view === 'browse') {
          $('browse-status').textContent = '';
          loadCollections().then(loadStatuses).catch(showError);
        }
      });
    }
    window.addEventListener('popstate', onPopState);
    document.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && !$('token-view').hidden && !$('token-cancel').hidden && tokenWaiter) {
        ev.preventDefault();
        tokenWaiter(false);
        return;
      }
      if (ev.key === 'Escape' && !$('viewer-view').hidden && !ev.defaultPrevented) {
        ev.preventDefault();
        viewerBack();
      }
    });
    const placeholder = () => {
      $('q').placeholder = PHONE.matches ? T.search_placeholder_short : T.search_placeholder;
    };
    placeholder();
    PHONE.addEventListener('change', placeholder);
    if ($('write-sign-in')) $('write-sign-in').addEventListener('click', () => askToken('write'));
    if ($('upload-form')) $('upload-form').addEventListener('submit', upload);
    $('sign-out').addEventListener('click', async () => {
      token.clear();
      await refreshAccess().catch(showError);
      if (!access.read) await askToken('read');
    });

    const startView = new URLSearchParams(location.search).get('v'); // Collections or upload, after a reload
    wanted = restoreState();
    try {
      await boot();
    } catch (err) {
      showError(err); // the database may be away: the first search tries again
    }
    const stayOn = loaded && (startView === 'browse' || (startView === 'upload' && access.write)) ? startView : null;
    if (!stayOn) saveState();
    const state = history.state;
    if (!state || !state.view) history.replaceState({ view: 'search' }, '', location.href);
    document.body.dataset.ready = '1';
    if (loaded && !stayOn && $('q').value.trim()) runSearch({ push: false });
    else {
      $('q').focus();
      if (notice) setStatus(el('span', { class: 'weak-notice', id: 'collections-notice' }, notice));
      notice = null;
    }
    if (state && state.view === 'viewer' && state.viewer) openViewer(state.viewer, false); // a reload in the page view
    if (stayOn && !(state && state.view === 'viewer')) {
      history.replaceState({ view: stayOn }, '', location.href);
      langLinks(new URLSearchParams(location.search));
      show(stayOn);
      if (stayOn === 'browse') loadStatuses().catch(() => {});
    }
  }

  start();
})();
