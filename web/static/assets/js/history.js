// @ts-check
/** @import { Cell, CompareFlip, Comparison, Domain, HistoryPage, LiveMatrix, RescoreResult, RunConfig, RunDetails, RunInfo } from '../../../types/api' */
/** @import { Child } from '../../../types/dom' */
/** @import { DomainNames, Route } from '../../../types/views' */

// History: past runs newest first (GET /api/history), one run's matrix
// (GET /api/run/{id}, /api/run/{id}/matrix), deletion (DELETE
// /api/history/{id}) and the side-by-side comparison of two runs (of more
// than two: compare.js).

import { get, post, del, seg, APIError } from './api.js';
import { h, statusBadge, runBadge, countsText, fmtScore, fmtDuration, fmtNumber, fmtTime, confirmDialog, toast, errorText, dl, STATUS, fill } from './ui.js';
import { MatrixView, levelsOf } from './matrix.js';
import { openCell } from './cell.js';
import { resultsExplorer } from './explorer.js';
import { showCompareN, fmtP, fmtPts, retrievalChange, MAX_RUNS } from './compare.js';

const PAGE = 25;
/** @type {HTMLElement} */
let section;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let pollTimer;
/** @type {DomainNames} */
let names = new Map();
// Which rendering of the section is current. Every show and hide moves it
// on; a rendering or a poll that was waiting on the server when that
// happened finds it moved after its await and stops there, so that a late
// answer neither draws over the view the user went to nor polls again.
let generation = 0;

/**
 * Whether the rendering that got this check is still the current one.
 * @typedef {() => boolean} Current
 */

/**
 * Starts a new rendering of the section: stops the poll of the previous
 * one and makes every check it holds false.
 * @returns {Current}
 */
function begin() {
  clearTimeout(pollTimer);
  const mine = ++generation;
  return () => mine === generation;
}

/** @param {HTMLElement} s */
export function mount(s) { section = s; }

export function hide() { begin(); }

/**
 * Renders the route: ['history'], ['run', id], ['compare', a, b] or
 * ['compare', a, b, c…] (the first run the baseline).
 * @param {Route} route
 */
export async function show(route) {
  const current = begin();
  await loadNames();
  if (!current()) return;
  if (route[0] === 'run' && route[1]) return showRun(route[1], current);
  if (route[0] === 'compare' && route.length > 3) return showCompareN(section, route.slice(1), names, current);
  if (route[0] === 'compare' && route[1] && route[2]) return showCompare(route[1], route[2], current);
  return showList(Number(new URLSearchParams(route.query || '').get('offset')) || 0, current);
}

async function loadNames() {
  try {
    /** @type {{domains: Domain[]}} */
    const { domains } = await get('/api/settings/domains');
    names = new Map((domains || []).map((d) => [d.id, { name: d.name, color: d.color }]));
  } catch { /* ids will do */ }
}

/** @param {string} title */
function loading(title) {
  fill(section, h('h1', null, title), h('p', { class: 'muted' }, 'Loading…'));
}

// ---- List ----

/**
 * @param {number} offset
 * @param {Current} current
 */
