// quiver console: the page. Plain JavaScript, no build step. Uses the
// vendored globals Arrow (apache-arrow) and uPlot.
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);

  const ROW_H = 22;            // px per grid row (matches app.css)
  const WIN = 1000;            // rows per window fetched with offset/limit
  const CACHE_WINDOWS = 16;    // windows kept (LRU), besides the first
  const MAX_INFLIGHT = 2;      // window requests at once
  const OVERSCAN = 6;          // rows rendered above and below the view
  const MAX_SPACE = 15000000;  // px: browsers cap element heights (~33M in Chrome, less elsewhere)
  const FETCH_DEBOUNCE = 120;  // ms after scrolling stops before windows are fetched
  const LIVE_SPAN = 120;       // seconds of live series kept
  const HISTORY_KEY = 'quiver.console.history';
  const DRAFT_KEY = 'quiver.console.draft';
  const HISTORY_MAX = 50;
  const MAX_TEXT = 1000;       // chars of a cell kept

  const S = {
    session: null,   // {kind, auth, user, role, csrf}
    started: false,  // the panes were set up for the session's kind
    tab: null,
    run: null,       // the running statement: {ac}
  };

  // ---------- formatting ----------

  const nf = new Intl.NumberFormat('en-US');
  const fmtInt = (n) => nf.format(n);
  function fmtBytes(n) {
    if (n == null || !isFinite(n)) return '–';
    if (n < 1000) return Math.round(n) + ' B';
    const u = ['KB', 'MB', 'GB', 'TB', 'PB'];
    let i = -1;
    do { n /= 1000; i++; } while (n >= 1000 && i < u.length - 1);
    return (n < 10 ? n.toFixed(1) : Math.round(n)) + ' ' + u[i];
  }
  function fmtMs(ms) {
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + ' s';
    const s = Math.round(ms / 1000);
    return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
  }
  function clip(s) { return s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + '…' : s; }

  const HEX = [];
  for (let i = 0; i < 256; i++) HEX.push(i.toString(16).padStart(2, '0'));
  function hex(bytes) {
    const n = Math.min(bytes.length, 32);
    let s = '\\x';
    for (let i = 0; i < n; i++) s += HEX[bytes[i]];
    if (bytes.length > n) s += '… (' + fmtInt(bytes.length) + ' B)';
    return s;
  }
  function uuid(b) {
    let s = '';
    for (let i = 0; i < 16; i++) { s += HEX[b[i]]; if (i === 3 || i === 5 || i === 7 || i === 9) s += '-'; }
    return s;
  }

  const I64_MAX = 9223372036854775807n;
  const UNIT_DIV = [1n, 1000n, 1000000n, 1000000000n];  // TimeUnit SECOND..NANOSECOND per second
  const UNIT_DIGITS = [0, 3, 6, 9];
  const UNIT_ABBR = ['s', 'ms', 'us', 'ns'];

  function frac(f, digits) {
    if (!f) return '';
    return '.' + String(f).padStart(digits, '0').replace(/0+$/, '');
  }
  // divmod that floors, for negative instants
  function floorDiv(v, d) { let q = v / d; if (v % d !== 0n && v < 0n) q -= 1n; return q; }

  function fmtInstant(v, unit) { // v: bigint in unit since the epoch, UTC
    if (v >= I64_MAX) return 'infinity';
    if (v <= -I64_MAX) return '-infinity';
    const d = UNIT_DIV[unit];
    const secs = floorDiv(v, d);
    const f = v - secs * d;
    const dt = new Date(Number(secs) * 1000);
    if (isNaN(dt.getTime())) return String(v) + ' ' + UNIT_ABBR[unit];
    return dt.toISOString().slice(0, 19).replace('T', ' ') + frac(f, UNIT_DIGITS[unit]);
  }
  function fmtTimeOfDay(v, unit) { // v: bigint in unit since midnight
    const d = UNIT_DIV[unit];
    const secs = floorDiv(v, d), f = v - secs * d;
    const s = Number(secs);
    const hh = Math.floor(s / 3600), mm = Math.floor(s / 60) % 60, ss = s % 60;
    return String(hh).padStart(2, '0') + ':' + String(mm).padStart(2, '0') + ':' + String(ss).padStart(2, '0') + frac(f, UNIT_DIGITS[unit]);
  }
  function fmtDecimal(words, scale, signed) { // words: Uint32Array, little-endian
    let v = 0n;
    for (let i = words.length - 1; i >= 0; i--) v = (v << 32n) | BigInt(words[i]);
    const bits = BigInt(words.length * 32);
    if (signed !== false && (words[words.length - 1] & 0x80000000)) v -= 1n << bits;
    if (!scale) return v.toString();
    if (scale < 0) return (v * 10n ** BigInt(-scale)).toString();
    const neg = v < 0n;
    let s = (neg ? -v : v).toString().padStart(scale + 1, '0');
    s = s.slice(0, s.length - scale) + '.' + s.slice(s.length - scale);
    return (neg ? '-' : '') + s;
  }
  function fmtInterval(a) { // month_day_nano: [months, days, nanos lo, nanos hi]
    const parts = [];
    if (a[0]) parts.push(a[0] + (Math.abs(a[0]) === 1 ? ' month' : ' months'));
    if (a[1]) parts.push(a[1] + (Math.abs(a[1]) === 1 ? ' day' : ' days'));
    const ns = (BigInt(a[3]) << 32n) | BigInt(a[2] >>> 0);
    if (ns || !parts.length) {
      const neg = ns < 0n;
      parts.push((neg ? '-' : '') + fmtTimeOfDay(neg ? -ns : ns, 3));
    }
    return parts.join(' ');
  }

  // valueText turns any value Arrow hands out into display text (nested
  // values as JSON-ish text).
  function valueText(v, depth) {
    if (v == null) return depth ? 'null' : 'NULL';
    switch (typeof v) {
      case 'string': return depth ? JSON.stringify(v) : v;
      case 'bigint': case 'number': case 'boolean': return String(v);
    }
    if (v instanceof Uint8Array) return hex(v);
    if (v instanceof Date) return v.toISOString();
    if (depth > 6) return '…';
    if (v instanceof Arrow.Vector || Array.isArray(v) || ArrayBuffer.isView(v)) {
      const out = [];
      let n = 0;
      for (const x of v) {
        if (++n > 100) { out.push('…'); break; }
        out.push(valueText(x, depth + 1));
      }
      return '[' + out.join(', ') + ']';
    }
    if (typeof v.toJSON === 'function') v = v.toJSON();
    if (v instanceof Map) v = Object.fromEntries(v);
    if (typeof v === 'object') {
      const out = [];
      for (const k of Object.keys(v)) out.push(JSON.stringify(k) + ': ' + valueText(v[k], depth + 1));
      return '{' + out.join(', ') + '}';
    }
    return String(v);
  }

  // makeFormatter returns fn(vector, data, index) -> string, or null for a
  // null value, for a field of type t.
  function makeFormatter(field) {
    const t = field.type, T = Arrow.DataType;
    const generic = (vec, d, i) => (d.getValid(i) ? clip(valueText(vec.get(i), 0)) : null);
    try {
      if (T.isNull(t)) return () => null;
      if (T.isInt(t)) return (vec, d, i) => (d.getValid(i) ? String(d.values[i]) : null);
      if (T.isFloat(t) || T.isBool(t)) return (vec, d, i) => (d.getValid(i) ? String(vec.get(i)) : null);
      if (T.isDecimal(t)) {
        const stride = (t.bitWidth || 128) / 32, scale = t.scale;
        return (vec, d, i) => (d.getValid(i) ? fmtDecimal(d.values.subarray(i * stride, (i + 1) * stride), scale) : null);
      }
      if (T.isTimestamp(t)) {
        const unit = t.unit, tz = t.timezone;
        const suffix = tz ? ' UTC' : '';  // an instant: shown in UTC
        return (vec, d, i) => (d.getValid(i) ? fmtInstant(BigInt(d.values[i]), unit) + suffix : null);
      }
      if (T.isDate(t)) {
        if (t.unit === 0) return (vec, d, i) => (d.getValid(i) ? isoDateSafe(d.values[i] * 86400000) : null);
        return (vec, d, i) => {
          if (!d.getValid(i)) return null;
          const ms = BigInt(d.values[i]);
          return ms % 86400000n === 0n ? isoDateSafe(Number(ms)) : fmtInstant(ms, 1);
        };
      }
      if (T.isTime(t)) {
        const unit = t.unit;
        return (vec, d, i) => (d.getValid(i) ? fmtTimeOfDay(BigInt(d.values[i]), unit) : null);
      }
      if (T.isDuration(t)) {
        const unit = t.unit;
        return (vec, d, i) => (d.getValid(i) ? String(d.values[i]) + ' ' + UNIT_ABBR[unit] : null);
      }
      if (T.isInterval(t) && t.unit === 2) return (vec, d, i) => (d.getValid(i) ? fmtInterval(vec.get(i)) : null);
      if (T.isFixedSizeBinary(t) && t.byteWidth === 16 &&
          /uuid/i.test((field.metadata && field.metadata.get('ARROW:extension:name')) || '')) {
        return (vec, d, i) => (d.getValid(i) ? uuid(vec.get(i)) : null);
      }
    } catch (e) { /* fall through to the generic formatter */ }
    return generic;
  }
  function isoDateSafe(ms) {
    const dt = new Date(ms);
    return isNaN(dt.getTime()) ? String(ms) + ' ms' : dt.toISOString().slice(0, 10);
  }
  function isNumeric(t) {
    const T = Arrow.DataType;
    return T.isInt(t) || T.isFloat(t) || T.isDecimal(t);
  }
  function typeLabel(t) {
    return String(t).replace(/MILLISECOND/g, 'ms').replace(/MICROSECOND/g, 'us').replace(/NANOSECOND/g, 'ns')
      .replace(/SECOND/g, 's').replace(/<DAY>/g, '<day>');
  }

  // ---------- API ----------

  class ApiError extends Error {
    constructor(status, code, message) { super(message); this.status = status; this.code = code; }
  }

  async function api(path, opts) {
    opts = opts || {};
    const headers = Object.assign({ Accept: 'application/json' }, opts.headers || {});
    const init = { method: opts.method || 'GET', headers, signal: opts.signal, credentials: 'same-origin', cache: 'no-store' };
    if (opts.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(opts.json);
    }
    if (init.method !== 'GET' && path !== '/api/login' && S.session && S.session.csrf) headers['X-CSRF-Token'] = S.session.csrf;
    const r = await fetch(path, init);
    if (r.status === 401 && path !== '/api/login') unauthorized();
    return r;
  }

  async function readError(r) {
    let text = '';
    try { text = await r.text(); } catch (e) { /* ignore */ }
    try {
      const j = JSON.parse(text);
      if (j && typeof j.error === 'string') return new ApiError(r.status, j.code || '', j.error);
    } catch (e) { /* not JSON */ }
    return new ApiError(r.status, '', text.trim() || ('HTTP ' + r.status + ' ' + r.statusText));
  }

  async function getJSON(path) {
    const r = await api(path);
    if (!r.ok) throw await readError(r);
    return r.json();
  }

  // ---------- session and login ----------

  async function boot() {
    wire();
    let s;
    try {
      s = await getJSON('/api/session');
    } catch (e) {
      $('boot').textContent = 'Cannot reach the server: ' + e.message;
      return;
    }
    applySession(s);
  }

  function applySession(s) {
    S.session = s;
    $('boot').hidden = true;
    $('version').textContent = s.version || '';
    if (!S.started) setupKind(s.kind);
    if (s.auth && !s.user) { showLogin(''); return; }
    showApp();
  }

  function showLogin(msg) {
    stopLive();
    clearQueries();
    if (S.run) S.run.ac.abort();
    $('app').hidden = true;
    $('tabs').hidden = true;
    $('logout').hidden = true;
    $('whoami').textContent = '';
    $('login').hidden = false;
    $('login-error').textContent = msg || '';
    const u = $('login-user');
    (u.value ? $('login-password') : u).focus();
  }

  function showApp() {
    const s = S.session;
    $('login').hidden = true;
    $('app').hidden = false;
    $('tabs').hidden = false;
    $('whoami').textContent = (s.user || 'anonymous') + ' (' + (s.role || '?') + ')';
    $('logout').hidden = !s.auth;
    if (S.shownUser !== undefined && S.shownUser !== s.user) {
      // another user logged in: forget what the last one saw
      if (S.run) S.run.ac.abort();
      grid.reset();
      setStatus('idle', '');
      showError('');
    }
    S.shownUser = s.user;
    if (s.kind !== 'ingest') loadSchema();
    showTab(S.tab || (s.kind === 'ingest' ? 'live' : 'query'));
  }

  function unauthorized() {
    const s = S.session;
    if (!s || !s.auth) return;
    if (!s.user && !$('login').hidden) return;
    s.user = s.role = s.csrf = null;
    showLogin('Your session ended: log in again.');
  }

  function b64utf8(str) {
    const bytes = new TextEncoder().encode(str);
    let bin = '';
    for (const b of bytes) bin += String.fromCharCode(b);
    return btoa(bin);
  }

  async function login(ev) {
    ev.preventDefault();
    const user = $('login-user').value, pass = $('login-password').value;
    const err = $('login-error');
    err.textContent = '';
    $('login-submit').disabled = true;
    try {
      const r = await fetch('/api/login', {
        method: 'POST', credentials: 'same-origin', cache: 'no-store',
        headers: { Authorization: 'Basic ' + b64utf8(user + ':' + pass), Accept: 'application/json' },
      });
      if (!r.ok) { err.textContent = (await readError(r)).message; return; }
      const j = await r.json();
      $('login-password').value = '';
      applySession(Object.assign({}, S.session, { user: j.user, role: j.role, csrf: j.csrf, auth: true }));
    } catch (e) {
      err.textContent = 'Cannot log in: ' + e.message;
    } finally {
      $('login-submit').disabled = false;
    }
  }

  async function logout() {
    try { await api('/api/logout', { method: 'POST' }); } catch (e) { /* the cookie goes anyway on expiry */ }
    const s = S.session;
    s.user = s.role = s.csrf = null;
    grid.reset();
    setStatus('idle', '');
    showError('');
    $('schema').replaceChildren();
    showLogin('');
  }

  // ---------- tabs ----------

  function setupKind(kind) {
    S.started = true;
    if (kind === 'ingest') {
      for (const id of ['tab-query', 'pane-query', 'serve-live']) { const el = $(id); if (el) el.remove(); }
      $('ingest').hidden = false;
      $('live-admission-stat').hidden = true;
    } else {
      $('ingest').remove();
    }
  }

  function showTab(name) {
    if (!$('tab-' + name)) name = 'live';
    S.tab = name;
    for (const t of document.querySelectorAll('#tabs .tab')) {
      const on = t.id === 'tab-' + name;
      t.classList.toggle('active', on);
      t.setAttribute('aria-selected', on ? 'true' : 'false');
      const pane = $(t.dataset.pane);
      if (pane) pane.hidden = !on;
    }
    if (name === 'live') startLive(); else stopLive();
    if (name === 'query') requestAnimationFrame(() => grid.render());
  }

  // ---------- history ----------

  function loadHistory() {
    try { const h = JSON.parse(localStorage.getItem(HISTORY_KEY) || '[]'); return Array.isArray(h) ? h : []; } catch (e) { return []; }
  }
  function saveHistory(h) { try { localStorage.setItem(HISTORY_KEY, JSON.stringify(h)); } catch (e) { /* full or off */ } }
  function addHistory(sql) {
    const h = loadHistory().filter((x) => x !== sql);
    h.unshift(sql);
    saveHistory(h.slice(0, HISTORY_MAX));
    renderHistory();
  }
  function renderHistory() {
    const ul = $('history');
    const h = loadHistory();
    const items = h.map((sql) => {
      const li = document.createElement('li');
      li.textContent = sql.replace(/\s+/g, ' ').trim().slice(0, 200);
      li.title = sql;
      li.dataset.sql = sql;
      return li;
    });
    if (!items.length) {
      const li = document.createElement('li');
      li.className = 'empty';
      li.textContent = 'Statements you run appear here.';
      items.push(li);
    }
    ul.replaceChildren(...items);
  }

  // ---------- schema tree ----------

  const RESERVED = new Set(('all analyse analyze and any array as asc asymmetric both case cast check collate column ' +
    'constraint create default deferrable desc describe distinct do else end except false fetch for foreign from grant ' +
    'group having in initially intersect into lateral leading limit not null offset on only or order pivot placing ' +
    'primary qualify references returning select show some summarize symmetric table then to trailing true union ' +
    'unique unpivot using variadic when where window with').split(' '));
  function quoteIdent(s) {
    if (/^[a-z_][a-z0-9_]*$/.test(s) && !RESERVED.has(s)) return s;
    return '"' + s.replace(/"/g, '""') + '"';
  }

  let schemaLoading = null;
  function loadSchema() {
    if (schemaLoading) return schemaLoading;
    const el = $('schema');
    if (!el.firstChild) el.replaceChildren(msgNode('Loading…', false));
    schemaLoading = getJSON('/api/schema').then(renderSchema, (e) => {
      if (e.status !== 401) el.replaceChildren(msgNode(e.message, true));
    }).finally(() => { schemaLoading = null; });
    return schemaLoading;
  }
  function msgNode(text, err) {
    const d = document.createElement('div');
    d.className = 'msg' + (err ? ' err' : '');
    d.textContent = text;
    return d;
  }
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }
  function renderSchema(j) {
    const root = $('schema');
    const open = new Set();
    for (const n of root.querySelectorAll('.tbl.open > .tnode')) open.add(n.dataset.table);
    const cats = (j && j.catalogs) || [];
    if (!cats.length) { root.replaceChildren(msgNode('No tables.', false)); return; }
    const top = el('ul');
    for (const c of cats) {
      const cli = el('li', 'cat');
      const cd = el('details');
      cd.open = true;
      cd.append(el('summary', null, c.name));
      const sul = el('ul');
      for (const s of c.schemas || []) {
        const sli = el('li', 'sch');
        const sd = el('details');
        sd.open = true;
        sd.append(el('summary', null, s.name));
        const tul = el('ul');
        for (const t of s.tables || []) {
          const key = c.name + '.' + s.name + '.' + t.name;
          const tli = el('li', 'tbl');
          const node = el('div', 'tnode');
          node.dataset.table = key;
          node.dataset.sql = 'SELECT * FROM ' + quoteIdent(c.name) + '.' + quoteIdent(s.name) + '.' + quoteIdent(t.name) + ' LIMIT 1000';
          node.title = 'Click: ' + node.dataset.sql;
          node.append(el('span', 'twisty', '▸'), el('span', 'tname', t.name));
          if (t.type && t.type !== 'BASE TABLE') node.append(el('span', 'ttype', t.type.toLowerCase()));
          const cols = el('ul', 'cols');
          for (const col of t.columns || []) {
            const li = el('li', 'col');
            li.append(el('span', 'cname', col.name), ' ', el('span', 'ctype', col.type));
            li.title = col.name + ' ' + col.type;
            cols.append(li);
          }
          tli.append(node, cols);
          setTableOpen(tli, open.has(key));
          tul.append(tli);
        }
        sd.append(tul);
        sli.append(sd);
        sul.append(sli);
      }
      cd.append(sul);
      cli.append(cd);
      top.append(cli);
    }
    root.replaceChildren(top);
  }
  function setTableOpen(tli, on) {
    tli.classList.toggle('open', on);
    tli.querySelector('.cols').hidden = !on;
    tli.querySelector('.twisty').textContent = on ? '▾' : '▸';
  }
  function schemaClick(ev) {
    const node = ev.target.closest('.tnode');
    if (!node) return;
    const tli = node.parentElement;
    if (ev.target.closest('.twisty')) { setTableOpen(tli, !tli.classList.contains('open')); return; }
    setTableOpen(tli, true);
    const ed = $('sql');
    ed.value = node.dataset.sql;
    saveDraft();
    ed.focus();
  }

  // ---------- editor ----------

  let draftTimer = 0;
  function saveDraft() {
    clearTimeout(draftTimer);
    draftTimer = setTimeout(() => { try { localStorage.setItem(DRAFT_KEY, $('sql').value); } catch (e) { /* ignore */ } }, 300);
  }

  function showError(text) {
    const e = $('error');
    e.textContent = text || '';
    e.hidden = !text;
  }

  function setStatus(state, text, attrs, liveRows) {
    const st = $('result-status');
    for (const a of ['data-rows', 'data-ms', 'data-bytes']) st.removeAttribute(a);
    if (attrs) {
      st.setAttribute('data-rows', String(attrs.rows));
      st.setAttribute('data-ms', String(Math.round(attrs.ms)));
      st.setAttribute('data-bytes', String(attrs.bytes));
    }
    else if (state === 'running' && liveRows != null) st.setAttribute('data-rows', String(liveRows));
    st.textContent = text;
    if (state === 'idle') st.removeAttribute('data-state');
    else st.setAttribute('data-state', state);
  }

  function setRunning(on) {
    $('run').disabled = on;
    $('cancel').disabled = !on;
  }

  // run runs the editor's SQL and streams its result: it counts every row
  // and byte, keeps the first window of rows for the grid and lets later
  // batches go.
  async function run() {
    if (S.run) return;
    const sql = $('sql').value;
    if (!sql.trim()) return;
    addHistory(sql);
    const t0 = performance.now();
    const ac = new AbortController();
    const job = { ac, rows: 0, bytes: 0 };
    S.run = job;
    grid.reset();
    showError('');
    setRunning(true);
    setStatus('running', 'Running…', null, 0);
    const tick = setInterval(() => {
      setStatus('running', 'Running… ' + fmtInt(job.rows) + ' rows · ' + fmtMs(performance.now() - t0) + ' · ' + fmtBytes(job.bytes), null, job.rows);
    }, 100);
    const summary = () => fmtInt(job.rows) + (job.rows === 1 ? ' row · ' : ' rows · ') + fmtMs(performance.now() - t0) + ' · ' + fmtBytes(job.bytes);
    const end = (state, text) => {
      clearInterval(tick);
      setStatus(state, text, { rows: job.rows, ms: performance.now() - t0, bytes: job.bytes });
    };
    let qid = null, streaming = false;
    try {
      const r = await api('/api/query', { method: 'POST', json: { sql }, signal: ac.signal });
      qid = r.headers.get('X-Query-Id');
      if (!r.ok) {
        const e = await readError(r);
        showError(e.message);
        end(e.code === 'canceled' ? 'canceled' : 'error', (e.code === 'canceled' ? 'Canceled' : 'Error') + ' · ' + fmtMs(performance.now() - t0));
        return;
      }
      const ct = r.headers.get('Content-Type') || '';
      if (!ct.includes('arrow')) {
        const j = await r.json();
        job.bytes = 0;
        const n = Number(j.rows_changed) || 0;
        clearInterval(tick);
        setStatus('done', fmtInt(n) + (n === 1 ? ' row' : ' rows') + ' changed (' + (j.statement || 'statement') + ') · ' +
          fmtMs(performance.now() - t0), { rows: 0, ms: performance.now() - t0, bytes: 0 });
        loadSchema();
        return;
      }
      streaming = true;
      const counted = r.body.pipeThrough(new TransformStream({
        transform(chunk, ctl) { job.bytes += chunk.byteLength; ctl.enqueue(chunk); },
      }));
      const reader = await Arrow.RecordBatchReader.from(counted);
      await reader.open();
      if (ac.signal.aborted) throw new DOMException('canceled', 'AbortError');
      grid.begin(reader.schema, sql);
      for await (const batch of reader) {
        job.rows += batch.numRows;
        grid.keep(batch);     // copies rows into the first window while it has room
        if (ac.signal.aborted) break;
      }
      if (ac.signal.aborted) throw new DOMException('canceled', 'AbortError');
      grid.finish(job.rows);
      end('done', summary());
    } catch (e) {
      if (ac.signal.aborted) {
        grid.finish(job.rows);
        end('canceled', 'Canceled · ' + summary());
        return;
      }
      if (!streaming) {
        showError('The request failed: ' + e.message);
        end('error', 'Error · ' + fmtMs(performance.now() - t0));
        return;
      }
      // the stream broke: ask the server why
      const msg = await brokenStreamError(qid, e);
      grid.finish(job.rows);
      showError(msg);
      const canceled = /^the statement was canceled/i.test(msg);
      end(canceled ? 'canceled' : 'error', (canceled ? 'Canceled' : 'Error') + ' after ' + summary());
    } finally {
      clearInterval(tick);
      if (S.run === job) S.run = null;
      setRunning(false);
    }
  }

  async function brokenStreamError(qid, e) {
    const local = 'The result stream broke off: ' + (e && e.message ? e.message : String(e));
    if (!qid || qid === '0') return local;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const r = await api('/api/query/error?id=' + encodeURIComponent(qid));
        if (r.ok) { const j = await r.json(); if (j && j.error) return j.error; }
        else if (r.status !== 404) return (await readError(r)).message;
      } catch (err) { /* try again */ }
      await new Promise((res) => setTimeout(res, 150 * (attempt + 1)));
    }
    return local;
  }

  function cancel() {
    if (S.run) S.run.ac.abort();
  }

  // ---------- downloads ----------

  let downloadPending = null;
  function download(format) {
    const sql = $('sql').value;
    if (!sql.trim()) return;
    const f = $('download-form');
    f.elements.sql.value = sql;
    f.elements.format.value = format;
    f.elements.csrf.value = (S.session && S.session.csrf) || '';
    downloadPending = { sql, format };
    showError('');
    f.submit();
  }
  // An attachment does not load the frame; an error answer does, and the
  // frame (same origin) holds its JSON. Should it not, ask for the
  // statement's error with an empty window, which runs nothing.
  async function downloadFrameLoaded() {
    const p = downloadPending;
    downloadPending = null;
    if (!p) return;
    let msg = '';
    try {
      const doc = $('download-frame').contentDocument;
      const text = doc && doc.body ? doc.body.textContent.trim() : '';
      if (text.startsWith('{')) msg = JSON.parse(text).error || '';
    } catch (e) { /* cross-origin error page */ }
    if (!msg) {
      try {
        const r = await api('/api/query', { method: 'POST', json: { sql: p.sql, offset: 0, limit: 0 } });
        if (!r.ok) msg = (await readError(r)).message.replace(/^this statement's result cannot be fetched in windows: /, '');
        else if (r.body) r.body.cancel().catch(() => {});
      } catch (e) { /* ignore */ }
    }
    showError('The ' + p.format + ' download failed' + (msg ? ':\n' + msg : '.'));
  }

  // ---------- result grid ----------

  const grid = (function () {
    const G = {
      gen: 0, sql: null, fields: null, fmts: null, num: null, widths: null, totalW: 0,
      rowCount: 0, first: null, done: false,
      cache: new Map(),       // window index -> {n, cols} | {error}
      inflight: new Map(),    // window index -> AbortController
      rows: new Map(),        // row index -> {el, state}
      scroller: null, head: null, space: null, spaceH: 0,
      raf: 0, pumpTimer: 0, retryTimer: 0,
    };
    const root = () => $('grid');

    function reset() {
      G.gen++;
      for (const ac of G.inflight.values()) ac.abort();
      G.inflight.clear();
      G.cache.clear();
      G.rows.clear();
      clearTimeout(G.pumpTimer);
      clearTimeout(G.retryTimer);
      G.fields = G.fmts = G.first = G.scroller = null;
      G.rowCount = 0;
      G.done = false;
      root().replaceChildren();
    }

    function newWindow() { return { n: 0, cols: G.fields.map(() => []) }; }
    function append(win, batch, from, to) {
      for (let c = 0; c < G.fields.length; c++) {
        const vec = batch.getChildAt(c);
        const out = win.cols[c];
        const fmt = G.fmts[c];
        if (!vec) { for (let i = from; i < to; i++) out.push('?'); continue; }
        let base = 0;
        for (const d of vec.data) {       // a batch's column has one chunk, but be general
          const lo = Math.max(from - base, 0), hi = Math.min(to - base, d.length);
          for (let i = lo; i < hi; i++) {
            let s;
            try { s = fmt(vec, d, i); } catch (e) { s = '⚠ ' + e.message; }
            out.push(s);
          }
          base += d.length;
          if (base >= to) break;
        }
      }
      win.n += to - from;
    }

    function begin(schema, sql) {
      G.sql = sql;
      G.fields = schema.fields;
      G.fmts = G.fields.map(makeFormatter);
      G.num = G.fields.map((f) => isNumeric(f.type));
      G.first = newWindow();
      G.cache.set(0, G.first);
      G.widths = null;
      fit(null, true);
      build();
    }

    // keep copies the rows of a batch the first window still has room for.
    function keep(batch) {
      const w = G.first;
      if (!w || w.n >= WIN) return;
      const take = Math.min(WIN - w.n, batch.numRows);
      const before = w.n;
      append(w, batch, 0, take);
      setRowCount(w.n);
      if (before === 0) fit(w, true);
    }

    function finish(total) {
      if (!G.fields) return;
      G.done = true;
      setRowCount(total);
      fit(G.first, false);
    }

    // fit sizes the columns from their header and a window's first rows
    // (widening only, unless reset), and the row-number gutter from the
    // row count; a change lays the grid out again.
    function fit(win, reset) {
      const CH = 7.3, PAD = 18;
      const widths = G.fields.map((f, c) => {
        let n = Math.max(String(f.name).length, typeLabel(f.type).length * 0.85);
        const col = win ? win.cols[c] : [];
        for (let i = 0; i < Math.min(col.length, 200); i++) {
          const v = col[i];
          const len = v == null ? 4 : v.length;
          if (len > n) n = len;
        }
        const w = Math.round(Math.min(Math.max(n * CH + PAD, 56), 420));
        return reset || !G.widths ? w : Math.max(w, G.widths[c]);
      });
      const rnW = Math.round(Math.max(String(G.rowCount).length, 3) * CH + PAD);
      const changed = !G.widths || rnW !== G.rnW || widths.some((w, c) => w !== G.widths[c]);
      if (!changed) return;
      G.widths = widths;
      G.rnW = rnW;
      G.totalW = rnW + widths.reduce((a, b) => a + b, 0);
      if (G.head) {
        buildHead();
        if (G.space) G.space.style.width = G.totalW + 'px';
        for (const r of G.rows.values()) r.el.remove();
        G.rows.clear();
        schedule();
      }
    }

    function buildHead() {
      const h = document.createElement('div');
      h.className = 'ghead';
      h.style.width = G.totalW + 'px';
      const rn = el('div', 'rnum', '#');
      rn.style.width = G.rnW + 'px';
      h.append(rn);
      G.fields.forEach((f, c) => {
        const d = el('div', 'head');
        d.dataset.col = String(c);
        d.style.width = G.widths[c] + 'px';
        const tl = typeLabel(f.type);
        d.title = f.name + ' ' + tl;
        d.append(el('span', 'hname', f.name), el('span', 'htype', tl));
        h.append(d);
      });
      if (G.head) G.head.replaceWith(h);
      G.head = h;
    }

    function build() {
      const sc = el('div', 'gscroll');
      G.scroller = sc;
      G.head = null;
      buildHead();
      G.space = el('div', 'gspace');
      sc.append(G.head, G.space);
      sc.addEventListener('scroll', onScroll, { passive: true });
      root().replaceChildren(sc);
      setRowCount(0);
    }

    function setRowCount(n) {
      G.rowCount = n;
      if (!G.space) return;
      const total = n * ROW_H;
      G.spaceH = Math.min(total, MAX_SPACE);
      G.space.style.height = G.spaceH + 'px';
      G.space.style.width = G.totalW + 'px';
      schedule();
    }

    function onScroll() {
      schedule();
      clearTimeout(G.pumpTimer);
      G.pumpTimer = setTimeout(pump, FETCH_DEBOUNCE);
    }

    function schedule() {
      if (G.raf) return;
      G.raf = requestAnimationFrame(() => { G.raf = 0; render(); });
    }

    // view returns the rows in view and where the first one is drawn.
    function view() {
      const sc = G.scroller;
      const headH = G.head ? G.head.offsetHeight : 0;
      const viewH = Math.max(sc.clientHeight - headH, ROW_H);
      const s = sc.scrollTop;
      const total = G.rowCount * ROW_H;
      let vTop = s;
      if (total > G.spaceH && G.spaceH > viewH) {
        const maxS = G.spaceH - viewH;
        vTop = Math.min(s, maxS) / maxS * (total - viewH);
      }
      const first = Math.max(0, Math.floor(vTop / ROW_H) - OVERSCAN);
      const last = Math.min(G.rowCount - 1, Math.floor((vTop + viewH) / ROW_H) + OVERSCAN);
      return { first, last, shift: s - vTop };
    }

    function windowData(w) {
      const d = G.cache.get(w);
      if (d && w !== 0) { G.cache.delete(w); G.cache.set(w, d); } // LRU touch
      return d;
    }

    function render() {
      if (!G.scroller || !G.fields || !G.scroller.isConnected) return;
      const { first, last, shift } = view();
      for (const [i, r] of G.rows) {
        if (i < first || i > last) { r.el.remove(); G.rows.delete(i); }
      }
      let missing = false;
      let curW = -1, data;
      const frag = document.createDocumentFragment();
      for (let i = first; i <= last; i++) {
        const w = Math.floor(i / WIN);
        if (w !== curW) { curW = w; data = windowData(w); }
        const local = i - w * WIN;
        let state;
        if (!data) { state = 'loading'; missing = true; }
        else if (data.error) state = 'failed';
        else if (local < data.n) state = 'ok';
        else state = G.done ? 'gone' : 'loading';
        let r = G.rows.get(i);
        if (r && r.state !== state) { r.el.remove(); r = null; }
        if (!r) {
          r = { el: makeRow(i, state, data, local), state };
          G.rows.set(i, r);
          frag.append(r.el);
        }
        r.el.style.top = (i * ROW_H + shift) + 'px';
      }
      if (frag.firstChild) G.space.append(frag);
      if (missing && G.done) {
        if (!G.pumpTimer) G.pumpTimer = setTimeout(pump, FETCH_DEBOUNCE);
      }
    }

    function makeRow(i, state, data, local) {
      const row = document.createElement('div');
      row.className = 'grow-r';
      row.style.width = G.totalW + 'px';
      const rn = document.createElement('div');
      rn.className = 'rnum';
      rn.style.width = G.rnW + 'px';
      rn.textContent = String(i + 1);
      row.append(rn);
      for (let c = 0; c < G.fields.length; c++) {
        const d = document.createElement('div');
        let cls = 'cell';
        d.dataset.row = String(i);
        d.dataset.col = String(c);
        d.style.width = G.widths[c] + 'px';
        if (state === 'ok') {
          const v = data.cols[c][local];
          if (v == null) { cls += ' null'; d.textContent = 'NULL'; }
          else {
            d.textContent = v;
            if (G.num[c]) cls += ' num';
            if (v.length > 20) d.title = v.length > 300 ? v.slice(0, 300) + '…' : v;
          }
        } else if (state === 'gone') {
          d.textContent = '';
        } else if (state === 'failed') {
          cls += ' failed';
          d.textContent = c === 0 ? '⚠ ' + data.error : '';
          d.title = data.error;
        } else {
          cls += ' loading';
          d.textContent = '…';
        }
        d.className = cls;
        row.append(d);
      }
      return row;
    }

    // pump fetches the windows in view that are not here, a couple at a time.
    function pump() {
      G.pumpTimer = 0;
      if (!G.scroller || !G.done || !G.fields) return;
      if (S.session && S.session.auth && !S.session.user) return;
      const { first, last } = view();
      for (let w = Math.floor(first / WIN); w <= Math.floor(last / WIN); w++) {
        if (G.inflight.size >= MAX_INFLIGHT) break;
        if (G.cache.has(w) || G.inflight.has(w)) continue;
        fetchWindow(w);
      }
    }

    async function fetchWindow(w) {
      const gen = G.gen;
      const ac = new AbortController();
      G.inflight.set(w, ac);
      let retry = false;
      try {
        const r = await api('/api/query', { method: 'POST', json: { sql: G.sql, offset: w * WIN, limit: WIN }, signal: ac.signal });
        if (gen !== G.gen) return;
        if (!r.ok) {
          const e = await readError(r);
          if (r.status === 429 || r.status === 401) retry = r.status === 429;
          else put(w, { error: e.message });
          return;
        }
        if (!(r.headers.get('Content-Type') || '').includes('arrow')) {
          put(w, { error: 'the statement returned no rows this time' });
          return;
        }
        const reader = await Arrow.RecordBatchReader.from(r.body);
        await reader.open();
        const win = newWindow();
        for await (const batch of reader) {
          if (gen !== G.gen) return;
          const take = Math.min(WIN - win.n, batch.numRows);
          if (take > 0) append(win, batch, 0, take);
        }
        if (gen !== G.gen) return;
        put(w, win);
      } catch (e) {
        if (gen === G.gen && !ac.signal.aborted) put(w, { error: e.message || String(e) });
      } finally {
        if (G.inflight.get(w) === ac) G.inflight.delete(w);
        if (gen === G.gen) {
          if (retry) { clearTimeout(G.retryTimer); G.retryTimer = setTimeout(pump, 1000); }
          else pump();
        }
      }
    }

    function put(w, data) {
      G.cache.set(w, data);
      if (!data.error) fit(data, false);
      // evict the least recently used windows, never the first
      while (G.cache.size > CACHE_WINDOWS + 1) {
        let victim = null;
        for (const k of G.cache.keys()) { if (k !== 0) { victim = k; break; } }
        if (victim == null) break;
        G.cache.delete(victim);
        for (const [i, r] of G.rows) if (Math.floor(i / WIN) === victim) { r.el.remove(); G.rows.delete(i); }
      }
      schedule();
    }

    return {
      reset, begin, keep, finish, render: schedule,
      get state() { return G; },
    };
  })();

  // ---------- live view ----------

  const live = {
    timer: 0, polling: false, prev: null, charts: {}, ro: null, rowsById: new Map(),
    s: { t: [], flight: [], mysql: [], running: [], queued: [], msgs: [], rows: [] },
  };

  function liveActive() {
    const s = S.session;
    return !!s && (!s.auth || !!s.user) && S.tab === 'live' && document.visibilityState === 'visible';
  }
  function startLive() {
    if (live.polling || live.timer) return;
    pollLive();
  }
  function stopLive() {
    clearTimeout(live.timer);
    live.timer = 0;
  }
  async function pollLive() {
    live.timer = 0;
    if (!liveActive() || live.polling) return;
    live.polling = true;
    const t0 = Date.now();
    try {
      const r = await api('/api/live');
      if (!r.ok) throw await readError(r);
      const snap = await r.json();
      applyLive(snap);
      $('live-error').textContent = '';
    } catch (e) {
      $('live-error').textContent = 'live update failed: ' + e.message;
    } finally {
      live.polling = false;
    }
    if (liveActive() && !live.timer) live.timer = setTimeout(pollLive, Math.max(250, 1000 - (Date.now() - t0)));
  }

  function metricSum(m, name) {
    const a = m && m[name];
    if (!Array.isArray(a) || !a.length) return null;
    let s = 0;
    for (const x of a) s += Number(x.value) || 0;
    return s;
  }
  function rate(cur, prev, dt) {
    if (cur == null || prev == null || !(dt > 0) || dt > 10 || cur < prev) return null;
    return (cur - prev) / dt;
  }

  function clock(sec) {
    const d = new Date(sec * 1000);
    return String(d.getHours()).padStart(2, '0') + ':' + String(d.getMinutes()).padStart(2, '0') + ':' + String(d.getSeconds()).padStart(2, '0');
  }
  function axisNum(v) {
    const trim = (x) => String(+x.toFixed(2));
    if (v >= 1e9) return trim(v / 1e9) + 'G';
    if (v >= 1e6) return trim(v / 1e6) + 'M';
    if (v >= 1e3) return trim(v / 1e3) + 'k';
    return trim(v);
  }

  function chartOpts(title, series, el, fmt) {
    const colors = ['#2563eb', '#d97706', '#059669', '#db2777'];
    return {
      title, width: Math.max(el.clientWidth, 300), height: 170,
      scales: { x: { time: true, range: (u, min, max) => (max == null ? [Date.now() / 1000 - LIVE_SPAN, Date.now() / 1000] : [max - LIVE_SPAN, max]) }, y: { range: (u, min, max) => {
        const hi = max == null || !(max > 0) ? 1 : max * 1.1;
        return [0, fmt === 'int' ? Math.max(Math.ceil(hi), 4) : hi];
      } } },
      axes: [
        { stroke: '#6b7280', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#dfe3e8' }, space: 70,
          values: (u, vals) => vals.map((v) => clock(v)) },
        { stroke: '#6b7280', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#dfe3e8' }, size: 56,
          values: (u, vals) => vals.map((v) => (fmt === 'int' ? String(v) : axisNum(v))) },
      ],
      series: [{}].concat(series.map((label, i) => ({
        label, stroke: colors[i], width: 1.5, fill: i === 0 ? 'rgba(37,99,235,0.07)' : undefined,
        value: (u, v) => (v == null ? '–' : (fmt === 'int' ? String(v) : axisNum(v))),
        points: { show: false },
      }))),
      cursor: { drag: { x: false, y: false } },
      legend: { live: true },
    };
  }

  function ensureCharts() {
    if (live.ro) return;
    const defs = S.session.kind === 'ingest'
      ? [['chart-ingest-messages', 'Messages/s', ['messages/s'], ['msgs']],
         ['chart-ingest-rows', 'Rows/s', ['rows/s'], ['rows']]]
      : [['chart-flight', 'Flight MB/s', ['MB/s'], ['flight']],
         ['chart-mysql', 'MySQL rows/s', ['rows/s'], ['mysql']],
         ['chart-queries', 'Queries', ['running', 'queued'], ['running', 'queued'], 'int']];
    live.ro = new ResizeObserver((entries) => {
      for (const e of entries) {
        const c = live.charts[e.target.id];
        const w = Math.floor(e.contentRect.width);
        if (c && w > 0 && Math.abs(c.u.width - w) > 1) c.u.setSize({ width: w, height: 170 });
      }
    });
    for (const [id, title, labels, keys, fmt] of defs) {
      const host = $(id);
      if (!host) continue;
      const u = new uPlot(chartOpts(title, labels, host, fmt), liveData(keys), host);
      live.charts[id] = { u, keys };
      live.ro.observe(host);
    }
  }
  function liveData(keys) { return [live.s.t].concat(keys.map((k) => live.s[k])); }

  function applyLive(snap) {
    const t = (Number(snap.time) || Date.now()) / 1000;
    const m = snap.metrics || {};
    const s = live.s;
    const p = live.prev;
    if (p && t <= p.t) return;
    const dt = p ? t - p.t : 0;
    const cur = {
      t,
      flight: metricSum(m, 'quiver_flight_result_bytes_total'),
      mysql: metricSum(m, 'quiver_mysql_rows_sent_total'),
    };
    const ing = snap.ingest || null;
    if (ing) { cur.msgs = ing.messages_total; cur.rows = ing.rows_total; }
    const adm = snap.admission || null;
    s.t.push(t);
    const fr = rate(cur.flight, p && p.flight, dt);
    s.flight.push(fr == null ? null : fr / 1e6);
    s.mysql.push(rate(cur.mysql, p && p.mysql, dt));
    s.running.push(adm ? Number(adm.running) || 0 : 0);
    s.queued.push(adm ? Number(adm.queued) || 0 : 0);
    s.msgs.push(ing ? rate(Number(cur.msgs), p && p.msgs, dt) : null);
    s.rows.push(ing ? rate(Number(cur.rows), p && p.rows, dt) : null);
    let drop = 0;
    while (drop < s.t.length && s.t[drop] < t - LIVE_SPAN) drop++;
    if (drop) for (const k of Object.keys(s)) s[k].splice(0, drop);
    live.prev = cur;

    ensureCharts();
    for (const c of Object.values(live.charts)) c.u.setData(liveData(c.keys));

    $('live-rss').textContent = fmtBytes(metricSum(m, 'process_resident_memory_bytes'));
    $('live-heap').textContent = fmtBytes(metricSum(m, 'go_memstats_heap_inuse_bytes'));
    const g = metricSum(m, 'go_goroutines');
    $('live-goroutines').textContent = g == null ? '–' : fmtInt(g);
    $('live-admission').textContent = adm
      ? adm.running + '/' + adm.max_running + ' running · ' + adm.open + '/' + adm.max_open + ' open · ' + adm.queued + ' queued'
      : 'off';
    $('live-updated').textContent = 'updated ' + new Date(t * 1000).toLocaleTimeString();

    if (snap.kind === 'ingest' || ing) renderIngest(ing);
    else {
      renderQueries(snap.queries || [], adm);
      renderPipelines(snap.pipelines || null);
    }
  }

  // renderPipelines lists the Kafka pipelines quiver serve --ingest runs:
  // their counts, the summed lag of their partitions, and whether they
  // run or stopped on an error.
  function renderPipelines(ps) {
    const box = $('pipelines');
    if (!box) return;
    box.hidden = !ps || !ps.length;
    if (box.hidden) return;
    const num = (v) => (v == null ? '–' : fmtInt(v));
    const rows = ps.map((p) => {
      const l = p.live || {};
      const parts = l.partitions || [];
      let lag = null;
      for (const q of parts) if (q.lag != null) lag = (lag || 0) + Number(q.lag);
      const err = l.last_error && l.last_error.message;
      const state = p.stopped ? 'stopped' + (err ? ': ' + err : '') : (err ? 'running; last error: ' + err : 'running');
      const tr = document.createElement('tr');
      tr.dataset.pipeline = p.name;
      tr.append(el('td', '', p.name), el('td', '', l.topic || '–'), el('td', '', l.table || '–'),
        el('td', 'num', num(l.messages_total)), el('td', 'num', num(l.rows_total)),
        el('td', 'num', String(parts.length)), el('td', 'num', num(lag)),
        el('td', p.stopped || err ? 'bad' : 'ok', state));
      return tr;
    });
    $('pipelines-table').tBodies[0].replaceChildren(...rows);
  }

  function renderQueries(qs, adm) {
    const table = $('queries');
    if (!table) return;
    const note = $('queries-note');
    note.hidden = !!adm;
    note.textContent = adm ? '' : 'Admission control is off, so queries are not tracked.';
    $('queries-empty').hidden = !adm || qs.length > 0;
    const body = table.tBodies[0];
    const admin = S.session.role === 'admin';
    const seen = new Set();
    const want = [];
    for (const q of qs) {
      const id = String(q.id);
      seen.add(id);
      let r = live.rowsById.get(id);
      if (!r) {
        const tr = document.createElement('tr');
        tr.dataset.id = id;
        const cells = {};
        for (const k of ['id', 'endpoint', 'user', 'lane', 'state', 'seconds', 'sql']) {
          const td = document.createElement('td');
          if (k === 'seconds') td.className = 'num';
          if (k === 'sql') td.className = 'sql';
          cells[k] = td;
          tr.append(td);
        }
        const act = document.createElement('td');
        if (admin) {
          const b = el('button', 'cancel-query', 'Cancel');
          b.type = 'button';
          b.dataset.id = id;
          act.append(b);
        }
        tr.append(act);
        r = { tr, cells, v: {} };
        live.rowsById.set(id, r);
      }
      const vals = {
        id, endpoint: q.endpoint || '', user: q.user || '', lane: q.lane || '', state: q.state || '',
        seconds: (Number(q.seconds) || 0).toFixed(1), sql: q.sql || '',
      };
      for (const k of Object.keys(vals)) {
        if (r.v[k] === vals[k]) continue;
        r.v[k] = vals[k];
        const td = r.cells[k];
        if (k === 'sql') {
          const one = vals.sql.replace(/\s+/g, ' ').trim();
          td.textContent = one ? (one.length > 120 ? one.slice(0, 120) + '…' : one) : '(hidden)';
          td.title = vals.sql;
        } else {
          td.textContent = vals[k];
          if (k === 'state') td.className = 'state-' + vals[k];
        }
      }
      want.push(r.tr);
    }
    for (const [id, r] of live.rowsById) if (!seen.has(id)) { r.tr.remove(); live.rowsById.delete(id); }
    // reorder only when the order changed, so a row under the pointer stays put
    const now = Array.from(body.children);
    if (now.length !== want.length || now.some((tr, i) => tr !== want[i])) body.append(...want);
  }

  let noteTimer = 0;
  function liveNote(t) {
    const n = $('live-note');
    n.textContent = t;
    clearTimeout(noteTimer);
    noteTimer = setTimeout(() => { n.textContent = ''; }, 8000);
  }

  function clearQueries() {
    const t = $('queries');
    if (t) t.tBodies[0].replaceChildren();
    live.rowsById.clear();
  }

  async function cancelQuery(btn) {
    const id = btn.dataset.id;
    btn.disabled = true;
    const note = { set textContent(t) { liveNote(t); } };
    try {
      const r = await api('/api/cancel', { method: 'POST', json: { id } });
      if (r.ok) note.textContent = 'cancel sent for query ' + id;
      else { note.textContent = 'cancel ' + id + ': ' + (await readError(r)).message; btn.disabled = false; }
    } catch (e) {
      note.textContent = 'cancel ' + id + ': ' + e.message;
      btn.disabled = false;
    }
  }

  function renderIngest(ing) {
    if (!$('ingest')) return;
    const set = (id, text, cls) => { const e = $(id); e.textContent = text; e.className = cls || ''; };
    const num = (v) => (v == null ? '–' : fmtInt(v));
    if (!ing) { set('ingest-topic', '–'); return; }
    set('ingest-topic', ing.topic || '–');
    set('ingest-table', ing.table || '–');
    set('ingest-messages', num(ing.messages_total));
    set('ingest-rows', num(ing.rows_total));
    set('ingest-bytes', ing.bytes_total == null ? '–' : fmtBytes(ing.bytes_total));
    set('ingest-sealed', num(ing.segments_sealed));
    set('ingest-exported', num(ing.segments_exported));
    set('ingest-commits', num(ing.lake_commits));
    set('ingest-backlog', num(ing.backlog_segments), ing.backlog_segments > 0 ? 'bad' : '');
    const disk = ing.disk || {};
    set('ingest-disk-free', disk.free_bytes == null ? '–' : fmtBytes(disk.free_bytes));
    set('ingest-paused', disk.paused ? 'paused (disk guard, or the lake is behind)' : 'not paused', disk.paused ? 'bad' : 'ok');

    const body = $('ingest-partitions').tBodies[0];
    const rows = (ing.partitions || []).map((p) => {
      const tr = document.createElement('tr');
      tr.dataset.partition = String(p.partition);
      for (const v of [p.partition, p.next_offset, p.high_watermark, p.lag]) {
        const td = el('td', 'num', v == null ? '–' : fmtInt(v));
        tr.append(td);
      }
      return tr;
    });
    if (!rows.length) {
      const tr = document.createElement('tr');
      const td = el('td', 'dim', 'no partitions assigned');
      td.colSpan = 4;
      tr.append(td);
      rows.push(tr);
    }
    body.replaceChildren(...rows);

    const le = $('ingest-last-error');
    const e = ing.last_error;
    if (e && e.message) {
      let when = e.time || '';
      const d = when ? new Date(when) : null;
      if (d && !isNaN(d.getTime())) when = d.toLocaleString() + ' (' + e.time + ')';
      le.textContent = e.message + (when ? '\n' + when : '');
      le.className = 'bad';
    } else {
      le.textContent = 'none';
      le.className = '';
    }
  }

  // ---------- wiring ----------

  function wire() {
    $('login-form').addEventListener('submit', login);
    $('logout').addEventListener('click', logout);
    for (const t of document.querySelectorAll('#tabs .tab')) {
      t.addEventListener('click', () => showTab(t.id.slice(4)));
    }
    const ed = $('sql');
    try { ed.value = localStorage.getItem(DRAFT_KEY) || ''; } catch (e) { /* ignore */ }
    ed.addEventListener('input', saveDraft);
    ed.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); }
    });
    $('run').addEventListener('click', run);
    $('cancel').addEventListener('click', cancel);
    for (const f of ['parquet', 'csv', 'json', 'arrow']) $('download-' + f).addEventListener('click', () => download(f));
    $('download-frame').addEventListener('load', downloadFrameLoaded);
    $('schema').addEventListener('click', schemaClick);
    $('schema-refresh').addEventListener('click', () => loadSchema());
    $('history').addEventListener('click', (e) => {
      const li = e.target.closest('li');
      if (!li || li.dataset.sql == null) return;
      ed.value = li.dataset.sql;
      saveDraft();
      ed.focus();
    });
    $('history-clear').addEventListener('click', () => { saveHistory([]); renderHistory(); });
    renderHistory();
    $('queries').addEventListener('click', (e) => {
      const b = e.target.closest('button.cancel-query');
      if (b) cancelQuery(b);
    });
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible' && S.tab === 'live') startLive();
    });
    new ResizeObserver(() => grid.render()).observe($('grid'));
  }

  if (typeof Arrow === 'undefined' || typeof uPlot === 'undefined') {
    // the libraries are missing (a binary built without make console-assets): say so and go on
    const warn = () => {
      const e = $('error');
      e.textContent = 'The console\'s libraries (/vendor/) did not load: results and charts do not work. Build quiver with make build (make console-assets).';
      e.hidden = false;
    };
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', warn); else warn();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
