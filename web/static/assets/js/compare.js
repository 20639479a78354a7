// @ts-check
/** @import { Cell, CellTests, CompareCell, CompareRetrieval, Comparison, LiveMatrix, Matrix, RunDetails, RunInfo, TestResult } from '../../../types/api' */
/** @import { Child } from '../../../types/dom' */
/** @import { DomainNames } from '../../../types/views' */

// Several runs side by side (#/compare/<id1>/<id2>/<id3>…): one column per
// run, the first the baseline. Each cell shows every run's score with its
// 95 % interval and, for the other runs, the change against the baseline
// with its significance, from GET /api/compare of the baseline and that
// run. Picking a cell lists its tests below: each run's response beside
// the others, the words that differ from the baseline's highlighted.

import { get, seg, APIError } from './api.js';
import { h, fill, fmtScore, fmtTime, fmtNumber, runBadge, statusBadge, errorText } from './ui.js';
import { levelsOf, recallOf, RECALL_K } from './matrix.js';

/** The most runs the view shows side by side. */
export const MAX_RUNS = 20;

/**
 * A p-value as people read it: two decimals, three under 0.01, and
 * "< 0.001" below that.
 * @param {number} p
 */
export function fmtP(p) {
  if (p < 0.001) return 'p < 0.001';
  return `p = ${p < 0.01 ? p.toFixed(3) : p.toFixed(2)}`;
}

/**
 * A change in percentage points with its sign: "+12", "−50", "0".
 * @param {number} d a change of a 0–1 score
 */
export function fmtPts(d) {
  const n = Math.round(d * 100);
  return n > 0 ? `+${n}` : n < 0 ? `−${-n}` : '0';
}

/**
 * How an agent's retrieval changed in a compared cell: a line for the
 * cell ("R@5 0.25 → 1.00 ▲ +75 pts") and its full reading, or null when
 * the cell's paired tests measured no retrieval.
 * @param {CompareRetrieval | undefined} r
 * @returns {HTMLSpanElement | null}
 */
export function retrievalChange(r) {
  if (!r || !r.tests) return null;
  const pts = Math.round(r.delta * 100);
  const dir = pts > 0 ? 'up' : pts < 0 ? 'down' : 'same';
  const text = `retrieval over ${r.tests} paired test${r.tests === 1 ? '' : 's'} naming expected sources: mean recall@${RECALL_K} ` +
    `${r.base_recall_at_k.toFixed(2)} → ${r.head_recall_at_k.toFixed(2)}, hit rate ${fmtScore(r.base_hit_rate)} → ${fmtScore(r.head_hit_rate)}`;
  return h('span', { class: `delta-retrieval delta-retrieval-${dir}`, title: text, 'aria-label': text, dataset: { retrievalDelta: String(pts) } },
    `R@${RECALL_K} ${r.base_recall_at_k.toFixed(2)} → ${r.head_recall_at_k.toFixed(2)} `,
    pts > 0 ? `▲ +${pts} pts` : pts < 0 ? `▼ −${-pts} pts` : '= 0 pts');
}

// ---- Word-level differences ----

/** Above this many word pairs, the changed middle of two texts is shown as replaced whole. */
const MAX_DIFF_CELLS = 1_000_000;

/**
 * Splits text into words, each with the whitespace after it (and any
 * leading whitespace alone).
 * @param {string} text
 */
function words(text) {
  return text.match(/\s+|\S+\s*/g) || [];
}

/**
 * The word-level differences of text against base, in reading order:
 * pieces ['=', s] (in both), ['+', s] (only in text) and ['-', s] (only in
 * base). Words are compared without the whitespace around them; the
 * pieces keep it. Adjacent pieces of one kind are merged.
 * @param {string} base
 * @param {string} text
 * @returns {['=' | '+' | '-', string][]}
 */