async function showList(offset, current) {
  loading('History');
  /** @type {HistoryPage} */
  let page;
  try {
    page = await get(`/api/history?limit=${PAGE}&offset=${offset}`);
  } catch (err) {
    if (!current()) return;
    fill(section, h('h1', null, 'History'), h('p', { class: 'error', role: 'alert' }, `Could not load the history: ${errorText(err)}`));
    return;
  }
  if (!current()) return;
  const runs = page.runs || [];
  /** @type {Set<string>} */
  const selected = new Set();
  const compareBtn = h('button', { type: 'button', class: 'primary', id: 'compare-button', disabled: true,
    onclick: () => { location.hash = compareHash(runs.filter((r) => selected.has(r.run_id))); } }, 'Compare selected (0)');
  const syncCompare = () => {
    compareBtn.disabled = selected.size < 2 || selected.size > MAX_RUNS;
    compareBtn.textContent = `Compare selected (${selected.size})`;
    compareBtn.title = selected.size > MAX_RUNS ? `At most ${MAX_RUNS} runs side by side` : '';
  };
  const rows = runs.map((r) => {
    const box = h('input', { type: 'checkbox', 'aria-label': `Select run ${r.model_name} ${r.run_id} for comparison`,
      onchange: () => {
        if (box.checked) selected.add(r.run_id); else selected.delete(r.run_id);
        syncCompare();
      } });
    return h('tr', { dataset: { run: r.run_id } },
      td('Compare', null, box),
      td('Label', null, h('a', { href: `#/run/${seg(r.run_id)}`, class: 'run-link' }, r.model_name || '(no label)'),
        h('div', { class: 'did' }, r.run_id)),
      td('Model', null, r.model || '—'),
      td('Started', null, h('time', { datetime: r.started_at }, fmtTime(r.started_at))),
      td('Status', null, runBadge(r)),
      td('Score', 'num', scoreOf(r)),
      td('Tests', 'num', testsOf(r)),
      td('Tokens', 'num', fmtNumber(r.total_tokens)),
      td('Duration', 'num', fmtDuration(r.total_duration_ms)),
      td('Actions', 'row-actions',
        h('a', { class: 'button small', href: `#/run/${seg(r.run_id)}` }, 'Open'),
        h('button', { type: 'button', class: 'small danger', dataset: { action: 'delete' },
          'aria-label': `Delete run ${r.model_name} ${r.run_id}`, onclick: () => deleteRun(r, () => { if (current()) showList(offset, current); }) }, 'Delete')));
  });
  const nav = h('div', { class: 'pager' },
    h('span', null, runs.length ? `Runs ${offset + 1}–${offset + runs.length} of ${page.total}` : ''),
    offset > 0 ? h('a', { class: 'button small', href: `#/history?offset=${Math.max(0, offset - PAGE)}` }, '← Newer') : null,
    offset + runs.length < page.total ? h('a', { class: 'button small', href: `#/history?offset=${offset + PAGE}` }, 'Older →') : null);
  fill(section,
    h('h1', null, 'History'),
    runs.length ? h('p', { class: 'hint' }, 'Newest first. Tick two or more runs to compare them side by side, the oldest as the baseline.') : null,
    runs.length ? h('div', { class: 'toolbar' }, compareBtn) : null,
    runs.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'list history responsive' },
      h('caption', { class: 'visually-hidden' }, 'Past runs, newest first'),
      h('thead', null, h('tr', null, ['Compare', 'Label', 'Model', 'Started', 'Status', 'Score', 'Tests', 'Tokens', 'Duration', 'Actions']
        .map((c) => h('th', { scope: 'col', class: ['Score', 'Tests', 'Tokens', 'Duration'].includes(c) ? 'num' : null }, c)))),
      h('tbody', null, rows))) : h('p', { class: 'empty' }, 'No runs yet. Start one from the ', h('a', { href: '#/live' }, 'live run'), ' page.'),
    nav);
}

/**
 * The address of the comparison of runs picked from the history (newest
 * first): oldest first, so that the earliest is the baseline.
 * @param {RunInfo[]} picked
 */
function compareHash(picked) {
  return `#/compare/${[...picked].reverse().map((r) => seg(r.run_id)).join('/')}`;
}

/**
 * A run's score, marked when it is not the whole story: a score over the
 * tests that finished of a stopped run, or over the tests that did not end
 * in error, never looks like a complete run's.
 * @param {RunInfo} r
 */
function scoreOf(r) {
  if (r.complete !== false || r.overall_score === null || r.overall_score === undefined) return fmtScore(r.overall_score);
  const why = r.done_tests < r.total_tests ? `over ${fmtNumber(r.done_tests)} of ${fmtNumber(r.total_tests)} tests` : `${fmtNumber(r.errors)} not scored`;
  return h('span', { class: 'score-incomplete' }, fmtScore(r.overall_score), h('span', { class: 'score-note' }, why));
}

/**
 * "12", or "4 of 12" for a run that did not finish, with its errors.
 * @param {RunInfo} r
 */
