/* kaynak web page: search with highlighted verbatim quotes, open the source at the place, browse collections and
 * documents, add and delete documents with the write token. Talks only to this server's REST API.
 *
 * Safety rules kept everywhere below: document text, file names and API messages enter the page only as text
 * nodes (el(), textContent), never as HTML; links are built from numeric ids and encoded path parts; the token
 * lives in sessionStorage and travels in the Authorization header, never in a cookie or a URL.
 * Offsets from the API count Unicode code points (Python str indices), so text is sliced as code points.
 * Each search leaves two Performance API measures (benchmarks/bench_web.py reads them): kaynak:first-result (API
 * answer parsed → results in the DOM) and kaynak:first-highlighted (the same answer → highlight marks in place). */
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const T = JSON.parse($('kaynak-strings').textContent);
  const LANG = document.body.dataset.lang;
  const TOKEN_KEY = 'kaynak.token';
  const EXTENSIONS = ['.pdf', '.docx', '.html', '.htm', '.xhtml', '.md', '.markdown', '.mdx', '.txt', '.text', '.odt', '.ott', '.fodt', '.ods', '.ots', '.fods', '.odp', '.otp', '.fodp', '.pptx', '.pptm', '.xlsx', '.xlsm', '.csv', '.tsv', '.epub', '.rtf', '.eml', '.mbox', '.mbx', '.udf', '.doc', '.xls', '.ppt'];

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
    constructor(status, title, detail) {
      super(detail || title);
      this.status = status;
      this.title = title;
      this.detail = detail;
    }
  }

  async function problem(res) {
    let b = null;
    try {
      b = await res.json();
    } catch (_) {
      /* not JSON: fall back to the status line */
    }
    return new ApiError(res.status, (b && b.title) || res.statusText || T.error, (b && b.detail) || '');
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

  function showError(err) {
    const box = $('alert');
    const head = (err.title || T.error) + (err.status ? ` (${err.status})` : '');
    box.replaceChildren(el('strong', {}, head), ': ', withCode(err.detail || err.message || ''));
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
    const names = $('collection-names');
    if (names) names.replaceChildren(...collections.map((c) => el('option', { value: c.name })));
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

  /* null = all collections, else the chosen names. */
  function selectedCollections() {
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
    if (!collections.length) return T.no_collections;
    const cols = names ? collections.filter((c) => names.includes(c.name)) : collections;
    if (names && cols.length < names.length) return null; // a name the page does not know: the API answers
    if (cols.some((c) => c.document_count > 0)) return null;
    return fmt('empty_collection', { name: cols.length ? cols[0].name : 'NAME' });
  }

  // ---------------------------------------------------------------- search
  let searchSeq = 0;

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

  function saveState() {
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
    history.replaceState(null, '', '?' + p.toString());
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
    if (p.get('k')) $('k').value = p.get('k');
    $('prefix').value = p.get('prefix') || '';
    $('glob').value = p.get('glob') || '';
    $('meta').value = p.get('meta') || '';
    if (mode || p.get('prefix') || p.get('glob') || p.get('meta')) $('more').open = true;
    return p.getAll('c');
  }

  async function runSearch() {
    const q = $('q').value.trim();
    if (!q) {
      $('q').focus();
      return;
    }
    clearError();
    saveState();
    const seq = ++searchSeq;
    const req = searchRequest(q);
    const empty = emptyMessage(selectedCollections());
    if (empty) {
      $('results').replaceChildren();
      setStatus(withCode(empty));
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
    setStatus(hits.length ? fmt('n_results', { n: hits.length }) : T.no_results);
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

  /* Opens an original file; with a token, through a blob (links cannot send the header). Only a PDF is shown, as
   * an application/pdf blob at the page; any other format is saved as a download, never rendered in this origin. */
  async function openFile(ev, id, page, source) {
    if (!token.get()) return; // the plain link works
    ev.preventDefault();
    const pdf = isPdf(source);
    const tab = pdf ? window.open('', '_blank') : null;
    try {
      const res = await api(fileUrl(id), { raw: true });
      const blob = new Blob([await res.blob()], { type: pdf ? 'application/pdf' : 'application/octet-stream' });
      const url = URL.createObjectURL(blob);
      setTimeout(() => URL.revokeObjectURL(url), 120000);
      if (!pdf) {
        const a = el('a', { href: url, download: source.split('/').pop() || 'document' });
        document.body.append(a);
        a.click();
        a.remove();
      } else if (tab) {
        tab.location.href = url + '#page=' + page;
      } else {
        window.location.href = url + '#page=' + page;
      }
    } catch (err) {
      if (tab) tab.close();
      showError(err);
    }
  }

  function badge(text, title) {
    return el('span', { class: 'badge', title }, text);
  }

  function renderResults(hits) {
    const quotes = [];
    const items = hits.map((hit, i) => {
      const quote = el('blockquote', { class: 'quote' }, hit.quote.text);
      quotes.push(quote);
      const ctxBox = el('div', { class: 'context', hidden: true });
      const ctxBtn = el('button', { type: 'button', class: 'quiet', 'aria-expanded': 'false' }, T.more_context);
      ctxBtn.addEventListener('click', () => toggleContext(hit, ctxBtn, ctxBox, quote));
      const pdf = isPdf(hit.source) && hit.document_id;
      const title = pdf
        ? el('a', {
          class: 'source', href: `${fileUrl(hit.document_id)}#page=${hit.page}`, target: '_blank', rel: 'noopener',
          title: T.open_pdf, onclick: (ev) => openFile(ev, hit.document_id, hit.page, hit.source),
        }, hit.source)
        : el('a', { class: 'source', href: '#viewer', title: T.open_text, onclick: (ev) => openHit(ev, hit) },
          hit.source);
      const ranks = el('details', { class: 'ranks' }, el('summary', {}, T.ranks), rankList(hit.scores || {}));
      return el('li', { class: 'hit' },
        el('h3', {}, title),
        el('p', { class: 'where' },
          el('span', { class: 'label' }, T.page), ' ', String(hit.page),
          hit.section ? [' · ', el('span', { class: 'label' }, T.section), ' ', hit.section] : null,
          ' · ', el('span', { class: 'label' }, T.collection), ' ', hit.collection,
          hit.ocr ? [' ', badge('OCR', hit.ocr.confidence != null ? String(hit.ocr.confidence) : null)] : null,
          hit.stale ? [' ', badge(T.stale)] : null),
        quote,
        ctxBox,
        el('div', { class: 'actions' },
          ctxBtn,
          pdf ? el('button', { type: 'button', class: 'quiet', onclick: (ev) => openHit(ev, hit) }, T.open_text) : null,
          ranks));
    });
    $('results').replaceChildren(...items);
    return quotes;
  }

  function rankList(s) {
    const rank = (r) => (r === null || r === undefined ? T.not_found_by : '#' + r);
    const rows = [[T.rank_vector, rank(s.vector_rank)], [T.rank_keyword, rank(s.keyword_rank)]];
    if (typeof s.rrf === 'number') rows.push([T.score_rrf, s.rrf.toFixed(4)]);
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
          cps.slice(0, qs).join(''),
          el('mark', { class: 'quote-mark' }, marked(hit.quote.text, hit.spans)),
          cps.slice(qe).join('')));
      } else if (c.ord < (data.chunk ? data.chunk.ord : 0)) {
        const cut = c.page === hit.page ? Math.max(0, Math.min(cps.length, hit.char_start - c.char_start)) : cps.length;
        parts.push(el('p', { class: 'ctx-near' }, cps.slice(0, cut).join('')));
      } else {
        const from = c.page === hit.page ? Math.max(0, Math.min(cps.length, hit.char_end - c.char_start)) : 0;
        parts.push(el('p', { class: 'ctx-near' }, cps.slice(from).join('')));
      }
    }
    box.replaceChildren(...parts);
    box.dataset.loaded = '1';
    box.hidden = false;
    quote.hidden = true;
    btn.setAttribute('aria-expanded', 'true');
    btn.textContent = T.less_context;
  }

  // ---------------------------------------------------------------- page viewer
  let viewer = null;
  let viewerReturn = null;

  function openHit(ev, hit) {
    ev.preventDefault();
    viewerReturn = ev.currentTarget;
    openViewer({
      collection: hit.collection, source: hit.source, page: hit.page, documentId: hit.document_id,
      start: hit.quote.char_start, end: hit.quote.char_end, spans: hit.spans, quoteText: hit.quote.text,
    });
  }

  async function openViewer(v) {
    viewer = v;
    clearError();
    show('viewer');
    $('viewer-heading').textContent = fmt('viewer_heading', { source: v.source, page: v.page });
    const text = $('viewer-text');
    text.replaceChildren(T.loading);
    const original = $('viewer-original');
    original.hidden = !v.documentId;
    if (v.documentId) original.href = fileUrl(v.documentId) + (isPdf(v.source) ? '#page=' + v.page : '');
    $('viewer-prev').disabled = v.page <= 1;
    $('viewer-next').disabled = v.pageCount !== undefined && v.page >= v.pageCount;
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
      text.replaceChildren();
      showError(err);
      return;
    }
    if (viewer !== v) return;
    $('viewer-next').disabled = v.pageCount !== undefined && v.page >= v.pageCount;
    const cps = Array.from(data.text);
    if (v.start !== undefined && v.start >= 0 && v.end > v.start && v.end <= cps.length) {
      const quote = cps.slice(v.start, v.end).join('');
      const mark = el('mark', { id: 'quote', class: 'quote-mark', tabindex: '-1', 'aria-label': T.quote_here },
        quote === v.quoteText ? marked(quote, v.spans) : quote);
      text.replaceChildren(cps.slice(0, v.start).join(''), mark, cps.slice(v.end).join(''));
      mark.scrollIntoView({ block: 'center' });
      mark.focus({ preventScroll: true });
    } else {
      text.replaceChildren(data.text);
      $('viewer-heading').focus();
    }
  }

  function viewerPage(delta) {
    if (!viewer) return;
    openViewer({
      collection: viewer.collection, source: viewer.source, page: viewer.page + delta,
      documentId: viewer.documentId, pageCount: viewer.pageCount,
    });
  }

  function viewerBack() {
    show(viewerReturn && viewerReturn.closest('#browse-view') ? 'browse' : 'search');
    if (viewerReturn && document.contains(viewerReturn)) viewerReturn.focus();
  }

  // ---------------------------------------------------------------- browse
  const docs = { name: null, list: [], sort: 'source', dir: 1, open: new Set() };

  function renderCollectionsTable() {
    const tbody = document.querySelector('#collections-table tbody');
    if (!collections.length) {
      tbody.replaceChildren(el('tr', {}, el('td', { colspan: '5' }, withCode(T.no_collections))));
      return;
    }
    tbody.replaceChildren(...collections.map((c) => el('tr', {},
      el('th', { scope: 'row' },
        el('button', { type: 'button', class: 'linkish', onclick: () => openDocuments(c.name) }, c.name)),
      el('td', {}, T['lang_' + c.language] || c.language),
      el('td', {}, c.embedder),
      el('td', { class: 'num' }, String(c.document_count)),
      el('td', { class: 'num' }, String(c.chunk_count)))));
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
    renderDocs();
    $('documents-heading').focus();
  }

  function renderDocs() {
    const filter = $('doc-filter').value.trim().toLocaleLowerCase(LANG);
    const key = docs.sort;
    const rows = docs.list
      .filter((d) => !filter || d.source.toLocaleLowerCase(LANG).includes(filter))
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
        el('th', { scope: 'row' },
          el('button', {
            type: 'button', class: 'linkish', 'aria-expanded': String(isOpen),
            onclick: () => { if (isOpen) docs.open.delete(d.id); else docs.open.add(d.id); renderDocs(); },
          }, d.source),
          warnings.length ? [' ', badge('⚠ ' + warnings.length, T.doc_warnings)] : null),
        el('td', {}, d.title),
        el('td', { class: 'num' }, String(d.page_count)),
        el('td', { class: 'num' }, String(d.chunk_count)),
        el('td', {}, (d.ingested_at || '').slice(0, 16))));
      if (isOpen) out.push(el('tr', { class: 'doc-detail' }, el('td', { colspan: '5' }, docDetail(d, warnings))));
    }
    tbody.replaceChildren(...out);
  }

  function docDetail(d, warnings) {
    const pages = [];
    for (let p = 1; p <= Math.min(d.page_count, 500); p++) {
      pages.push(el('li', {}, el('button', {
        type: 'button', class: 'linkish',
        onclick: (ev) => {
          viewerReturn = ev.currentTarget;
          openViewer({ collection: d.collection, source: d.source, page: p, documentId: d.id,
            pageCount: d.page_count });
        },
      }, String(p))));
    }
    const warningText = (w) => (typeof w === 'string' ? w : [w.page ? `p. ${w.page}` : '', w.message || w.warning
      || JSON.stringify(w)].filter(Boolean).join(': '));
    return [
      el('p', { class: 'label' }, T.pages),
      el('ul', { class: 'pages' }, pages),
      warnings.length ? [el('p', { class: 'label' }, T.doc_warnings),
        el('ul', { class: 'warnings' }, warnings.map((w) => el('li', {}, warningText(w))))] : null,
      el('div', { class: 'actions' },
        d.origin === null ? null : el('a', {
          href: fileUrl(d.id) + (isPdf(d.source) ? '#page=1' : ''), target: '_blank', rel: 'noopener',
          onclick: (ev) => openFile(ev, d.id, 1, d.source),
        }, T.open_original),
        access.write ? el('button', { type: 'button', class: 'danger', onclick: () => deleteDoc(d) }, T.delete) : null),
    ];
  }

  async function deleteDoc(d) {
    if (!access.write || !window.confirm(fmt('confirm_delete', { source: d.source }))) return;
    clearError();
    try {
      await api(`/v1/collections/${enc(d.collection)}/documents/${encPath(d.source)}`, { method: 'DELETE' });
    } catch (err) {
      showError(err);
      return;
    }
    setStatus(fmt('deleted', { source: d.source }));
    await loadCollections().catch(showError);
    await openDocuments(d.collection);
  }

  // ---------------------------------------------------------------- upload
  function upload(ev) {
    ev.preventDefault();
    if (!access.write) return;
    const name = $('up-collection').value.trim();
    const status = $('up-status');
    $('up-failed').replaceChildren();
    const picked = [...$('up-files').files, ...$('up-folder').files];
    const files = picked.filter((f) => EXTENSIONS.some((x) => f.name.toLowerCase().endsWith(x)));
    if (!name) {
      status.textContent = T.upload_collection;
      $('up-collection').focus();
      return;
    }
    if (!files.length) {
      status.textContent = T.upload_pick;
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
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch (_) {
        /* not JSON */
      }
      if (xhr.status !== 200 && xhr.status !== 207) {
        status.textContent = '';
        showError(new ApiError(xhr.status, (body && body.title) || T.error, (body && body.detail) || xhr.statusText));
        return;
      }
      status.textContent = fmt('upload_done', {
        added: body.added.length, updated: body.updated.length, unchanged: body.unchanged.length,
        failed: body.failed.length,
      });
      $('up-failed').replaceChildren(...body.failed.map((f) =>
        el('li', {}, fmt('upload_failed_file', { source: f.source, error: f.error || f.reason || '' }))));
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
        show(tab.dataset.view);
        if (tab.dataset.view === 'browse') loadCollections().catch(showError);
      });
    }
    if ($('write-sign-in')) $('write-sign-in').addEventListener('click', () => askToken('write'));
    if ($('upload-form')) $('upload-form').addEventListener('submit', upload);
    $('sign-out').addEventListener('click', async () => {
      token.clear();
      await refreshAccess().catch(showError);
      if (!access.read) await askToken('read');
    });

    const wanted = restoreState();
    try {
      await refreshAccess();
    } catch (err) {
      showError(err);
      return;
    }
    while (!access.read) await askToken('read');
    try {
      await loadCollections();
    } catch (err) {
      showError(err);
      return;
    }
    if (wanted.length) {
      for (const box of document.querySelectorAll('#collection-boxes input')) box.checked = wanted.includes(box.value);
      $('all-collections').checked = !selectedCollections();
    }
    saveState();
    document.body.dataset.ready = '1';
    if ($('q').value.trim()) runSearch();
    else $('q').focus();
  }

  start();
})();
