// @ts-check
/** @import { CellTests, ResultDetails, TestResult, ToolCallRecord } from '../../../types/api' */
/** @import { Child } from '../../../types/dom' */

// Drill-down: the tests of one cell of a run, in a modal dialog, failed
// tests first.

import { get, seg } from './api.js';
import { h, STATUS, fmtScore, fmtDuration, fmtNumber, fmtTime, errorText, pre, dl, statusBadge, fill } from './ui.js';

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
  const head = h('p', { class: 'cell-summary' }, `Run `, h('code', null, runId), ' · ',
    tests.length ? `${tests.length} test${tests.length === 1 ? '' : 's'}: ${summary}` : 'no finished tests yet');
  return [head, h('div', { class: 'tests' }, tests.map(renderTest))];
}

/** @param {TestResult} t */
function renderTest(t) {
  /** @type {ResultDetails} */
  const d = t.details || {};
  const st = STATUS[t.status] || { sym: '?', label: t.status };
  const tokens = (t.prompt_tokens || 0) + (t.completion_tokens || 0);
  const summary = h('summary', null,
    h('span', { class: `badge st-${t.status}` }, h('span', { class: 'sym', 'aria-hidden': 'true' }, st.sym), ' ', st.label),
    h('span', { class: 'test-name' }, t.name || t.test_id, t.name ? h('code', { class: 'test-id' }, t.test_id) : null),
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
  parts.push(dl([
    ['Status', statusBadge(t.status)],
    ['Score', fmtScore(t.score)],
    ['Duration', fmtDuration(t.duration_ms)],
    ['Tokens', `${fmtNumber(t.prompt_tokens || 0)} prompt + ${fmtNumber(t.completion_tokens || 0)} completion`],
    ['Model label', t.model_name || '—'],
    ['Finished', fmtTime(t.created_at)],
  ]));
  return h('details', { class: `test st-${t.status}`, open: t.status !== 'passed', dataset: { test: t.test_id, status: t.status } },
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
