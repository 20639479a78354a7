// @ts-check
/** @import { EngineStatus, HistoryPage, LiveMatrix, ResultDetails, ResultPage, TestResult, ToolCallRecord } from '../../../types/api' */
/** @import { Child } from '../../../types/dom' */

// The results explorer: one page at a time of a run's results (a cell's,
// or the whole run's), filtered by status (and domain and level for a
// whole run), searched, sorted and paged by the server; one line per
// result until it is opened; CSV and JSONL export of what the filters
// select; a live run's page refreshed as results arrive. And the small
// chart of a cell's score over the last runs.

import { get, seg, getToken } from './api.js';
import { h, STATUS, fmtScore, fmtDuration, fmtNumber, fmtTime, errorText, pre, dl, statusBadge, fill, toast } from './ui.js';
import { fmtCost } from './matrix.js';
import { renderTranscript } from './transcript.js';

const KNOWN_DETAILS = new Set(['extracted_answer', 'pass2_used', 'pass2_response', 'tool_calls', 'error', 'expected_type', 'reason']);
const PAGE_SIZES = [25, 50, 100, 250];
const SEARCH_DELAY = 300;
const LIVE_EVERY = 2000;

/** @type {[string, string][]} */
const COLUMNS = [['id', 'Test'], ['score', 'Score'], ['duration_ms', 'Duration']];

/**
 * @typedef {object} ExplorerOptions
 * @property {string} runId
 * @property {string} [domain] a cell's domain; absent: the whole run
 * @property {string | number} [level] a cell's level
 * @property {{id: string, name: string}[]} [domains] the domains to filter on (whole run)
 * @property {number[]} [levels] the levels to filter on (whole run)
 * @property {boolean} [live] the run is running: refresh until it ends
 * @property {(page: ResultPage) => void} [onPage] called with each page shown
 */

/**
 * A results explorer for a cell (domain and level given) or a whole run.
 * It stops refreshing once removed from the page.
 * @param {ExplorerOptions} opts
 * @returns {HTMLElement}
 */