function testsOf(r) {
  if (typeof r.done_tests !== 'number') return fmtNumber(r.total_tests);
  const done = r.done_tests === r.total_tests ? fmtNumber(r.total_tests) : `${fmtNumber(r.done_tests)} of ${fmtNumber(r.total_tests)}`;
  return h('span', null, done, r.errors ? h('span', { class: 'score-note run-error' }, `⚠ ${fmtNumber(r.errors)} error${r.errors === 1 ? '' : 's'}`) : null);
}

/**
 * Whether a run can be resumed: it ended with tests left or in error, and it kept its definitions.
 * @param {RunInfo} info
 */
function resumable(info) {
  return info.status !== 'running' && info.complete === false && !!info.config &&
    (info.errors > 0 || info.done_tests < info.total_tests);
}

/**
 * @param {RunInfo} info
 * @param {HTMLButtonElement} button
 */
async function resumeRun(info, button) {
  button.disabled = true;
  try {
    await post(`/api/run/${seg(info.run_id)}/resume`);
    toast(`Run ${info.run_id} resumed.`, 'success');
    location.hash = '#/live';
  } catch (err) {
    toast(`Could not resume the run: ${errorText(err)}`, 'error');
    button.disabled = false;
  }
}

/**
 * Scores the run's stored responses again with today's evaluators, into a new run, and opens it.
 * @param {RunInfo} info
 * @param {HTMLButtonElement} button
 */
async function rescoreRun(info, button) {
  button.disabled = true;
  try {
    /** @type {RescoreResult} */
    const res = await post(`/api/run/${seg(info.run_id)}/rescore`);
    toast(`Run ${res.run_id} rescores run ${info.run_id}.`, 'success');
    location.hash = `#/run/${seg(res.run_id)}`;
  } catch (err) {
    toast(`Could not rescore the run: ${errorText(err)}`, 'error');
    button.disabled = false;
  }
}

/**
 * A cell of a responsive table: its content in one block, labelled for phones.
 * @param {string} label
 * @param {string | null} cls
 * @param {...Child} children
 */
function td(label, cls, ...children) {
  return h('td', { 'data-label': label, class: cls }, h('div', { class: 'td' }, ...children));
}

/**
 * @param {RunInfo} r
 * @param {() => void} after called once the run is deleted
 */
async function deleteRun(r, after) {
  const ok = await confirmDialog(`Delete run “${r.model_name}” (${r.run_id}) from ${fmtTime(r.started_at)}? Its results, level scores and log file are removed. This cannot be undone.`,
    { title: 'Delete this run?', confirm: 'Delete run' });
  if (!ok) return;
  try {
    await del(`/api/history/${seg(r.run_id)}`);
    toast(`Run ${r.run_id} deleted.`, 'success');
    after();
  } catch (err) {
    toast(`Could not delete the run: ${errorText(err)}`, 'error');
  }
}

// ---- One run ----

/**
 * @param {string} id
 * @param {Current} current
 */