export function wordDiff(base, text) {
  const a = words(base);
  const b = words(text);
  const ka = a.map((w) => w.trim());
  const kb = b.map((w) => w.trim());
  let pre = 0;
  while (pre < a.length && pre < b.length && ka[pre] === kb[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && ka[a.length - 1 - suf] === kb[b.length - 1 - suf]) suf++;
  /** @type {['=' | '+' | '-', string][]} */
  const out = [];
  const push = (/** @type {'=' | '+' | '-'} */ kind, /** @type {string} */ s) => {
    const last = out[out.length - 1];
    if (last && last[0] === kind) last[1] += s; else out.push([kind, s]);
  };
  for (let i = 0; i < pre; i++) push('=', b[i]);
  const n = a.length - pre - suf;
  const m = b.length - pre - suf;
  if (n * m > MAX_DIFF_CELLS) {
    for (let i = 0; i < n; i++) push('-', a[pre + i]);
    for (let j = 0; j < m; j++) push('+', b[pre + j]);
  } else {
    // Longest common subsequence of the middles, from the end, so that the
    // walk below goes forwards.
    const w = m + 1;
    const lcs = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * w + j] = ka[pre + i] === kb[pre + j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && ka[pre + i] === kb[pre + j]) { push('=', b[pre + j]); i++; j++; }
      else if (j < m && (i === n || lcs[i * w + j + 1] >= lcs[(i + 1) * w + j])) { push('+', b[pre + j]); j++; }
      else { push('-', a[pre + i]); i++; }
    }
  }
  for (let i = b.length - suf; i < b.length; i++) push('=', b[i]);
  return out;
}

/** Responses longer than this many characters (or lines) start folded. */
const FOLD_CHARS = 600;
const FOLD_LINES = 10;

/**
 * A response in a box that wraps, folded with a button when long. With
 * base, the words that differ from it are marked: added ones highlighted,
 * missing ones struck through.
 * @param {string} text
 * @param {string | null} base
 */
function responseBox(text, base) {
  /** @type {Child[]} */
  let content = [text];
  let changed = 0;
  if (base !== null && text !== base) {
    content = wordDiff(base, text).map(([kind, s]) => {
      if (kind === '=') return s;
      changed += s.trim() ? s.trim().split(/\s+/).length : 0;
      return kind === '+' ? h('mark', { class: 'diff-ins', title: 'not in the baseline response' }, s)
        : h('del', { class: 'diff-del', title: 'in the baseline response only' }, s);
    });
  }
  const body = h('div', { class: 'resp-text' }, content);
  const long = text.length > FOLD_CHARS || text.split('\n').length > FOLD_LINES;
  /** @type {Child} */
  let note = null;
  if (base !== null) {
    note = text === base ? h('p', { class: 'resp-note muted' }, 'same as the baseline')
      : h('p', { class: 'resp-note' }, `${fmtNumber(changed)} word${changed === 1 ? '' : 's'} differ from the baseline`);
  }
  const box = h('div', { class: ['resp', long ? 'resp-folded' : null], dataset: { changed: String(changed) } }, body, note);
  if (long) {
    const toggle = h('button', { type: 'button', class: 'small link-button resp-toggle', 'aria-expanded': 'false',
      onclick: () => {
        const folded = box.classList.toggle('resp-folded');
        toggle.textContent = folded ? 'Show all' : 'Show less';
        toggle.setAttribute('aria-expanded', String(!folded));
      } }, 'Show all');
    box.append(toggle);
  }
  return box;
}

// ---- The view ----

/**
 * @typedef {{id: string, info: RunInfo, matrix: Matrix}} LoadedRun
 * @typedef {{cmp: Comparison | null, error: string | null}} Pairwise
 */

/**
 * Renders the comparison of runs ids (the first the baseline) into section.
 * @param {HTMLElement} section
 * @param {string[]} ids
 * @param {DomainNames} names
 * @param {() => boolean} current false once the user went elsewhere
 */