export function resultsExplorer(opts) {
  const cell = opts.domain !== undefined;
  const st = {
    status: '', domain: '', level: '', q: '', sort: 'score', limit: 50,
    /** @type {string[]} the cursors of the pages up to the one shown ('' is the first) */
    stack: [''],
    /** @type {string | null} */
    next: null,
    /** keys (test#repeat) of the rows opened, kept across refreshes */
    open: new Set(),
    gen: 0,
    live: !!opts.live,
  };

  const statusSel = h('select', { class: 'ex-status', 'aria-label': 'Status' },
    [['', 'All statuses'], ['passed', 'Passed'], ['failed', 'Failed'], ['error', 'Error']].map(([v, l]) => h('option', { value: v }, l)));
  statusSel.addEventListener('change', () => { st.status = statusSel.value; restart(); });
  const domainSel = cell ? null : h('select', { class: 'ex-domain', 'aria-label': 'Domain' }, h('option', { value: '' }, 'All domains'),
    (opts.domains || []).map((d) => h('option', { value: d.id }, d.name || d.id)));
  if (domainSel) domainSel.addEventListener('change', () => { st.domain = domainSel.value; restart(); });
  const levelSel = cell ? null : h('select', { class: 'ex-level', 'aria-label': 'Level' }, h('option', { value: '' }, 'All levels'),
    (opts.levels || []).map((l) => h('option', { value: String(l) }, `Level ${l}`)));
  if (levelSel) levelSel.addEventListener('change', () => { st.level = levelSel.value; restart(); });
  const search = h('input', { type: 'search', class: 'ex-search', placeholder: 'Search prompt, response, test id', 'aria-label': 'Search the results' });
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let searchTimer;
  search.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { if (search.value.trim() !== st.q) { st.q = search.value.trim(); restart(); } }, SEARCH_DELAY);
  });
  const sizeSel = h('select', { class: 'ex-size', 'aria-label': 'Results per page' },
    PAGE_SIZES.map((n) => h('option', { value: String(n), selected: n === st.limit }, `${n} per page`)));
  sizeSel.addEventListener('change', () => { st.limit = Number(sizeSel.value); restart(); });
  const csv = exportLink('csv', 'Export CSV');
  const jsonl = exportLink('jsonl', 'Export JSONL');

  const count = h('p', { class: 'ex-count', role: 'status' }, 'Loading results…');
  const headRow = h('tr');
  const tbody = h('tbody');
  const table = h('table', { class: 'list results-table' },
    h('caption', { class: 'visually-hidden' }, cell ? 'The results of this cell' : 'The results of this run'), h('thead', null, headRow), tbody);
  const prev = h('button', { type: 'button', class: 'small ex-prev', disabled: true, onclick: () => { st.stack.pop(); load(true); } }, '← Previous');
  const next = h('button', { type: 'button', class: 'small ex-next', disabled: true, onclick: () => { if (st.next) { st.stack.push(st.next); load(true); } } }, 'Next →');
  const pageNo = h('span', { class: 'ex-page muted' });
  const root = h('section', { class: 'explorer', 'aria-label': 'Results' },
    h('div', { class: 'toolbar ex-filters' }, statusSel, domainSel, levelSel, search, sizeSel, csv, jsonl),
    count, h('div', { class: 'table-wrap' }, table), h('div', { class: 'toolbar ex-pager' }, prev, pageNo, next));

  renderHead();
  load();
  if (st.live) setTimeout(watch, LIVE_EVERY);
  return root;

  // ---- state → requests ----

  /** The filters as query parameters (no paging). */
  function filters() {
    const p = new URLSearchParams();
    if (cell) { p.set('domain', String(opts.domain)); p.set('level', String(opts.level)); } else {
      if (st.domain) p.set('domain', st.domain);
      if (st.level) p.set('level', st.level);
    }
    if (st.status) p.set('status', st.status);
    if (st.q) p.set('q', st.q);
    p.set('sort', st.sort);
    return p;
  }

  function filtered() { return !!(st.status || st.q || (!cell && (st.domain || st.level))); }

  function restart() {
    st.stack = [''];
    renderHead();
    load();
  }

  /** @param {boolean} [paged] a new page: bring its top into view */
  async function load(paged = false) {
    const mine = ++st.gen;
    const p = filters();
    p.set('limit', String(st.limit));
    const cursor = st.stack[st.stack.length - 1];
    if (cursor) p.set('cursor', cursor);
    const base = `/api/run/${seg(opts.runId)}`;
    /** @type {Promise<ResultPage | null>} the whole scope's total, for "41 of 1,000" */
    let all = Promise.resolve(null);
    if (filtered()) {
      const a = new URLSearchParams({ limit: '1' });
      if (cell) { a.set('domain', String(opts.domain)); a.set('level', String(opts.level)); }
      all = get(`${base}/results?${a}`);
    }
    updateExports();
    try {
      const [page, whole] = await Promise.all([/** @type {Promise<ResultPage>} */ (get(`${base}/results?${p}`)), all]);
      if (mine !== st.gen) return;
      st.next = page.next_cursor;
      render(page, whole ? whole.total : page.total);
      if (paged) count.scrollIntoView({ block: 'nearest' });
      if (opts.onPage) opts.onPage(page);
    } catch (err) {
      if (mine !== st.gen) return;
      fill(count, h('span', { class: 'error', role: 'alert' }, `Could not load the results: ${errorText(err)}`));
    }
  }

  /** While the run is live, reload the page shown; once more when it ends. */
  async function watch() {
    if (!root.isConnected) return;
    if (root.offsetParent !== null) {
      // As the live view does: the engine's status names the run it runs.
      /** @type {EngineStatus | null} */
      let s = null;
      try { s = await get('/api/status'); } catch { /* try again */ }
      if (!root.isConnected) return;
      if (s && !(s.status === 'running' && s.run_id === opts.runId)) st.live = false;
      await load();
    }
    if (st.live) setTimeout(watch, LIVE_EVERY);
  }

  // ---- rendering ----

  function renderHead() {
    const [key, desc] = st.sort.startsWith('-') ? [st.sort.slice(1), true] : [st.sort, false];
    /** @param {string} sortKey @param {string} label */
    const sortable = (sortKey, label) => {
      const on = key === sortKey;
      return h('th', { scope: 'col', class: `col-${sortKey}`, 'aria-sort': on ? (desc ? 'descending' : 'ascending') : 'none' },
        h('button', { type: 'button', class: 'sort', dataset: { sort: sortKey },
          onclick: () => { st.sort = on && !desc ? `-${sortKey}` : sortKey; restart(); } },
        label, h('span', { class: 'sort-mark', 'aria-hidden': 'true' }, on ? (desc ? ' ▼' : ' ▲') : '')));
    };
    fill(headRow,
      h('th', { scope: 'col', class: 'col-open' }, h('span', { class: 'visually-hidden' }, 'Open')),
      sortable(COLUMNS[0][0], COLUMNS[0][1]),
      h('th', { scope: 'col' }, 'Status'),
      sortable(COLUMNS[1][0], COLUMNS[1][1]),
      sortable(COLUMNS[2][0], COLUMNS[2][1]),
      h('th', { scope: 'col', class: 'col-cost' }, 'Cost'),
      h('th', { scope: 'col', class: 'col-preview' }, 'Response'));
  }

  /**
   * @param {ResultPage} page
   * @param {number} whole results in scope, filters left out
   */
  function render(page, whole) {
    const results = page.results || [];
    const first = (st.stack.length - 1) * st.limit;
    const shown = results.length ? ` · ${fmtNumber(first + 1)}–${fmtNumber(first + results.length)} shown` : '';
    const what = filtered() ? `${fmtNumber(page.total)} of ${fmtNumber(whole)} results` : `${fmtNumber(page.total)} result${page.total === 1 ? '' : 's'}`;
    fill(count, what + shown);
    /** @type {HTMLElement[]} */
    const rows = [];
    for (const r of results) {
      const key = `${r.test_id}#${r.repeat}`;
      const detail = h('tr', { class: 'result-detail', hidden: true }, h('td', { colspan: '7' }));
      const toggle = h('button', { type: 'button', class: 'small row-toggle', 'aria-expanded': 'false', 'aria-label': `Show ${key}` }, '▸');
      const setOpen = (/** @type {boolean} */ open) => {
        toggle.setAttribute('aria-expanded', String(open));
        toggle.textContent = open ? '▾' : '▸';
        detail.hidden = !open;
        row.classList.toggle('open', open);
        if (open) { st.open.add(key); if (!detail.firstElementChild?.firstChild) fill(/** @type {HTMLElement} */ (detail.firstElementChild), resultBody(r)); } else st.open.delete(key);
      };
      toggle.addEventListener('click', () => setOpen(!row.classList.contains('open')));
      const s = STATUS[r.status] || { sym: '?', label: r.status };
      const row = h('tr', { class: `result-row st-${r.status}`, dataset: { test: r.test_id, repeat: String(r.repeat), status: r.status } },
        h('td', { class: 'col-open' }, toggle),
        h('td', { class: 'test-key' }, h('code', null, r.test_id), r.repeat ? h('span', { class: 'muted' }, `#${r.repeat}`) : null),
        h('td', null, h('span', { class: `badge st-${r.status}` }, h('span', { class: 'sym', 'aria-hidden': 'true' }, s.sym), ' ', s.label)),
        h('td', { class: 'num score' }, fmtScore(r.score)),
        h('td', { class: 'num duration' }, fmtDuration(r.duration_ms)),
        h('td', { class: 'num cost', title: r.cost_usd === null || r.cost_usd === undefined ? 'no price for the model' : null }, fmtCost(r.cost_usd)),
        h('td', { class: 'preview', title: r.response.slice(0, 500) }, preview(r.response)));
      row.addEventListener('click', (e) => { if (!(e.target instanceof HTMLElement && e.target.closest('button'))) setOpen(!row.classList.contains('open')); });
      rows.push(row, detail);
      if (st.open.has(key)) setOpen(true);
    }
    if (!results.length) rows.push(h('tr', null, h('td', { colspan: '7', class: 'muted' }, filtered() ? 'No result matches.' : 'No finished results yet.')));
    fill(tbody, rows);
    prev.disabled = st.stack.length <= 1;
    next.disabled = !page.next_cursor;
    const pages = Math.max(1, Math.ceil(page.total / st.limit));
    pageNo.textContent = `Page ${st.stack.length} of ${fmtNumber(pages)}`;
    root.dataset.loaded = String(st.gen);
    performance.mark('gauntlet:results-shown');
  }

  // ---- export ----

  /**
   * @param {'csv' | 'jsonl'} format
   * @param {string} label
   */
  function exportLink(format, label) {
    const a = h('a', { class: `button small ex-export-${format}`, download: `${opts.runId}.${format}` }, label);
    a.addEventListener('click', async (e) => {
      const token = getToken();
      if (!token) return; // the link downloads by itself
      // A link cannot carry the Authorization header: fetch, then save.
      e.preventDefault();
      try {
        const res = await fetch(a.href, { headers: { Authorization: `Bearer ${token}` } });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        const url = URL.createObjectURL(await res.blob());
        const tmp = h('a', { href: url, download: a.download, hidden: true });
        document.body.append(tmp);
        tmp.click();
        tmp.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10000);
      } catch (err) {
        toast(`Could not export: ${errorText(err)}`, 'error');
      }
    });
    return a;
  }

  function updateExports() {
    for (const [a, format] of /** @type {[HTMLAnchorElement, string][]} */ ([[csv, 'csv'], [jsonl, 'jsonl']])) {
      const p = filters();
      p.set('format', format);
      a.href = `/api/run/${seg(opts.runId)}/export?${p}`;
    }
  }
}