async function showRun(id, current) {
  loading('Run');
  /** @type {RunDetails} */
  let run;
  /** @type {LiveMatrix} */
  let matrix;
  try {
    // The run's facts and counts, not its results: the explorer below
    // reads those a page at a time, whatever the run's size.
    [run, matrix] = await Promise.all([/** @type {Promise<RunDetails>} */ (get(`/api/run/${seg(id)}?results=false`)),
      /** @type {Promise<LiveMatrix>} */ (get(`/api/run/${seg(id)}/matrix`))]);
  } catch (err) {
    if (!current()) return;
    fill(section, h('p', null, h('a', { href: '#/history' }, '← History')), h('h1', null, 'Run'),
      h('p', { class: 'error', role: 'alert' }, err instanceof APIError && err.status === 404 ? `There is no run ${id}.` : `Could not load run ${id}: ${errorText(err)}`));
    return;
  }
  if (!current()) return;
  const info = run.run_info;
  const stats = run.stats || { status_counts: {} };
  const mv = new MatrixView({ caption: `Run ${info.model_name}: domain × level results`,
    onCell: (d, l) => openCell(id, d, l, { domainName: (names.get(d) || {}).name }) });
  mv.setNames(names);
  mv.update(matrix);
  const counts = Object.entries(stats.status_counts || {}).map(([s, n]) => `${n} ${s}`).join(', ') || '—';
  const others = h('select', { id: 'compare-with', 'aria-label': 'Another run to compare with' }, h('option', { value: '' }, 'Compare with…'));
  /** @type {Promise<HistoryPage>} */ (get('/api/history?limit=100&offset=0')).then((page) => {
    for (const r of page.runs || []) if (r.run_id !== id) others.append(h('option', { value: r.run_id }, `${r.model_name} · ${fmtTime(r.started_at)} · ${fmtScore(r.overall_score)}`));
  }).catch(() => {});
  others.addEventListener('change', () => { if (others.value) location.hash = `#/compare/${seg(others.value)}/${seg(id)}`; });
  fill(section,
    h('p', null, h('a', { href: '#/history' }, '← History')),
    h('h1', null, `Run “${info.model_name}”`),
    dl(/** @type {([string, Child] | null)[]} */ ([
      ['Run id', h('code', null, info.run_id)],
      ['Status', runBadge(info)],
      info.error ? ['Stopped because', h('span', { class: 'run-error', id: 'run-error' }, info.error)] : null,
      ['Model', info.model || '—'],
      ['Started', fmtTime(info.started_at)],
      ['Completed', fmtTime(info.completed_at)],
      ['Overall score', scoreOf(info)],
      ['Tests', typeof info.done_tests === 'number'
        ? h('span', { id: 'run-counts' }, `${fmtNumber(info.done_tests)} of ${fmtNumber(info.total_tests)} done: ${countsText(info)}`)
        : `${fmtNumber(info.total_tests)} (${counts})`],
      info.rescored_from ? ['Rescored from', h('a', { href: `#/run/${seg(info.rescored_from)}`, id: 'rescored-from' }, info.rescored_from)] : null,
      info.config && info.config.cache ? ['Cache hits', h('span', { id: 'cache-hits' }, fmtNumber(info.cache_hits || 0))] : null,
      ['Tokens', fmtNumber(info.total_tokens)],
      ['Duration', fmtDuration(info.total_duration_ms)],
      ...configFacts(info.config),
    ]).filter(Boolean), 'facts facts-grid'),
    h('div', { class: 'toolbar' }, others,
      resumable(info) ? h('button', { type: 'button', class: 'primary', id: 'resume-run',
        title: 'Run again, into this run and with its own definitions, every test without a result or that ended in error',
        onclick: (ev) => resumeRun(info, /** @type {HTMLButtonElement} */ (ev.currentTarget)) }, 'Resume run') : null,
      info.status !== 'running' ? h('button', { type: 'button', id: 'rescore-run',
        title: 'Score the stored responses again with today\'s evaluators and expected answers, into a new run (no model is asked, except a judge)',
        onclick: (ev) => rescoreRun(info, /** @type {HTMLButtonElement} */ (ev.currentTarget)) }, 'Rescore') : null,
      h('button', { type: 'button', class: 'danger', id: 'delete-run', onclick: () => deleteRun(info, () => { location.hash = '#/history'; }) }, 'Delete run')),
    h('section', { class: 'card' }, h('h2', null, 'Matrix'), h('p', { class: 'hint' }, 'Select a cell to see its tests.'), mv.el),
    h('section', { class: 'card', id: 'run-results' }, h('h2', null, 'Results'), resultsExplorer({ runId: id, live: info.status === 'running',
      domains: Object.keys(matrix.domains || {}).sort().map((d) => ({ id: d, name: (names.get(d) || {}).name || d })),
      levels: [...new Set(Object.values(matrix.domains || {}).flatMap((ls) => Object.keys(ls).map(Number)))].sort((a, b) => a - b) })));
  if (info.status === 'running') {
    const refresh = async () => {
      /** @type {LiveMatrix | null} */
      let m = null;
      try { m = await get(`/api/run/${seg(id)}/matrix`); } catch { /* retry */ }
      if (!current()) return;
      if (m) {
        mv.update(m);
        if (m.status !== 'running') return showRun(id, current);
      }
      pollTimer = setTimeout(refresh, 1500);
    };
    pollTimer = setTimeout(refresh, 1500);
  }
}