export async function showCompareN(section, ids, names, current) {
  const back = h('p', null, h('a', { href: '#/history' }, '← History'));
  const title = h('h1', null, `Compare ${ids.length} runs`);
  fill(section, back, title, h('p', { class: 'muted' }, 'Loading…'));
  if (ids.length > MAX_RUNS) {
    fill(section, back, title, h('p', { class: 'error', role: 'alert' }, `At most ${MAX_RUNS} runs can be compared side by side; this address names ${ids.length}.`));
    return;
  }
  /** @type {LoadedRun[]} */
  let runs;
  try {
    runs = await Promise.all(ids.map(async (id) => {
      const [run, matrix] = await Promise.all([/** @type {Promise<RunDetails>} */ (get(`/api/run/${seg(id)}`)),
        /** @type {Promise<LiveMatrix>} */ (get(`/api/run/${seg(id)}/matrix`))]);
      return { id, info: run.run_info, matrix: matrix.domains || {} };
    }));
  } catch (err) {
    if (!current()) return;
    fill(section, back, title, h('p', { class: 'error', role: 'alert' },
      err instanceof APIError && err.status === 404 ? `Could not load the runs: ${err.message}` : `Could not load the runs: ${errorText(err)}`));
    return;
  }
  if (!current()) return;
  const base = runs[0];
  /** @type {Pairwise[]} */
  const pairs = await Promise.all(runs.slice(1).map(async (r) => {
    try {
      /** @type {Comparison} */
      const cmp = await get(`/api/compare?base=${encodeURIComponent(base.id)}&head=${encodeURIComponent(r.id)}`);
      return { cmp, error: null };
    } catch (err) {
      // 422: the runs share no scored test; the server says so in its own words.
      return { cmp: null, error: err instanceof APIError && err.status === 422 ? err.message : `Could not compare: ${errorText(err)}` };
    }
  }));
  if (!current()) return;

  const nameOf = (/** @type {string} */ d) => (names.get(d) || {}).name || d;
  const all = /** @type {Matrix} */ ({});
  for (const r of runs) for (const [d, levels] of Object.entries(r.matrix)) all[d] = { ...(all[d] || {}), ...levels };
  const domains = Object.keys(all).sort();
  const levels = levelsOf(all);
  const tests = h('section', { class: 'card ncompare-tests', id: 'ncompare-tests', hidden: true });

  const headCells = runs.map((r, i) => {
    const pair = i > 0 ? pairs[i - 1] : null;
    const s = pair && pair.cmp ? pair.cmp.summary : null;
    return h('th', { scope: 'col', class: 'ncompare-run', dataset: { run: r.id } },
      h('span', { class: 'ncompare-role' }, i === 0 ? 'Baseline' : `Run ${i + 1}`),
      h('a', { href: `#/run/${seg(r.id)}`, class: 'run-link' }, r.info.model_name || r.id),
      h('span', { class: 'did' }, r.info.model || '—'),
      h('span', { class: 'did' }, fmtTime(r.info.started_at)),
      runBadge(r.info),
      h('span', { class: 'ncompare-overall' }, `Overall ${fmtScore(r.info.overall_score)}`),
      s ? h('span', { class: 'ncompare-vs' },
        s.significant_improvements ? h('span', { class: 'sig sig-better' }, `★ ${s.significant_improvements}`) : null,
        s.significant_regressions ? h('span', { class: 'sig sig-worse' }, `⚠ ${s.significant_regressions}`) : null,
        ` ${fmtNumber(s.improved)} better, ${fmtNumber(s.regressed)} worse than the baseline`) : null,
      pair && pair.error ? h('span', { class: 'ncompare-error' }, pair.error) : null);
  });

  const rows = [];
  for (const d of domains) {
    for (const l of levels) {
      if (!runs.some((r) => (r.matrix[d] || {})[l])) continue;
      /** @type {HTMLButtonElement} */
      const open = h('button', { type: 'button', class: 'small ncompare-open', dataset: { domain: d, level: l },
        'aria-label': `Tests of ${nameOf(d)}, level ${l}, side by side`,
        onclick: () => { showTests(tests, runs, d, l, nameOf(d), open, current); } }, 'Tests');
      rows.push(h('tr', { dataset: { domain: d, level: l } },
        h('th', { scope: 'row' }, h('span', null, `${nameOf(d)} · L${l}`), ' ', open),
        runs.map((r, i) => cellOf(r, i, i > 0 ? pairs[i - 1] : null, d, l, nameOf(d)))));
    }
  }

  fill(section, back, title,
    h('p', { class: 'hint' }, 'One column per run; the first is the baseline. Each cell shows the run\u2019s score with its 95 % interval; ',
      'for the other runs, the change against the baseline over the tests both answered (▲ better, ▼ worse, in percentage points) and its p-value. ',
      'A change is significant when p is below 0.05: ★ significant improvement, ⚠ significant regression. ',
      'Many cells compared at once show some significant changes by chance alone. Pick Tests to see a cell\u2019s responses side by side.'),
    h('section', { class: 'card' }, h('div', { class: 'table-wrap' }, h('table', { class: 'matrix ncompare', id: 'ncompare-table' },
      h('caption', { class: 'visually-hidden' }, `Scores of ${runs.length} runs per domain and level, against the first`),
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Cell'), headCells)),
      h('tbody', null, rows)))),
    tests);
}

