// @ts-check
/** @import { RunInfo, ErrorDetail } from '../../../types/api' */
/** @import { Attrs, Child, FieldOptions } from '../../../types/dom' */

// Small DOM helpers shared by the views. Everything the server sends is
// put in the page as text (textContent), never parsed as HTML.

import { APIError, NetworkError } from './api.js';

/**
 * h('button', {class: 'x', onclick: fn, 'aria-label': 'y'}, 'text', child...)
 * Attributes: class, text, html is not supported on purpose; on<event>
 * handlers; dataset: {...}; boolean true sets an empty attribute, false or
 * null/undefined leaves it out; 'value', 'checked', 'selected', 'disabled',
 * 'hidden' are set as properties.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs | null} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : String(v);
      else if (k === 'text') el.textContent = String(v);
      else if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), /** @type {EventListener} */ (v));
      else if (['value', 'checked', 'selected', 'disabled', 'hidden', 'open', 'indeterminate'].includes(k)) /** @type {any} */ (el)[k] = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

/**
 * @param {ParentNode} el
 * @param {readonly Child[]} children
 */
function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/**
 * @template {Element} E
 * @param {E} el
 */
export function clear(el) { el.replaceChildren(); return el; }

/**
 * Replaces el's children; null, undefined and false children are skipped.
 * @template {Element} E
 * @param {E} el
 * @param {...Child} children
 */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/**
 * Cell and test statuses: a symbol and a word, never colour alone.
 * @type {Record<string, {sym: string, label: string}>}
 */
export const STATUS = {
  passed: { sym: '✓', label: 'passed' },
  failed: { sym: '✗', label: 'failed' },
  error: { sym: '⚠', label: 'error' },
  pending: { sym: '…', label: 'pending' },
  running: { sym: '⟳', label: 'running' },
  skipped: { sym: '–', label: 'skipped' },
  partial: { sym: '◐', label: 'partial' },
  incomplete: { sym: '◐', label: 'incomplete' },
  completed: { sym: '✓', label: 'completed' },
  stopped: { sym: '■', label: 'stopped' },
  aborted: { sym: '⊘', label: 'aborted' },
  interrupted: { sym: '⚡', label: 'interrupted' },
  idle: { sym: '○', label: 'idle' },
};

/** @param {string} status */
export function statusBadge(status) {
  const s = STATUS[status] || { sym: '?', label: status || 'unknown' };
  return h('span', { class: `badge st-${status}` }, h('span', { class: 'sym', 'aria-hidden': 'true' }, s.sym), ' ', s.label);
}

/**
 * A run's state in words, never "completed" alone when the numbers are not
 * the whole story: "completed", "completed with 3 errors", "stopped — 4 of
 * 12 tests", "interrupted — 62 of 100 tests". Runs made before counts were
 * kept (no done_tests) read as their status.
 * @param {RunInfo | null | undefined} info
 * @returns {{status: string, text: string}}
 */
export function runState(info) {
  if (!info) return { status: 'idle', text: 'idle' };
  const s = info.status;
  if (s === 'running') return { status: 'running', text: 'running' };
  const counted = typeof info.done_tests === 'number';
  const of = counted ? ` — ${fmtNumber(info.done_tests)} of ${fmtNumber(info.total_tests)} tests` : '';
  if (s === 'completed') {
    if (!counted || info.complete) return { status: 'completed', text: 'completed' };
    if (info.errors) return { status: 'error', text: `completed with ${fmtNumber(info.errors)} error${info.errors === 1 ? '' : 's'}` };
    return { status: 'incomplete', text: `incomplete${of}` };
  }
  return { status: s, text: `${(STATUS[s] || { label: s }).label}${of}` };
}

/**
 * A badge for runState(info).
 * @param {RunInfo | null | undefined} info
 */
export function runBadge(info) {
  const r = runState(info);
  const s = STATUS[r.status] || { sym: '?' };
  const badge = h('span', { class: `badge st-${r.status}`, dataset: { complete: info && info.complete ? 'true' : 'false' } },
    h('span', { class: 'sym', 'aria-hidden': 'true' }, s.sym), ' ', r.text);
  if (r.status === 'interrupted') {
    badge.title = 'Interrupted: the process running it died. Its finished results are kept; resume it to run the rest.';
  }
  const mark = resumedMark(info);
  return mark ? h('span', { class: 'run-state' }, badge, ' ', mark) : badge;
}