/**
 * What a run ran with; nothing for runs made before it was recorded.
 * @param {RunConfig | null} c
 * @returns {([string, Child] | null)[]}
 */
function configFacts(c) {
  if (!c) return [];
  const a = c.agent;
  return [
    c.agent_id ? ['Agent', h('span', { id: 'run-agent' }, h('a', { href: `#/agents/${seg(c.agent_id)}` }, a && a.name ? a.name : c.agent_id),
      a ? ` (${a.knowledge_base.length} knowledge-base ${a.knowledge_base.length === 1 ? 'file' : 'files'}: `
        + `${a.knowledge_base.map((d) => `${d.file} ${d.sha256.slice(0, 8)}`).join(', ') || 'none'}; `
        + `${a.tools.length} ${a.tools.length === 1 ? 'tool' : 'tools'})` : '')] : null,
    ['Endpoint', h('code', null, c.base_url || '—')],
    ['Request bounds', `${c.timeout_s} s timeout, ${c.retries} ${c.retries === 1 ? 'retry' : 'retries'}, ${c.concurrency} at once`],
    ['Definitions', h('code', { title: c.definitions_hash }, (c.definitions_hash || '').slice(0, 12) || '—')],
    ['Gauntlet', c.gauntlet_version || '—'],
  ];
}

// ---- Compare ----

/**
 * @param {string} idA
 * @param {string} idB
 * @param {Current} current
 */