/**
 * The first line of a response, cut short.
 * @param {string} text
 */
function preview(text) {
  const line = (text || '').trim().split('\n', 1)[0];
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

/**
 * Everything about one result: expected and extracted answers, why,
 * response, prompt, system prompt, error, second pass, tool calls, other
 * details, the transcript and the figures.
 * @param {TestResult} t
 */
export function resultBody(t) {
  /** @type {ResultDetails} */
  const d = t.details || {};
  const expected = t.expected || {};
  const extracted = d.extracted_answer;
  const compare = h('div', { class: 'compare-answers' },
    h('div', { class: 'answer' }, h('h4', null, `Expected${expected.type ? ` (${expected.type})` : ''}`), pre(expected.answer ?? '')),
    h('div', { class: 'answer' }, h('h4', null, 'Extracted'),
      extracted === undefined || extracted === null || extracted === '' ? h('p', { class: 'muted' }, 'nothing extracted') : pre(String(extracted))));
  /** @type {Child[]} */
  const parts = [
    t.name ? h('p', { class: 'test-name' }, t.name) : null,
    compare,
    d.reason ? h('p', { class: 'reason' }, h('strong', null, 'Why: '), String(d.reason)) : null,
    h('h4', null, 'Response'), pre(t.response || '', 'response'),
    h('h4', null, 'Prompt'), pre(t.prompt || ''),
    h('h4', null, 'Effective system prompt'), t.system_prompt ? pre(t.system_prompt) : h('p', { class: 'muted' }, '(none)'),
  ];
  if (d.error) parts.push(h('h4', null, 'Error'), pre(String(d.error), 'error'));
  parts.push(h('h4', null, 'Second pass'), d.pass2_used
    ? h('div', null, h('p', null, 'Used: nothing usable was extracted, so the model was asked to restate its final answer.'),
      d.pass2_response !== undefined ? pre(String(d.pass2_response)) : null)
    : h('p', { class: 'muted' }, 'Not used.'));
  /** @type {ToolCallRecord[]} */
  const calls = Array.isArray(d.tool_calls) ? d.tool_calls : [];
  if (calls.length) {
    parts.push(h('h4', null, `Tool calls (${calls.length})`), h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Function'), h('th', { scope: 'col' }, 'Arguments'), h('th', { scope: 'col' }, 'Output'))),
      h('tbody', null, calls.map((c) => h('tr', null, h('td', null, h('code', null, c.name || '')),
        h('td', null, pre(asText(c.arguments))), h('td', null, pre(asText(c.output)))))))));
  }
  const other = Object.fromEntries(Object.entries(d).filter(([k]) => !KNOWN_DETAILS.has(k)));
  if (Object.keys(other).length) parts.push(h('h4', null, 'Other details'), pre(JSON.stringify(other, null, 2)));
  const nMsgs = (t.transcript || []).length;
  const nCalls = (t.calls || []).length;
  parts.push(h('details', { class: 'transcript-wrap' },
    h('summary', null, `Transcript: ${nMsgs} message${nMsgs === 1 ? '' : 's'}, ${nCalls} model call${nCalls === 1 ? '' : 's'}`),
    renderTranscript(t)));
  const tokens = (t.prompt_tokens || 0) + (t.completion_tokens || 0);
  parts.push(dl([
    ['Status', statusBadge(t.status)],
    ['Score', fmtScore(t.score)],
    ['Duration', fmtDuration(t.duration_ms)],
    ['Tokens', `${fmtNumber(tokens)} tokens: ${fmtNumber(t.prompt_tokens || 0)} prompt + ${fmtNumber(t.completion_tokens || 0)} completion`],
    ['Cost', t.judge_cost_usd ? `${fmtCost(t.cost_usd)} (judge ${fmtCost(t.judge_cost_usd)})` : fmtCost(t.cost_usd)],
    ['Model label', t.model_name || '—'],
    ['Finished', fmtTime(t.created_at)],
  ]));
  return h('div', { class: 'test-body' }, parts);
}

