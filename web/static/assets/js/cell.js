// @ts-check
/** @import { Cell, CellTests, LiveMatrix, ResultPage, TestAggregate, TestResult } from '../../../types/api' */

// Drill-down: the results of one cell of a run, in a modal dialog: the
// cell's score over the last runs, and its results in the explorer, worst
// first. When the run asked each test several times (repeats), a table
// gives each test's pass rate, pass@k and pass^k. When the cell's results
// measured an agent's retrieval (tests that list expected sources), a
// table gives each test's expected and retrieved files.

import { get, seg } from './api.js';
import { h, fmtScore, errorText, fill } from './ui.js';
import { resultsExplorer, scoreChart } from './explorer.js';
import { recallOf } from './matrix.js';

/** @type {HTMLElement | null} */
let opener = null;
// Counts the cells opened: an answer for a cell opened before the current
// one is dropped, so that a slow answer never shows one cell's tests under
// another's title.
let opened = 0;

function dialog() {
  const dlg = /** @type {HTMLDialogElement} */ (document.getElementById('cell-dialog'));
  if (!dlg.dataset.wired) {
    dlg.dataset.wired = '1';
    /** @type {HTMLElement} */ (dlg.querySelector('[data-close]')).addEventListener('click', () => dlg.close());
    dlg.addEventListener('close', () => {
      // The matrix may have been drawn again while the dialog was open
      // (it follows the run's status): the opener is then the new node
      // of the same cell.
      let target = opener;
      if (target && !target.isConnected && target.dataset.domain !== undefined) {
        const { domain, level } = target.dataset;
        target = null;
        for (const c of document.querySelectorAll('.cell[data-domain]')) {
          if (c instanceof HTMLElement && c.dataset.domain === domain && c.dataset.level === level) target = c;
        }
      }
      if (target && target.isConnected) target.focus();
    });
    // A click on the backdrop closes it too.
    dlg.addEventListener('click', (e) => { if (e.target === dlg) dlg.close(); });
  }
  return dlg;
}

/**
 * Opens the tests of run runId, cell domain/level.
 * @param {string} runId
 * @param {string} domain
 * @param {string | number} level
 * @param {{domainName?: string}} [opts]
 */
export async function openCell(runId, domain, level, { domainName } = {}) {
  const mine = ++opened;
  opener = /** @type {HTMLElement | null} */ (document.activeElement);
  const dlg = dialog();
  const body = /** @type {HTMLElement} */ (dlg.querySelector('#cell-body'));
  /** @type {HTMLElement} */ (dlg.querySelector('#cell-title')).textContent = `${domainName || domain} · level ${level}`;
  fill(body, h('p', { class: 'muted' }, 'Loading tests…'));
  if (!dlg.open) dlg.showModal();
  /** @type {HTMLElement} */ (dlg.querySelector('[data-close]')).focus();
  try {
    // The run's matrix says whether it is live (its results then refresh).
    /** @type {LiveMatrix} */
    const m = await get(`/api/run/${seg(runId)}/matrix`);
    const current = () => mine === opened && dlg.open;
    const cell = ((m.domains || {})[domain] || {})[String(level)];
    if (mine === opened) fill(body, ...renderCell(runId, domain, level, `${domainName || domain} level ${level}`, m.status === 'running', current, cell));
  } catch (err) {
    if (mine === opened) fill(body, h('p', { class: 'error', role: 'alert' }, `Could not load the tests: ${errorText(err)}`));
  }
}

/**
 * The cell: the chart of its score over the last runs, then its results
 * in the explorer. When the run asked each test several times, the table
 * of each test over its repeats comes first; when its results measured
 * retrieval, the table of each test's expected and retrieved files.
 * @param {string} runId
 * @param {string} domain
 * @param {string | number} level
 * @param {string} label
 * @param {boolean} live
 * @param {() => boolean} current
 * @param {Cell | undefined} state the cell's figures in the run's matrix
 */
function renderCell(runId, domain, level, label, live, current, state) {
  const head = h('p', { class: 'cell-summary' }, 'Run ', h('code', null, runId));
  const repeats = h('div', { class: 'cell-repeats' });
  let asked = false;
  const explorer = resultsExplorer({ runId, domain, level, live,
    onPage: (page) => {
      if (asked || !(page.results || []).some((r) => r.repeat > 0)) return;
      asked = true;
      /** @type {Promise<CellTests>} */ (get(`/api/run/${seg(runId)}/tests/${seg(domain)}/${seg(level)}`)).then((cell) => {
        if (current()) { head.remove(); fill(repeats, ...renderRepeats(cell, runId)); }
      }).catch((err) => { if (current()) fill(repeats, h('p', { class: 'error', role: 'alert' }, `Could not load the repeats: ${errorText(err)}`)); });
    } });
  return [head, scoreChart(runId, domain, level, label), repeats, retrievalSection(runId, domain, level, state, current), explorer];
}