async function showCompare(idA, idB, current) {
  loading('Compare runs');
  let runs;
  try {
    runs = await Promise.all([idA, idB].map(async (id) => {
      const [run, matrix] = await Promise.all([/** @type {Promise<RunDetails>} */ (get(`/api/run/${seg(id)}`)),
        /** @type {Promise<LiveMatrix>} */ (get(`/api/run/${seg(id)}/matrix`))]);
      return { id, info: run.run_info, results: run.test_results || [], matrix: matrix.domains || {} };
    }));
  } catch (err) {
    if (!current()) return;
    fill(section, h('p', null, h('a', { href: '#/history' }, '← History')), h('h1', null, 'Compare runs'),
      h('p', { class: 'error', role: 'alert' }, `Could not load the runs: ${errorText(err)}`));
    return;
  }
  if (!current()) return;
  // Before (the base) is the older run.
  runs.sort((x, y) => (x.info.started_at < y.info.started_at ? -1 : x.info.started_at > y.info.started_at ? 1 : 0));
  const [a, b] = runs;
  const title = (/** @type {typeof a} */ r) => `“${r.info.model_name}” (${fmtTime(r.info.started_at)})`;
  const head = [
    h('p', null, h('a', { href: '#/history' }, '← History')),
    h('h1', null, 'Compare runs'),
    h('div', { class: 'compare-head' },
      h('div', { class: 'card' }, h('h2', null, 'Before'), h('p', null, h('a', { href: `#/run/${seg(a.id)}` }, title(a))),
        dl([['Score', fmtScore(a.info.overall_score)], ['Model', a.info.model || '—'], ['Status', runBadge(a.info)]])),
      h('div', { class: 'card' }, h('h2', null, 'After'), h('p', null, h('a', { href: `#/run/${seg(b.id)}` }, title(b))),
        dl([['Score', fmtScore(b.info.overall_score)], ['Model', b.info.model || '—'], ['Status', runBadge(b.info)]]))),
  ];

  /** @type {Comparison} */
  let cmp;
  try {
    cmp = await get(`/api/compare?base=${encodeURIComponent(a.id)}&head=${encodeURIComponent(b.id)}`);
  } catch (err) {
    if (!current()) return;
    // 422: the runs share no scored test; the server says so in its own words.
    const nothing = err instanceof APIError && err.status === 422;
    fill(section, ...head, h('p', { class: nothing ? 'compare-nothing' : 'error', id: 'compare-nothing', role: 'alert' },
      nothing ? err.message : `Could not compare the runs: ${errorText(err)}`));
    return;
  }
  if (!current()) return;
  const cells = cmp.cells || {};

  const domains = [...new Set([...Object.keys(a.matrix), ...Object.keys(b.matrix), ...Object.keys(cells)])].sort();
  const levels = levelsOf(Object.fromEntries(domains.map((d) => [d, { ...(a.matrix[d] || {}), ...(b.matrix[d] || {}) }])));
  const cellText = (/** @type {Cell | undefined} */ c) => c ? `${STATUS[c.status] ? STATUS[c.status].sym : ''} ${fmtScore(c.score)}` : '—';
  const rows = domains.map((d) => h('tr', null,
    h('th', { scope: 'row' }, (names.get(d) || {}).name || d),
    levels.map((l) => {
      const ca = (a.matrix[d] || {})[l];
      const cb = (b.matrix[d] || {})[l];
      const c = (cells[d] || {})[String(l)];
      if (!c) {
        if (!ca && !cb) return h('td', { class: 'nocell' });
        // Nothing paired here: one run lacks the cell, or every test of it is in error on a side.
        const why = ca ? (cb ? 'no test to pair' : 'only before') : 'only after';
        return h('td', { class: 'delta delta-na', dataset: { domain: d, level: l, delta: '' } },
          h('span', { class: 'pair' }, h('span', null, cellText(ca)), h('span', { 'aria-hidden': 'true' }, ' → '),
            h('span', { class: 'visually-hidden' }, ' then '), h('span', null, cellText(cb))),
          h('span', { class: 'delta-text' }, why));
      }
      const pts = Math.round(c.delta * 100);
      const dir = pts > 0 ? 'up' : pts < 0 ? 'down' : 'same';
      const deltaText = pts > 0 ? `▲ +${pts} pts` : pts < 0 ? `▼ −${-pts} pts` : '= 0 pts';
      const sig = c.significant && pts !== 0 ? (pts < 0 ? 'worse' : 'better') : '';
      // An unchanged score needs no p-value; its interval still says how
      // large a change these few tests could have missed.
      const changed = c.delta !== 0;
      const verdict = sig ? `significantly ${sig}, ${fmtP(c.p_value)}`
        : changed ? `not significant, ${fmtP(c.p_value)}` : 'no change in score';
      const label = `${(names.get(d) || {}).name || d}, level ${l}: ${fmtScore(c.base_score)} → ${fmtScore(c.head_score)}, ${deltaText.replace(/^[▲▼=] /, '')}; ${verdict}; ${c.tests} paired test${c.tests === 1 ? '' : 's'}`;
      return h('td', { class: `delta delta-${dir}${sig ? ` delta-sig delta-sig-${sig}` : ''}`, title: label,
        dataset: { domain: d, level: l, delta: String(pts), significant: sig, p: String(c.p_value) } },
        h('span', { class: 'pair' }, h('span', null, fmtScore(c.base_score)), h('span', { 'aria-hidden': 'true' }, ' → '),
          h('span', { class: 'visually-hidden' }, ' then '), h('span', null, fmtScore(c.head_score))),
        h('span', { class: 'delta-text' }, deltaText),
        h('span', { class: 'delta-ci' }, `95 % CI ${fmtPts(c.ci95[0])} to ${fmtPts(c.ci95[1])} pts`),
        sig ? h('span', { class: `sig sig-${sig}`, title: verdict, 'aria-label': verdict },
          sig === 'worse' ? '⚠ Significant regression' : '★ Significant improvement') : null,
        h('span', { class: 'delta-p' }, changed ? (sig ? fmtP(c.p_value) : `not significant, ${fmtP(c.p_value)}`) : 'no change in score',
          ` · ${c.tests} test${c.tests === 1 ? '' : 's'}`),
        retrievalChange(c.retrieval));
    })));

  const key = (/** @type {{domain: string, level: number, test_id: string}} */ r) => `${r.domain}\u0000${r.level}\u0000${r.test_id}`;
  const inA = new Map(a.results.map((r) => [key(r), r]));
  const inB = new Map(b.results.map((r) => [key(r), r]));
  const flipped = cmp.flipped || [];
  const worse = flipped.filter((f) => f.base_status === 'passed');
  const better = flipped.filter((f) => f.base_status !== 'passed');
  const flipTable = (/** @type {CompareFlip[]} */ list, /** @type {string} */ kind) => list.length ? h('div', { class: 'table-wrap' }, h('table', { class: `list flips flips-${kind}` },
    h('thead', null, h('tr', null, ['Test', 'Cell', 'Before', 'After', ''].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, list.map((f) => {
      const o = inA.get(key(f));
      const r = inB.get(key(f));
      const name = (r && r.name) || (o && o.name) || '';
      return h('tr', { dataset: { test: f.test_id } },
        h('td', null, name || f.test_id, name ? h('div', { class: 'did' }, f.test_id) : null),
        h('td', null, `${(names.get(f.domain) || {}).name || f.domain} · L${f.level}`),
        h('td', null, statusBadge(f.base_status), o ? ` ${fmtScore(o.score)}` : ''),
        h('td', null, statusBadge(f.head_status), r ? ` ${fmtScore(r.score)}` : ''),
        h('td', null, h('button', { type: 'button', class: 'small', onclick: () => openCell(b.id, f.domain, f.level, { domainName: (names.get(f.domain) || {}).name }) }, 'Show after')));
    })))) :
    h('p', { class: 'muted' }, 'None.');
  let onlyBefore = 0;
  for (const k of inA.keys()) if (!inB.has(k)) onlyBefore++;
  let onlyAfter = 0;
  for (const k of inB.keys()) if (!inA.has(k)) onlyAfter++;

  const s = cmp.summary;
  const plural = (/** @type {number} */ n, /** @type {string} */ one, /** @type {string} */ many) => `${fmtNumber(n)} ${n === 1 ? one : many}`;
  const overall = a.info.overall_score !== null && b.info.overall_score !== null ? Math.round((b.info.overall_score - a.info.overall_score) * 100) : null;
  fill(section, ...head,
    h('p', { class: 'overall-delta', id: 'overall-delta' }, 'Overall: ', fmtScore(a.info.overall_score), ' → ', fmtScore(b.info.overall_score),
      overall === null ? '' : ` (${overall > 0 ? `▲ +${overall}` : overall < 0 ? `▼ −${-overall}` : '= 0'} points)`),
    h('p', { class: 'compare-summary', id: 'compare-summary' },
      `Paired tests: ${fmtNumber(s.improved)} improved, ${fmtNumber(s.regressed)} regressed, ${fmtNumber(s.unchanged)} unchanged. `,
      h('span', { class: s.significant_regressions ? 'sig sig-worse' : null },
        s.significant_regressions ? '⚠ ' : '', `${plural(s.significant_regressions, 'cell', 'cells')} significantly worse`),
      ', ',
      h('span', { class: s.significant_improvements ? 'sig sig-better' : null },
        s.significant_improvements ? '★ ' : '', `${plural(s.significant_improvements, 'cell', 'cells')} significantly better`),
      '.'),
    h('section', { class: 'card' }, h('h2', null, 'Per cell'),
      h('p', { class: 'hint' }, 'Each cell compares the tests both runs answered: the score before → after, the change in percentage points (▲ better, ▼ worse) with its 95 % interval, and the p-value. A change is significant when p is below 0.05 (⚠ significant regression, ★ significant improvement).'),
      h('div', { class: 'table-wrap' }, h('table', { class: 'matrix compare' },
        h('caption', { class: 'visually-hidden' }, 'Score changes per domain and level'),
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Domain'), levels.map((l) => h('th', { scope: 'col' }, `Level ${l}`)))),
        h('tbody', null, rows)))),
    h('section', { class: 'card' }, h('h2', null, h('span', { 'aria-hidden': 'true' }, '✗ '), `Now failing (${worse.length})`),
      h('p', { class: 'hint' }, 'Passed before, failed after.'), flipTable(worse, 'worse')),
    h('section', { class: 'card' }, h('h2', null, h('span', { 'aria-hidden': 'true' }, '✓ '), `Now passing (${better.length})`),
      h('p', { class: 'hint' }, 'Failed before, passed after.'), flipTable(better, 'better')),
    onlyBefore || onlyAfter ? h('p', { class: 'muted' }, `${onlyBefore} test(s) only in the earlier run, ${onlyAfter} only in the later one.`) : null);
}
