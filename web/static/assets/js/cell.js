// @ts-check
/** @import { CellTests, ResultDetails, TestAggregate, TestResult, ToolCallRecord } from '../../../types/api' */
/** @import { Child } from '../../../types/dom' */

// Drill-down: the tests of one cell of a run, in a modal dialog, failed
// tests first. When the run asked each test several times (repeats), a
// table gives each test's pass rate, pass@k and pass^k, and the results
// are grouped under their test.

import { get, seg } from './api.js';
import { h, STATUS, fmtScore, fmtDuration, fmtNumber, fmtTime, errorText, pre, dl, statusBadge, fill } from './ui.js';
import { renderTranscript } from './transcript.js';

/** @type {Record<string, number>} */
const RANK = { error: 0, failed: 1, passed: 2 };
const KNOWN_DETAILS = new Set(['extracted_answer', 'pass2_used', 'pass2_response', 'tool_calls', 'error', 'expected_type', 'reason']);

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
    /** @type {CellTests} */
    const cell = await get(`/api/run/${seg(runId)}/tests/${seg(domain)}/${seg(level)}`);
    if (mine === opened) fill(body, ...renderCell(cell, runId));
  } catch (err) {
    if (mine === opened) fill(body, h('p', { class: 'error', role: 'alert' }, `Could not load the tests: ${errorText(err)}`));
  }
}

/**
 * @param {CellTests} cell
 * @param {string} runId
 */
function renderCell(cell, runId) {
  const tests = [...(cell.tests || [])].sort((a, b) => (RANK[a.status] ?? 1) - (RANK[b.status] ?? 1));
  /** @type {Record<string, number>} */
  const counts = {};
  for (const t of tests) counts[t.status] = (counts[t.status] || 0) + 1;
  const summary = Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(', ');
  if (tests.some((t) => t.repeat > 0)) return renderRepeats(cell, runId, tests, summary);
  const head = h('p', { class: 'cell-summary' }, `Run `, h('code', null, runId), ' · ',
    tests.length ? `${tests.length} test${tests.length === 1 ? '' : 's'}: ${summary}` : 'no finished tests yet');
  return [head, h('div', { class: 'tests' }, tests.map((t) => renderTest(t)))];
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
 * A cell of a run with repeats: the aggregates table, then each test's
 * results under it, worst test first.
 * @param {CellTests} cell
 * @param {string} runId
 * @param {TestResult[]} tests
 * @param {string} summary
 */
function renderRepeats(cell, runId, tests, summary) {
  const aggs = [...(cell.aggregates || [])].sort(worstFirst);
  const every = aggs.filter((a) => a.pass_all_k).length;
  const once = aggs.filter((a) => a.pass_at_k).length;
  const head = h('p', { class: 'cell-summary' }, `Run `, h('code', null, runId), ' · ',
    `${aggs.length} test${aggs.length === 1 ? '' : 's'}, ${tests.length} results: ${summary} · `,
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
    h('tbody', null, aggs.map((a) => h('tr', { dataset: { test: a.test_id } },
      h('th', { scope: 'row' }, a.name || a.test_id, a.name ? h('code', { class: 'test-id' }, a.test_id) : null),
      h('td', { class: 'num pass-rate' }, a.pass_rate === null ? '—' : `${fmtScore(a.pass_rate)} (${a.passed}/${a.k})`),
      h('td', { class: 'pass-at-k' }, yesNo(a.pass_at_k)),
      h('td', { class: 'pass-all-k' }, yesNo(a.pass_all_k)),
      h('td', { class: 'num passed' }, String(a.passed)), h('td', { class: 'num failed' }, String(a.failed)),
      h('td', { class: 'num errors' }, String(a.errors)), h('td', { class: 'num mean-score' }, fmtScore(a.score)))))));
  /** @type {Map<string, TestResult[]>} */
  const byTest = new Map();
  for (const t of tests) {
    const list = byTest.get(t.test_id) || [];
    list.push(t);
    byTest.set(t.test_id, list);
  }
  const groups = aggs.map((a) => h('section', { class: 'test-group', dataset: { test: a.test_id } },
    h('h3', null, a.name || a.test_id, a.name ? h('code', { class: 'test-id' }, a.test_id) : null,
      h('span', { class: 'group-meta' }, aggregateText(a))),
    (byTest.get(a.test_id) || []).sort((x, y) => x.repeat - y.repeat).map((t) => renderTest(t, true))));
  return [head, table, h('div', { class: 'tests' }, groups)];
}

/**
 * @param {TestResult} t
 * @param {boolean} [repeated] label the result with its repeat
 */
function renderTest(t, repeated = false) {
  /** @type {ResultDetails} */
  const d = t.details || {};
  const st = STATUS[t.status] || { sym: '?', label: t.status };
  const tokens = (t.prompt_tokens || 0) + (t.completion_tokens || 0);
  const summary = h('summary', null,
    h('span', { class: `badge st-${t.status}` }, h('span', { class: 'sym', 'aria-hidden': 'true' }, st.sym), ' ', st.label),
    repeated ? h('span', { class: 'test-repeat' }, `repeat #${t.repeat}`)
      : h('span', { class: 'test-name' }, t.name || t.test_id, t.name ? h('code', { class: 'test-id' }, t.test_id) : null),
    h('span', { class: 'test-meta' }, `score ${fmtScore(t.score)} · ${fmtDuration(t.duration_ms)} · ${fmtNumber(tokens)} tokens`));
  const expected = t.expected || {};
  const extracted = d.extracted_answer;
  const compare = h('div', { class: 'compare-answers' },
    h('div', { class: 'answer' }, h('h4', null, `Expected${expected.type ? ` (${expected.type})` : ''}`), pre(expected.answer ?? '')),
    h('div', { class: 'answer' }, h('h4', null, 'Extracted'),
      extracted === undefined || extracted === null || extracted === '' ? h('p', { class: 'muted' }, 'nothing extracted') : pre(String(extracted))));
  /** @type {Child[]} */
  const parts = [
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
  parts.push(dl([
    ['Status', statusBadge(t.status)],
    ['Score', fmtScore(t.score)],
    ['Duration', fmtDuration(t.duration_ms)],
    ['Tokens', `${fmtNumber(t.prompt_tokens || 0)} prompt + ${fmtNumber(t.completion_tokens || 0)} completion`],
    ['Model label', t.model_name || '—'],
    ['Finished', fmtTime(t.created_at)],
  ]));
  return h('details', { class: `test st-${t.status}`, open: t.status !== 'passed', dataset: { test: t.test_id, status: t.status, repeat: String(t.repeat) } },
    summary, h('div', { class: 'test-body' }, parts));
}

/** @param {unknown} v */
function asText(v) {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') {
    try { return JSON.stringify(JSON.parse(v), null, 2); } catch { return v; }
  }
  return JSON.stringify(v, null, 2);
}