/** Results read for the retrieval table: the cell's first ones. */
const RETRIEVAL_ROWS = 500;

/**
 * The section of a cell's retrieval: its figures, then each result that
 * measured retrieval (read from the results API); nothing when the cell
 * has no figures.
 * @param {string} runId
 * @param {string} domain
 * @param {string | number} level
 * @param {Cell | undefined} cell
 * @param {() => boolean} current
 */
function retrievalSection(runId, domain, level, cell, current) {
  const rec = cell ? recallOf(cell) : null;
  if (!cell || !cell.retrieval || !rec) return null;
  const r = cell.retrieval;
  const list = h('div', null, h('p', { class: 'muted' }, 'Loading the retrieval of each test…'));
  const section = h('section', { class: 'cell-retrieval', 'aria-labelledby': 'cell-retrieval-title' },
    h('h3', { id: 'cell-retrieval-title' }, 'Retrieval'),
    h('p', { class: 'cell-summary', title: rec.text },
      `Recall@5 ${r.recall_at_k.toFixed(2)} · hit rate ${fmtScore(r.hit_rate)} · over ${r.tests} test${r.tests === 1 ? '' : 's'} `,
      h('span', { class: 'muted' }, '(scored results only; a result in error is listed but not counted)')),
    list);
  const q = new URLSearchParams({ domain, level: String(level), limit: String(RETRIEVAL_ROWS) });
  /** @type {Promise<ResultPage>} */ (get(`/api/run/${seg(runId)}/results?${q}`)).then((page) => {
    if (!current()) return;
    const rows = (page.results || []).filter((x) => x.details && x.details.retrieval);
    fill(list, retrievalTable(rows), page.next_cursor ? h('p', { class: 'muted' }, `The first ${RETRIEVAL_ROWS} results of the cell.`) : null);
  }).catch((err) => { if (current()) fill(list, h('p', { class: 'error', role: 'alert' }, `Could not load the retrieval: ${errorText(err)}`)); });
  return section;
}

/**
 * Files as a list; with found, each marked found (✓) or not (✗).
 * @param {string[]} files
 * @param {Set<string>} [found]
 */
function fileList(files, found) {
  if (!files.length) return h('span', { class: 'muted' }, 'none');
  return h('ul', { class: 'files' }, files.map((f) => {
    if (!found) return h('li', null, h('code', null, f));
    const ok = found.has(f);
    return h('li', { class: ok ? 'found' : 'missing' }, h('span', { 'aria-hidden': 'true' }, ok ? '✓ ' : '✗ '),
      h('code', null, f), h('span', { class: 'visually-hidden' }, ok ? ' (retrieved)' : ' (not retrieved)'));
  }));
}

/**
 * Each result's details.retrieval: the expected files (marked found or
 * not), the files retrieved, recall@k and hit.
 * @param {TestResult[]} rows
 */
function retrievalTable(rows) {
  if (!rows.length) return h('p', { class: 'muted' }, 'No result of these measured retrieval yet.');
  const th = (/** @type {string} */ text, /** @type {string} */ title) => h('th', { scope: 'col', title }, text);
  return h('div', { class: 'table-wrap' }, h('table', { class: 'list retrieval' },
    h('caption', { class: 'visually-hidden' }, "Each test's expected and retrieved knowledge-base files"),
    h('thead', null, h('tr', null,
      th('Test', 'The test (and its repeat)'),
      th('Expected files', "The test's expected.sources, each marked retrieved or not"),
      th('Retrieved', 'The distinct files of the best k chunks retrieved, best first'),
      th('Recall@k', 'The share of the expected files retrieved'),
      th('Hit', 'At least one expected file retrieved'))),
    h('tbody', null, rows.map((x) => {
      const r = /** @type {import('../../../types/api').ResultRetrieval} */ (x.details && x.details.retrieval);
      const got = new Set(r.retrieved || []);
      return h('tr', { dataset: { test: x.test_id, repeat: String(x.repeat) }, class: x.status === 'error' ? 'is-error' : null },
        h('th', { scope: 'row' }, x.name || x.test_id, x.name ? h('code', { class: 'test-id' }, x.test_id) : null,
          x.repeat > 0 ? h('span', { class: 'muted' }, ` #${x.repeat}`) : null,
          x.status === 'error' ? h('span', { class: 'muted' }, ' · error, not counted') : null),
        h('td', { class: 'expected-files' }, fileList(r.expected || [], got)),
        h('td', { class: 'retrieved-files' }, fileList(r.retrieved || []),
          r.fallback ? h('span', { class: 'muted' }, ` (BM25 only: ${r.fallback})`) : null),
        h('td', { class: 'num recall' }, `${r.recall_at_k.toFixed(2)}`, h('span', { class: 'muted' }, ` @${r.k}`)),
        h('td', { class: 'hit' }, yesNo(r.hit)));
    }))));
}