/**
 * "resumed ×2" for a run that was resumed, the times of its resumes in
 * its tooltip; null for one never resumed.
 * @param {RunInfo | null | undefined} info
 */
export function resumedMark(info) {
  const r = info && info.resumed;
  if (!r || !r.count) return null;
  const times = (r.at || []).map((t) => fmtTime(t)).join(', ');
  return h('span', { class: 'resumed-mark', title: `Resumed ${r.count === 1 ? 'once' : `${r.count} times`}${times ? `: ${times}` : ''}`,
    dataset: { resumed: String(r.count) } }, `resumed ×${r.count}`);
}

/**
 * "7 passed · 2 failed · 3 errors" for anything with those counts.
 * @param {{passed?: number, failed?: number, errors?: number} | null | undefined} c
 */
export function countsText(c) {
  if (!c || typeof c.passed !== 'number') return '';
  const parts = [`${fmtNumber(c.passed)} passed`, `${fmtNumber(c.failed || 0)} failed`];
  parts.push(`${fmtNumber(c.errors || 0)} error${c.errors === 1 ? '' : 's'}`);
  return parts.join(' · ');
}

/** @param {number | null | undefined} score from 0 to 1 */
export function fmtScore(score) {
  if (score === null || score === undefined || Number.isNaN(score)) return '—';
  return `${Math.round(score * 100)}%`;
}

