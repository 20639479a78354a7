// @ts-check
/** @import { CellTests, LiveMatrix, TestAggregate } from '../../../types/api' */

// Drill-down: the results of one cell of a run, in a modal dialog: the
// cell's score over the last runs, and its results in the explorer, worst
// first. When the run asked each test several times (repeats), a table
// gives each test's pass rate, pass@k and pass^k.

import { get, seg } from './api.js';
import { h, fmtScore, errorText, fill } from './ui.js';
import { resultsExplorer, scoreChart } from './explorer.js';

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
    dlg.addEventListener('close', () => { if (opener && opener.isConnected) opener.focus(); });
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
    if (mine === opened) fill(body, ...renderCell(runId, domain, level, `${domainName || domain} level ${level}`, m.status === 'running', current));
  } catch (err) {
    if (mine === opened) fill(body, h('p', { class: 'error', role: 'alert' }, `Could not load the tests: ${errorText(err)}`));
  }
}

/**
 * The cell: the chart of its score over the last runs, then its results
 * in the explorer. When the run asked each test several times, the table
 * of each test over its repeats comes first.
 * @param {string} runId
 * @param {string} domain
 * @param {string | number} level
 * @param {string} label
 * @param {boolean} live
 * @param {() => boolean} current
 */
function renderCell(runId, domain, level, label, live, current) {
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
  return [head, scoreChart(runId, domain, level, label), repeats, explorer];
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