/** @param {unknown} v */
function asText(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') {
    try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; }
  }
  return JSON.stringify(v, null, 2);
}

// ---- Score over the last runs ----

const SVG = 'http://www.w3.org/2000/svg';
let chartIds = 0;

/**
 * @param {string} tag
 * @param {Record<string, string | number>} attrs
 * @param {...(Node | string)} children
 */
function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  el.append(...children);
  return el;
}

/**
 * A small line chart of a cell's score over the last runs (up to 10) that
 * ran its domain, oldest first, the run shown marked. Filled in when the
 * runs' matrices arrive.
 * @param {string} runId
 * @param {string} domain
 * @param {string | number} level
 * @param {string} [label] the cell's name for people
 */
export function scoreChart(runId, domain, level, label = `${domain} level ${level}`) {
  const box = h('figure', { class: 'score-chart' }, h('figcaption', { class: 'muted' }, 'Score over the last runs: loading…'));
  (async () => {
    /** @type {HistoryPage} */
    const hist = await get('/api/history?limit=50&offset=0');
    const candidates = (hist.runs || []).filter((r) => !r.domains || !r.domains.length || r.domains.includes(domain)).slice(0, 10);
    const matrices = await Promise.all(candidates.map((r) => /** @type {Promise<LiveMatrix>} */ (get(`/api/run/${seg(r.run_id)}/matrix`)).catch(() => null)));
    const points = candidates.map((r, i) => {
      const m = matrices[i];
      const c = m && m.domains[domain] && m.domains[domain][String(level)];
      return c && c.score !== null && c.score !== undefined ? { run: r, score: c.score } : null;
    }).filter(/** @returns {p is {run: import('../../../types/api').RunInfo, score: number}} */ (p) => p !== null)
      .sort((a, b) => a.run.started_at.localeCompare(b.run.started_at));
    if (!points.length) { fill(box, h('figcaption', { class: 'muted' }, 'Score over the last runs: no scored run of this cell.')); return; }
    const W = 240; const H = 64; const pad = 6;
    const x = (/** @type {number} */ i) => (points.length === 1 ? W / 2 : pad + (i * (W - 2 * pad)) / (points.length - 1));
    const y = (/** @type {number} */ s) => H - pad - s * (H - 2 * pad);
    const id = `score-chart-${++chartIds}`;
    const words = points.map((p) => `${p.run.model_name} ${fmtScore(p.score)}`).join(', ');
    const title = `Score of ${label} over the last ${points.length} run${points.length === 1 ? '' : 's'}, oldest first: ${words}`;
    const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', 'aria-labelledby': id, class: 'spark' },
      svg('title', { id }, title),
      svg('line', { x1: 0, x2: W, y1: y(0.5), y2: y(0.5), class: 'mid' }),
      svg('polyline', { points: points.map((p, i) => `${x(i)},${y(p.score)}`).join(' '), fill: 'none', class: 'trend' }),
      ...points.map((p, i) => svg('circle', { cx: x(i), cy: y(p.score), r: p.run.run_id === runId ? 4 : 2.5,
        class: p.run.run_id === runId ? 'pt current' : 'pt' },
      svg('title', {}, `${p.run.model_name} · ${fmtTime(p.run.started_at)}: ${fmtScore(p.score)}`))));
    fill(box, chart, h('figcaption', { class: 'muted' }, `Score over the last ${points.length} run${points.length === 1 ? '' : 's'} (this run larger)`));
  })().catch((err) => fill(box, h('figcaption', { class: 'muted' }, `Score over the last runs: ${errorText(err)}`)));
  return box;
}