/** @param {number | null | undefined} ms */
export function fmtDuration(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  const rest = Math.round(s - m * 60);
  if (m < 60) return `${m} min ${rest} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** @param {number | null | undefined} n */
export function fmtNumber(n) {
  if (n === null || n === undefined) return '—';
  return new Intl.NumberFormat('en').format(n);
}

/** @param {number} n */
export function fmtBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * Server timestamps are "YYYY-MM-DD HH:MM:SS" in UTC.
 * @param {string | null | undefined} ts
 */
export function fmtTime(ts) {
  if (!ts) return '—';
  const d = new Date(ts.replace(' ', 'T') + 'Z');
  if (Number.isNaN(d.getTime())) return ts;
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/**
 * A background for a score from 0 to 1 on a colour-blind-safe diverging
 * scale: orange (0) through light grey (0.5) to blue (1). Text on it stays
 * dark.
 * @param {number | null | undefined} score
 */
export function scoreColor(score) {
  if (score === null || score === undefined) return '';
  const lo = [247, 196, 160];   // light vermillion
  const mid = [238, 238, 238];
  const hi = [164, 205, 240];   // light blue
  const t = Math.max(0, Math.min(1, score));
  /** @type {[number[], number[], number]} */
  const [a, b, u] = t < 0.5 ? [lo, mid, t * 2] : [mid, hi, (t - 0.5) * 2];
  const c = a.map((x, i) => Math.round(x + (b[i] - x) * u));
  return `rgb(${c[0]} ${c[1]} ${c[2]})`;
}

// ---- Toasts and banners ----

/**
 * @param {Child} message
 * @param {'info' | 'success' | 'error'} [kind]
 */
export function toast(message, kind = 'info') {
  const box = /** @type {HTMLElement} */ (document.getElementById('toasts'));
  const t = h('div', { class: `toast toast-${kind}` }, message);
  box.append(t);
  setTimeout(() => t.remove(), kind === 'error' ? 9000 : 5000);
}

/**
 * Shows (or, with message null, removes) a banner identified by key.
 * @param {string} key
 * @param {Child} message
 * @param {'error' | 'warn'} [kind]
 * @param {{label: string, run: () => unknown}} [action] a button in the banner
 */
export function banner(key, message, kind = 'error', action) {
  const box = /** @type {HTMLElement} */ (document.getElementById('banners'));
  /** @type {HTMLElement | null} */
  let b = box.querySelector(`[data-banner="${key}"]`);
  if (!message) { if (b) b.remove(); return; }
  const content = [h('span', { class: 'banner-text' }, message)];
  if (action) content.push(h('button', { type: 'button', onclick: action.run }, action.label));
  if (!b) {
    b = h('div', { class: `banner banner-${kind}`, role: kind === 'error' ? 'alert' : 'status', dataset: { banner: key } });
    box.append(b);
  }
  b.className = `banner banner-${kind}`;
  b.replaceChildren(...content);
}

/**
 * A short text for any error of an API call.
 * @param {unknown} err
 */
export function errorText(err) {
  if (err instanceof APIError) return `${err.status}: ${err.message}`;
  if (err instanceof NetworkError) return err.message;
  return String(err instanceof Error && err.message ? err.message : err);
}

// ---- Dialogs ----

/**
 * Asks a yes/no question in a modal dialog; resolves true on confirm.
 * @param {string} message
 * @param {{title?: string, confirm?: string, danger?: boolean}} [opts]
 * @returns {Promise<boolean>}
 */
export function confirmDialog(message, { title = 'Are you sure?', confirm = 'Confirm', danger = true } = {}) {
  const dlg = /** @type {HTMLDialogElement} */ (document.getElementById('confirm-dialog'));
  /** @type {HTMLElement} */ (dlg.querySelector('#confirm-title')).textContent = title;
  /** @type {HTMLElement} */ (dlg.querySelector('#confirm-message')).textContent = message;
  const yes = /** @type {HTMLButtonElement} */ (dlg.querySelector('#confirm-yes'));
  yes.textContent = confirm;
  yes.className = danger ? 'danger' : 'primary';
  dlg.returnValue = '';
  const opener = /** @type {HTMLElement | null} */ (document.activeElement);
  return new Promise((resolve) => {
    // The close event is queued: one from an earlier question can arrive
    // after this one opened the dialog again. It is not this answer.
    const onClose = () => {
      if (dlg.open) return;
      dlg.removeEventListener('close', onClose);
      resolve(dlg.returnValue === 'yes');
      if (opener && opener.isConnected) opener.focus();
    };
    dlg.addEventListener('close', onClose);
    dlg.showModal();
    /** @type {HTMLButtonElement} */ (dlg.querySelector('#confirm-no')).focus();
  });
}

// ---- Forms ----

/**
 * A labelled field: h-wrapper <div class="field" data-field=name> with the
 * label, the control and an optional hint. opts.type: text (default),
 * textarea, select, checkbox, number, password, json, checks (a list of
 * checkboxes; opts.options [{value, label}]), color.
 */
let fieldSeq = 0;
/**
 * @param {string} name
 * @param {string} label
 * @param {FieldOptions} [opts]
 */
export function field(name, label, opts = {}) {
  const id = `f${++fieldSeq}-${name.replace(/[^a-zA-Z0-9_-]/g, '-')}`;
  const type = opts.type || 'text';
  const hintId = opts.hint ? `${id}-hint` : null;
  const common = { id, name, 'aria-describedby': hintId, required: opts.required, readonly: opts.readonly,
    disabled: opts.disabled, placeholder: opts.placeholder, autocomplete: 'off' };
  /** @type {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} */
  let control;
  if (type === 'textarea' || type === 'json') {
    const v = type === 'json' && opts.value !== undefined && opts.value !== null && typeof opts.value !== 'string'
      ? JSON.stringify(opts.value, null, 2) : opts.value;
    control = h('textarea', { ...common, rows: opts.rows || 4, spellcheck: type === 'json' ? 'false' : null,
      class: type === 'json' || opts.mono ? 'mono' : null, dataset: { type: type === 'json' ? 'json' : 'text' } });
    control.value = /** @type {string} */ (v ?? '');
  } else if (type === 'select') {
    control = h('select', { ...common, dataset: { type: opts.dataType || 'text' } },
      (opts.options || []).map((o) => h('option', { value: o.value }, o.label ?? o.value)));
    const want = String(opts.value ?? '');
    if ((opts.options || []).some((o) => String(o.value) === want)) control.value = want;
  } else if (type === 'checkbox') {
    control = h('input', { ...common, type: 'checkbox', checked: !!opts.value, dataset: { type: 'bool' } });
    return h('div', { class: 'field field-check', dataset: { field: name } },
      control, h('label', { for: id }, label), opts.hint ? h('p', { class: 'hint', id: hintId }, opts.hint) : null);
  } else if (type === 'checks') {
    const values = new Set(/** @type {unknown[]} */ (opts.value || []));
    const boxes = (opts.options || []).map((o, i) => {
      const cid = `${id}-${i}`;
      return h('span', { class: 'check' },
        h('input', { type: 'checkbox', id: cid, name, value: o.value, checked: values.has(o.value), dataset: { type: 'list' } }),
        h('label', { for: cid }, o.label ?? o.value));
    });
    return h('fieldset', { class: 'field field-checks', dataset: { field: name }, 'aria-describedby': hintId },
      h('legend', null, label),
      boxes.length ? h('div', { class: 'checks' }, boxes) : h('p', { class: 'hint' }, opts.empty || 'None available.'),
      opts.hint ? h('p', { class: 'hint', id: hintId }, opts.hint) : null);
  } else {
    const inputType = type === 'number' ? 'number' : type === 'password' ? 'password' : 'text';
    control = h('input', { ...common, type: inputType, step: opts.step, min: opts.min, max: opts.max,
      pattern: opts.pattern, class: opts.mono ? 'mono' : null, spellcheck: opts.mono ? 'false' : null,
      dataset: { type: type === 'number' ? 'number' : (opts.dataType || 'text') } });
    control.value = String(opts.value ?? '');
  }
  if (opts.omitEmpty) control.dataset.omitEmpty = '1';
  return h('div', { class: 'field', dataset: { field: name } },
    h('label', { for: id }, label), control,
    opts.hint ? h('p', { class: 'hint', id: hintId }, opts.hint) : null);
}

/**
 * Reads a form into an object. Dotted names nest ("expected.answer").
 * data-type: text, number (empty: left out), bool, json (empty: left
 * out), list (checked boxes sharing the name), nullable (empty: null).
 * data-omit-empty leaves out empty text. Disabled controls are left out.
 * Throws a FieldError for JSON that does not parse.
 * @param {ParentNode} form
 * @returns {Record<string, any>} what the form's fields hold, by their names
 */
export function formValues(form) {
  /** @type {Record<string, any>} */
  const out = {};
  const lists = new Set();
  for (const el of form.querySelectorAll(/** @type {'input'} */ ('input[name], select[name], textarea[name]'))) {
    if (el.disabled || el.type === 'file') continue;
    const name = el.name;
    const type = el.dataset.type || 'text';
    let value;
    if (type === 'list') {
      if (!lists.has(name)) { lists.add(name); setPath(out, name, []); }
      if (el.checked) getPath(out, name).push(el.value);
      continue;
    }
    if (type === 'bool') value = el.checked;
    else if (type === 'number') {
      if (el.value.trim() === '') continue;
      value = Number(el.value);
    } else if (type === 'json') {
      if (el.value.trim() === '') continue;
      try { value = JSON.parse(el.value); } catch (e) { throw new FieldError(name, `not valid JSON: ${/** @type {Error} */ (e).message}`); }
    } else if (type === 'nullable') value = el.value.trim() === '' ? null : el.value;
    else {
      if (el.dataset.omitEmpty && el.value === '') continue;
      value = el.value;
    }
    setPath(out, name, value);
  }
  return out;
}

/** A form's own error about one of its fields, shown beside it by showErrors. */
export class FieldError extends Error {
  /**
   * @param {string} name the field's name
   * @param {string} message
   */
  constructor(name, message) { super(message); this.field = name; }
}

/**
 * @param {Record<string, any>} obj
 * @param {string} path
 * @param {unknown} value
 */
function setPath(obj, path, value) {
  const parts = path.split('.');
  let o = obj;
  for (const p of parts.slice(0, -1)) { if (typeof o[p] !== 'object' || o[p] === null) o[p] = {}; o = o[p]; }
  o[parts[parts.length - 1]] = value;
}

/**
 * @param {Record<string, any>} obj
 * @param {string} path
 * @returns {any}
 */
function getPath(obj, path) { return path.split('.').reduce((o, p) => o && o[p], obj); }

/**
 * Removes the error messages shown by showErrors.
 * @param {ParentNode} form
 */
export function clearErrors(form) {
  for (const e of form.querySelectorAll('.field-error, .form-errors')) e.remove();
  for (const e of form.querySelectorAll('[aria-invalid]')) {
    e.removeAttribute('aria-invalid');
    const ids = (e.getAttribute('aria-describedby') || '').split(' ').filter((x) => x && !x.endsWith('-err'));
    if (ids.length) e.setAttribute('aria-describedby', ids.join(' ')); else e.removeAttribute('aria-describedby');
  }
}

/**
 * Shows an error of a form's request: each errors[] entry of a problem
 * beside the field its location names ("body.expected.answer" → the
 * control named expected.answer; indexes and trailing parts are dropped
 * until a field matches), the rest and the detail in a summary at the top
 * of the form. Focuses the first field in error. Returns the number of
 * fields marked.
 * @param {HTMLElement} form
 * @param {unknown} err
 */
export function showErrors(form, err) {
  clearErrors(form);
  /** @type {ErrorDetail[]} */
  const entries = [];
  if (err instanceof FieldError) entries.push({ location: `body.${err.field}`, message: err.message });
  else if (err instanceof APIError) entries.push(...err.errors);
  const unplaced = [];
  /** @type {HTMLElement | null} */
  let first = null;
  let marked = 0;
  for (const e of entries) {
    const wrap = findField(form, e.location || '');
    if (!wrap) { unplaced.push(e); continue; }
    marked++;
    const control = wrap.matches('fieldset') ? wrap : wrap.querySelector(/** @type {'input'} */ ('input, select, textarea'));
    const errId = `${(control && control.id) || (wrap.dataset.field || '').replace(/\W/g, '-')}-${marked}-err`;
    wrap.append(h('p', { class: 'field-error', id: errId }, h('span', { 'aria-hidden': 'true' }, '⚠ '), e.message || 'invalid'));
    if (control) {
      control.setAttribute('aria-invalid', 'true');
      const ids = (control.getAttribute('aria-describedby') || '').split(' ').filter(Boolean);
      control.setAttribute('aria-describedby', [...ids, errId].join(' '));
      if (!first) first = wrap.matches('fieldset') ? wrap.querySelector('input') : control;
    }
  }
  const summary = h('div', { class: 'form-errors', role: 'alert' },
    h('p', null, h('strong', null, err instanceof FieldError ? 'Check the highlighted field.' :
      err instanceof APIError ? `The server refused this (${err.status}): ` : 'Failed: '),
    err instanceof FieldError ? '' : (err instanceof Error && err.message) || String(err)));
  if (unplaced.length) {
    summary.append(h('ul', null, unplaced.map((e) => h('li', null, e.location ? `${e.location}: ` : '', e.message || ''))));
  }
  const head = form.querySelector(':scope > h2, :scope > h3');
  if (head) head.after(summary); else form.prepend(summary);
  if (first) first.focus(); else summary.scrollIntoView({ block: 'nearest' });
  return marked;
}

/**
 * @param {ParentNode} form
 * @param {string} location
 * @returns {HTMLElement | null}
 */
function findField(form, location) {
  let name = location.replace(/^body\.?/, '').replace(/\[\d+\]/g, '');
  while (name) {
    /** @type {HTMLElement | null} */
    const wrap = form.querySelector(`[data-field="${CSS.escape(name)}"]`);
    if (wrap) return wrap;
    const i = name.lastIndexOf('.');
    if (i < 0) break;
    name = name.slice(0, i);
  }
  return null;
}

/**
 * Disables a form's buttons while fn runs.
 * @template T
 * @param {HTMLElement} form
 * @param {() => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function busy(form, fn) {
  const buttons = [...form.querySelectorAll('button')];
  const was = buttons.map((b) => b.disabled);
  buttons.forEach((b) => { b.disabled = true; });
  form.setAttribute('aria-busy', 'true');
  try { return await fn(); } finally {
    buttons.forEach((b, i) => { b.disabled = was[i]; });
    form.removeAttribute('aria-busy');
  }
}

/**
 * Saves text as a file download.
 * @param {string} filename
 * @param {string} text
 * @param {string} [type]
 */
export function download(filename, text, type = 'application/json') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: filename, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/**
 * @param {string | null | undefined} text
 * @param {string} [cls]
 */
export function pre(text, cls) { return h('pre', { class: ['text', cls].filter(Boolean).join(' ') }, text ?? ''); }

/**
 * A <dl> from [term, value] pairs; null values are skipped.
 * @param {readonly ([string, Child] | null | false | undefined | '')[]} pairs
 * @param {string} [cls]
 */
export function dl(pairs, cls) {
  return h('dl', { class: cls || 'facts' }, pairs.filter(/** @returns {p is [string, Child]} */ (p) => !!p && p[1] !== null && p[1] !== undefined)
    .map(([k, v]) => h('div', null, h('dt', null, k), h('dd', null, v))));
}
