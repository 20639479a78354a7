// @ts-check
/** @import { Cell, Matrix } from '../../../types/api' */
/** @import { DomainNames } from '../../../types/views' */

// The domain × level matrix: a table whose cells are buttons, coloured by
// score and labelled with a symbol, a status word, the score with the
// margin of its 95 % interval, the recall@5 of an agent's retrieval when
// the cell's tests name their expected sources, the duration, and what the
// cell cost when its model has a price. It updates in place, so a focused cell keeps its focus while
// the live matrix is polled.

import { h, STATUS, fmtScore, fmtDuration, scoreColor, fill } from './ui.js';

/**
 * The level keys of a matrix's domains, sorted as numbers.
 * @param {Matrix | null | undefined} domains
 */
export function levelsOf(domains) {
  /** @type {Set<string>} */
  const set = new Set();
  for (const levels of Object.values(domains || {})) for (const l of Object.keys(levels)) set.add(l);
  return [...set].sort((a, b) => Number(a) - Number(b));
}

export class MatrixView {
  /**
   * onCell(domain, level, button) is called when a cell is activated.
   * names: a Map of domain id → {name, color}, for row headers.
   * @param {{onCell?: (domain: string, level: string, button: HTMLButtonElement) => void, caption?: string}} [opts]
   */
  constructor({ onCell, caption = 'Domain × level results' } = {}) {
    this.onCell = onCell;
    this.caption = caption;
    this.el = h('div', { class: 'matrix-wrap' });
    /** @type {string | null} */
    this.shape = null;
    /** @type {Map<string, HTMLButtonElement>} */
    this.buttons = new Map();
    /** @type {DomainNames} */
    this.names = new Map();
  }

  /** @param {DomainNames | null | undefined} names */
  setNames(names) { this.names = names || new Map(); if (this.last) { this.shape = null; this.update(this.last); } }

  /**
   * Shows a matrix: {domains: {d: {level: cell}}, run_id, status...}.
   * @param {{domains?: Matrix} | null | undefined} matrix
   */
  update(matrix) {
    this.last = matrix;
    const domains = (matrix && matrix.domains) || {};
    const ids = Object.keys(domains).sort();
    const levels = levelsOf(domains);
    const shape = JSON.stringify([ids, levels.map((l) => ids.map((d) => l in domains[d]))]);
    if (shape !== this.shape) this.build(ids, levels, domains);
    for (const d of ids) {
      for (const l of levels) {
        const cell = domains[d][l];
        if (cell) this.paint(/** @type {HTMLButtonElement} */ (this.buttons.get(`${d}/${l}`)), d, l, cell);
      }
    }
    this.shape = shape;
  }

  /**
   * @param {string[]} ids
   * @param {string[]} levels
   * @param {Matrix} domains
   */
  build(ids, levels, domains) {
    // A rebuild (new domain names, a new run's shape) replaces the
    // buttons: a keyboard user's focus moves to the same cell's new one.
    const active = document.activeElement;
    const focused = active instanceof HTMLButtonElement && this.el.contains(active)
      ? `${active.dataset.domain}/${active.dataset.level}` : null;
    this.buttons.clear();
    if (!ids.length) {
      fill(this.el, h('p', { class: 'empty' }, 'No cells yet: start a run.'));
      return;
    }
    const head = h('tr', null, h('th', { scope: 'col' }, 'Domain'),
      levels.map((l) => h('th', { scope: 'col' }, `Level ${l}`)));
    const rows = ids.map((d) => {
      const info = this.names.get(d);
      const swatch = info && /^#[0-9a-fA-F]{6}$/.test(info.color || '') ? h('span', { class: 'swatch', 'aria-hidden': 'true' }) : null;
      if (swatch && info) swatch.style.setProperty('--swatch', info.color);
      return h('tr', null,
        h('th', { scope: 'row' }, swatch, h('span', { class: 'dname' }, info && info.name ? info.name : d),
          info && info.name && info.name !== d ? h('span', { class: 'did' }, d) : null),
        levels.map((l) => {
          if (!(l in domains[d])) return h('td', { class: 'nocell' }, h('span', { class: 'visually-hidden' }, 'no tests'));
          /** @type {HTMLButtonElement} */
          const b = h('button', { type: 'button', class: 'cell', dataset: { domain: d, level: l },
            onclick: () => this.onCell && this.onCell(d, l, b) });
          this.buttons.set(`${d}/${l}`, b);
          return h('td', null, b);
        }));
    });
    fill(this.el, h('table', { class: 'matrix' },
      h('caption', { class: 'visually-hidden' }, this.caption), h('thead', null, head), h('tbody', null, rows)));
    const again = focused && this.buttons.get(focused);
    if (again) again.focus();
  }