/**
 * One run's cell: its score and interval and, after the baseline, the
 * change against it.
 * @param {LoadedRun} r
 * @param {number} i the run's column, 0 for the baseline
 * @param {Pairwise | null} pair
 * @param {string} d
 * @param {string} l
 * @param {string} domainName
 */
function cellOf(r, i, pair, d, l, domainName) {
  /** @type {Cell | undefined} */
  const c = (r.matrix[d] || {})[l];
  const recall = c ? recallOf(c) : null;
  /** @type {Child[]} */
  const parts = [
    h('span', { class: 'ncell-score' }, c ? fmtScore(c.score) : '—'),
    c && c.ci95 ? h('span', { class: 'delta-ci' }, `95 % CI ${fmtScore(c.ci95[0])}–${fmtScore(c.ci95[1])}`) : null,
    recall ? h('span', { class: 'ncell-recall', title: recall.text }, recall.short) : null,
  ];
  /** @type {Record<string, string>} */
  const data = { run: r.id, domain: d, level: l };
  let cls = 'ncell';
  let title = `${domainName}, level ${l}: ${r.info.model_name} ${c ? fmtScore(c.score) : 'has no such cell'}`;
  if (i > 0) {
    /** @type {CompareCell | undefined} */
    const cc = pair && pair.cmp ? ((pair.cmp.cells || {})[d] || {})[l] : undefined;
    if (!cc) {
      parts.push(h('span', { class: 'delta-text muted' }, 'no paired tests'));
    } else {
      const pts = Math.round(cc.delta * 100);
      const dir = pts > 0 ? 'up' : pts < 0 ? 'down' : 'same';
      const sig = cc.significant && pts !== 0 ? (pts < 0 ? 'worse' : 'better') : '';
      const verdict = sig ? `significantly ${sig}, ${fmtP(cc.p_value)}`
        : cc.delta !== 0 ? `not significant, ${fmtP(cc.p_value)}` : 'no change in score';
      parts.push(
        h('span', { class: 'delta-text' }, pts > 0 ? `▲ +${pts} pts` : pts < 0 ? `▼ −${-pts} pts` : '= 0 pts'),
        sig ? h('span', { class: `sig sig-${sig}`, title: verdict, 'aria-label': verdict }, sig === 'worse' ? '⚠ Significant regression' : '★ Significant improvement') : null,
        h('span', { class: 'delta-p' }, cc.delta !== 0 ? (sig ? fmtP(cc.p_value) : `not significant, ${fmtP(cc.p_value)}`) : 'no change in score',
          ` · ${cc.tests} paired`),
        retrievalChange(cc.retrieval));
      cls += ` delta delta-${dir}${sig ? ` delta-sig delta-sig-${sig}` : ''}`;
      Object.assign(data, { delta: String(pts), significant: sig, p: String(cc.p_value) });
      title += `; vs the baseline ${fmtScore(cc.base_score)} → ${fmtScore(cc.head_score)} over ${cc.tests} paired test${cc.tests === 1 ? '' : 's'}, ${verdict}`;
    }
  }
  return h('td', { class: cls, title, dataset: data }, parts);
}