/**
 * Orders aggregates worst first: never scored, then not passing every
 * repeat, then passing every repeat; by pass rate, then by id.
 * @param {TestAggregate} a
 * @param {TestAggregate} b
 */
function worstFirst(a, b) {
  /** @param {TestAggregate} x */
  const rank = (x) => (x.k === 0 ? 0 : x.pass_all_k ? 2 : 1);
  return rank(a) - rank(b) || (a.pass_rate ?? 0) - (b.pass_rate ?? 0) || a.test_id.localeCompare(b.test_id);
}

/**
 * A yes/no figure of an aggregate, "—" when the test was never scored.
 * @param {boolean | null} v
 */
function yesNo(v) {
  if (v === null || v === undefined) return h('span', { class: 'muted' }, '—');
  return h('span', { class: v ? 'yes' : 'no' }, h('span', { 'aria-hidden': 'true' }, v ? '✓ ' : '✗ '), v ? 'yes' : 'no');
}

/**
 * How a test did over its repeats, in words.
 * @param {TestAggregate} a
 */
function aggregateText(a) {
  if (a.k === 0) return `every repeat in error (${a.errors})`;
  let s = `passed ${a.passed} of ${a.k}`;
  if (a.errors) s += `, ${a.errors} in error`;
  return s;
}

/**
 * The table of each test of a cell over its repeats, worst test first.
 * @param {CellTests} cell
 * @param {string} runId
 */
function renderRepeats(cell, runId) {
  const aggs = [...(cell.aggregates || [])].sort(worstFirst);
  const every = aggs.filter((a) => a.pass_all_k).length;
  const once = aggs.filter((a) => a.pass_at_k).length;
  const n = (cell.tests || []).length;
  const head = h('p', { class: 'cell-summary' }, `Run `, h('code', null, runId), ' · ',
    `${aggs.length} test${aggs.length === 1 ? '' : 's'}, ${n} results · `,
    `${every} passed every repeat, ${once} at least once`);
  const th = (/** @type {string} */ text, /** @type {string} */ title) => h('th', { scope: 'col', title }, text);
  const table = h('div', { class: 'table-wrap' }, h('table', { class: 'list aggregates' },
    h('caption', { class: 'visually-hidden' }, 'Each test over its repeats'),
    h('thead', null, h('tr', null,
      th('Test', 'The test'),
      th('Pass rate', 'Passed / k, the scored repeats (results in error are left out)'),
      th('pass@k', 'Passed at least once in its k scored repeats'),
      th('pass^k', 'Passed every one of its k scored repeats'),
      th('Passed', 'Repeats passed'), th('Failed', 'Repeats failed'), th('Errors', 'Repeats that ended in error'),
      th('Mean score', 'Mean score of the scored repeats'))),
    h('tbody', null, aggs.map((a) => h('tr', { dataset: { test: a.test_id }, title: aggregateText(a) },
      h('th', { scope: 'row' }, a.name || a.test_id, a.name ? h('code', { class: 'test-id' }, a.test_id) : null),
      h('td', { class: 'num pass-rate' }, a.pass_rate === null ? '—' : `${fmtScore(a.pass_rate)} (${a.passed}/${a.k})`),
      h('td', { class: 'pass-at-k' }, yesNo(a.pass_at_k)),
      h('td', { class: 'pass-all-k' }, yesNo(a.pass_all_k)),
      h('td', { class: 'num passed' }, String(a.passed)), h('td', { class: 'num failed' }, String(a.failed)),
      h('td', { class: 'num errors' }, String(a.errors)), h('td', { class: 'num mean-score' }, fmtScore(a.score)))))));
  return [head, table];
}