  /**
   * @param {HTMLButtonElement} b
   * @param {string} d
   * @param {string} l
   * @param {Cell} cell
   */
  paint(b, d, l, cell) {
    const st = STATUS[cell.status] || { sym: '?', label: cell.status };
    const key = JSON.stringify(cell);
    if (b.dataset.key === key) return;
    b.dataset.key = key;
    b.dataset.status = cell.status;
    b.className = `cell st-${cell.status}`;
    const bg = scoreColor(cell.score);
    if (bg) b.style.setProperty('--cell-bg', bg); else b.style.removeProperty('--cell-bg');
    const counts = cell.tests ? `${cell.done ?? 0}/${cell.tests}` : '';
    const dur = cell.duration_ms !== undefined && cell.duration_ms !== null ? fmtDuration(cell.duration_ms) : '';
    const errors = cell.errors || 0;
    // A score is over the scored tests only; an error cell has none, and
    // never reads as "failed 0%".
    const score = cell.score === null || cell.score === undefined ? (cell.status === 'error' ? 'no score' : '') : fmtScore(cell.score);
    const ci = intervalOf(cell);
    const rec = recallOf(cell);
    const cost = cell.cost_usd !== undefined && cell.cost_usd !== null && cell.done ? fmtCost(cell.cost_usd) : '';
    fill(b,
      h('span', { class: 'cell-top' }, h('span', { class: 'sym', 'aria-hidden': 'true' }, st.sym), h('span', { class: 'cell-status' }, st.label)),
      h('span', { class: 'cell-score' }, score, ci ? h('span', { class: 'cell-ci' }, ` ±${ci.margin}`) : null),
      rec ? h('span', { class: 'cell-recall', title: rec.text }, rec.short) : null,
      h('span', { class: 'cell-meta' }, [counts, dur].filter(Boolean).join(' · '),
        cost ? h('span', { class: 'cell-cost' }, ` · ${cost}`) : null,
        errors ? h('span', { class: 'cell-errors' }, ` · ⚠ ${errors} error${errors === 1 ? '' : 's'}`) : null));
    const name = (this.names.get(d) || {}).name || d;
    const parts = [`${name}, level ${l}: ${st.label}`];
    if (cell.score !== null && cell.score !== undefined) parts.push(`score ${fmtScore(cell.score)}`);
    if (ci) parts.push(ci.text);
    if (rec) parts.push(rec.text);
    if (cell.tests) {
      parts.push(`${cell.done ?? 0} of ${cell.tests} tests done, ${cell.passed ?? 0} passed, ${cell.failed ?? 0} failed, ${errors} ${errors === 1 ? 'error' : 'errors'}`);
    }
    if (dur) parts.push(dur);
    if (cost) parts.push(`cost ${cost}`);
    b.setAttribute('aria-label', `${parts.join(', ')}. Show tests.`);
    if (ci) b.title = `${fmtScore(cell.score)}: ${ci.text}`; else b.removeAttribute('title');
  }
}

/** The k of recall@k: the best chunks looked at for a test's expected files. */
export const RECALL_K = 5;

/**
 * The retrieval figures of a cell, when its results measured an agent's
 * retrieval (tests that list expected sources, in a run that targets an
 * agent): short is the cell's label ("R@5 0.83"), text says what it
 * means.
 * @param {Cell} cell
 * @returns {{short: string, text: string} | null}
 */
export function recallOf(cell) {
  const r = cell.retrieval;
  if (!r || !r.tests) return null;
  const recall = r.recall_at_k.toFixed(2);
  return {
    short: `R@${RECALL_K} ${recall}`,
    text: `retrieval: mean recall@${RECALL_K} ${recall} (the share of each test's expected files found among the files of the ` +
      `${RECALL_K} best chunks retrieved), hit rate ${fmtScore(r.hit_rate)} (tests that retrieved at least one expected file), ` +
      `over ${r.tests} test${r.tests === 1 ? '' : 's'}`,
  };
}

/**
 * The 95 % interval of a cell's score, when the server computed one (a
 * final cell with a scored test): margin is the larger distance from the
 * score to the interval's ends, in percentage points (the interval need
 * not be symmetric); text gives the interval and the standard error.
 * @param {Cell} cell
 * @returns {{margin: number, text: string} | null}
 */
export function intervalOf(cell) {
  if (!cell.ci95 || cell.score === null || cell.score === undefined) return null;
  const [lo, hi] = cell.ci95;
  const margin = Math.round(Math.max(cell.score - lo, hi - cell.score) * 100);
  let text = `95 % interval ${fmtScore(lo)} to ${fmtScore(hi)}`;
  if (cell.stderr !== null && cell.stderr !== undefined) text += `, standard error ${(cell.stderr * 100).toFixed(1)} points`;
  return { margin, text };
}

/**
 * A cost in US dollars: at least two decimals and three significant
 * digits ("$7.00", "$0.14", "$0.00735"); "n/a" when there is no price
 * (null), never $0 for an unpriced model.
 * @param {number | null | undefined} v
 */
export function fmtCost(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return 'n/a';
  if (v === 0) return '$0.00';
  const decimals = Math.min(20, Math.max(2, 2 - Math.floor(Math.log10(Math.abs(v)))));
  // Trailing zeros past the second decimal say nothing.
  const s = v.toFixed(decimals).replace(/(\.\d\d\d*?)0+$/, '$1');
  return `$${s}`;
}