/**
 * Lists the tests of cell d/l of every run, side by side, in box.
 * @param {HTMLElement} box
 * @param {LoadedRun[]} runs
 * @param {string} d
 * @param {string} l
 * @param {string} domainName
 * @param {HTMLElement} opener
 * @param {() => boolean} current
 */
async function showTests(box, runs, d, l, domainName, opener, current) {
  box.hidden = false;
  box.dataset.domain = d;
  box.dataset.level = l;
  const heading = h('h2', { tabindex: '-1' }, `Tests of ${domainName} · level ${l}`);
  fill(box, heading, h('p', { class: 'muted' }, 'Loading tests…'));
  const answers = await Promise.allSettled(runs.map((r) => /** @type {Promise<CellTests>} */ (get(`/api/run/${seg(r.id)}/tests/${seg(d)}/${seg(l)}`))));
  if (!current() || box.dataset.domain !== d || box.dataset.level !== l) return;
  const key = (/** @type {TestResult} */ t) => `${t.test_id}\u0000${t.repeat || 0}`;
  /** @type {Map<string, TestResult>[]} */
  const byRun = answers.map((a) => new Map(a.status === 'fulfilled' ? (a.value.tests || []).map((t) => [key(t), t]) : []));
  /** @type {Map<string, TestResult>} */
  const order = new Map();
  for (const m of byRun) for (const [k, t] of m) if (!order.has(k)) order.set(k, t);
  const repeats = [...order.values()].some((t) => (t.repeat || 0) > 0);
  const rows = [...order].map(([k, first]) => {
    const baseResult = byRun[0].get(k);
    const baseText = baseResult ? baseResult.response || '' : null;
    return h('tr', { dataset: { test: first.test_id, repeat: String(first.repeat || 0) } },
      h('th', { scope: 'row', class: 'ntest' },
        h('span', { class: 'test-name' }, first.name || first.test_id), first.name ? h('code', { class: 'did' }, first.test_id) : null,
        repeats ? h('span', { class: 'did' }, `repeat ${first.repeat || 0}`) : null,
        h('details', { class: 'ntest-prompt' }, h('summary', null, 'Prompt and expected answer'),
          h('div', { class: 'resp-text' }, first.prompt || ''),
          h('p', null, h('strong', null, `Expected${first.expected && first.expected.type ? ` (${first.expected.type})` : ''}: `), (first.expected && first.expected.answer) || ''))),
      runs.map((r, i) => {
        const t = byRun[i].get(k);
        const a = answers[i];
        if (!t) {
          return h('td', { class: 'nresp nresp-none', dataset: { run: r.id } },
            h('span', { class: 'muted' }, a.status === 'rejected' ? `could not load: ${errorText(a.reason)}` : 'no result'));
        }
        return h('td', { class: `nresp st-${t.status}`, dataset: { run: r.id, status: t.status } },
          h('div', { class: 'nresp-head' }, statusBadge(t.status), ` score ${fmtScore(t.score)}`),
          responseBox(t.response || '', i === 0 || baseText === null ? null : baseText));
      }));
  });
  fill(box, heading,
    h('p', { class: 'hint' }, 'Each run\u2019s response to each test. Against the baseline (the first column), ',
      h('mark', { class: 'diff-ins' }, 'added words'), ' are highlighted and ', h('del', { class: 'diff-del' }, 'missing words'), ' struck through.'),
    rows.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'list ncompare-tests-table', id: 'ncompare-tests-table' },
      h('caption', { class: 'visually-hidden' }, `Responses of every run to the tests of ${domainName}, level ${l}`),
      h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Test'),
        runs.map((r, i) => h('th', { scope: 'col', dataset: { run: r.id } }, r.info.model_name || r.id, i === 0 ? h('span', { class: 'did' }, 'baseline') : null)))),
      h('tbody', null, rows))) : h('p', { class: 'muted' }, 'No run has a finished test in this cell.'),
    h('p', null, h('button', { type: 'button', class: 'small', onclick: () => { box.hidden = true; opener.focus(); } }, 'Close the tests')));
  heading.focus();
}
