// @ts-check
// Plugins: the server's own plugin processes (GET /api/plugins) — state,
// pid, restarts, the last error and when it happened, the checksum state —
// refreshed every few seconds while the view is shown, so that a crash
// and the restart after it show up without reloading.

import { get } from './api.js';
import { h, fill, fmtTime, errorText } from './ui.js';

/**
 * One plugin as GET /api/plugins describes it.
 * @typedef {object} Plugin
 * @property {string} name the executable's file name
 * @property {'evaluator'|'channel'|'tool'} kind
 * @property {string} type the evaluator or channel type, the tool's function name
 * @property {string} path
 * @property {string} version empty until it has started
 * @property {'stopped'|'running'|'crashed'} state
 * @property {number} pid 0 when no process runs
 * @property {number} restarts
 * @property {string} last_error
 * @property {string|null} last_error_at "YYYY-MM-DD HH:MM:SS" (UTC)
 * @property {'unpinned'|'ok'|'mismatch'} checksum
 * @property {string[]} capabilities
 * @property {string[]|null} secret_fields
 */

/**
 * @typedef {object} PluginList
 * @property {string} dir the plugins directory the server scanned
 * @property {Plugin[]} plugins
 */

/** How often the list is read again while the view is shown. */
const REFRESH_MS = 5000;

/** @type {HTMLElement} */
let section;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;
// Which read of the list is current: each read, and hide, moves it on. A
// read whose answer comes back after that shows nothing and schedules
// nothing, so that one chain of reads runs at a time, only while the view
// is shown, and an older answer never replaces a newer one.
let generation = 0;

/** @param {HTMLElement} s the view's section */
export function mount(s) { section = s; }

export function hide() {
  generation++;
  clearTimeout(timer);
}

/** Renders the view: the list, then keeps it fresh. */
export async function show() {
  clearTimeout(timer);
  const status = h('p', { class: 'hint', id: 'plugins-refreshed', role: 'status' }, 'Loading…');
  const body = h('div', { id: 'plugins-body' });
  fill(section, h('h1', null, 'Plugins'),
    h('p', { class: 'hint' }, 'Evaluators, channels and tools the server runs as separate executables, found in its plugins directory at start-up. ' +
      'A plugin starts on first use; one that crashes restarts on its next call.'),
    h('div', { class: 'actions' },
      h('button', { type: 'button', id: 'plugins-refresh', onclick: () => refresh(body, status) }, '⟳ Refresh'), status),
    body);
  await refresh(body, status);
}

/**
 * Reads the list and shows it, then schedules the next read; unless a
 * newer read, or hide, came while it waited: then it does neither.
 * @param {HTMLElement} body
 * @param {HTMLElement} status
 */
async function refresh(body, status) {
  clearTimeout(timer);
  const mine = ++generation;
  try {
    /** @type {PluginList} */
    const list = await get('/api/plugins');
    if (mine !== generation) return;
    render(body, list);
    status.textContent = `Updated ${new Date().toLocaleTimeString()}; refreshed every ${REFRESH_MS / 1000} s.`;
  } catch (err) {
    if (mine !== generation) return;
    fill(body, h('p', { class: 'error', role: 'alert' }, `Could not list the plugins: ${errorText(err)}`));
    status.textContent = '';
  }
  timer = setTimeout(() => refresh(body, status), REFRESH_MS);
}

/** The state as a badge: a symbol and a word, never colour alone. */
const STATES = {
  running: { sym: '●', cls: 'ch-running' },
  stopped: { sym: '○', cls: 'ch-stopped' },
  crashed: { sym: '⚠', cls: 'ch-error' },
};

/** The checksum state: a symbol, a word and what it means. */
const CHECKSUMS = {
  ok: { sym: '✓', cls: 'st-passed', title: 'The file matches its pinned sha256.' },
  mismatch: { sym: '✗', cls: 'st-failed', title: 'The file does not match its pinned sha256: the plugin is not started.' },
  unpinned: { sym: '–', cls: 'st-skipped', title: 'No sha256 is pinned for this file (--plugin-sha256).' },
};

/**
 * @param {HTMLElement} body
 * @param {PluginList} list
 */
function render(body, list) {
  const plugins = list.plugins || [];
  if (!plugins.length) {
    fill(body, h('p', { class: 'empty', id: 'plugins-empty' },
      list.dir ? `No plugins in ${list.dir}. ` : 'This server has no plugins directory. ',
      'Plugin executables are named gauntlet-evaluator-<type>, gauntlet-channel-<type> or gauntlet-tool-<name>; adding one takes a server restart.'));
    return;
  }
  fill(body, h('p', { class: 'hint' }, 'Directory: ', h('code', null, list.dir)),
    h('div', { class: 'table-wrap' }, h('table', { class: 'list plugins' },
      h('thead', null, h('tr', null, ['Plugin', 'Kind', 'Version', 'State', 'Restarts', 'Checksum', 'Last error']
        .map((c) => h('th', { scope: 'col', class: c === 'Restarts' ? 'num' : null }, c)))),
      h('tbody', null, plugins.map(row)))));
}

/** @param {Plugin} p */
function row(p) {
  const st = STATES[p.state] || { sym: '?', cls: '' };
  const sum = CHECKSUMS[p.checksum] || { sym: '?', cls: '', title: '' };
  return h('tr', { dataset: { plugin: p.name, state: p.state, checksum: p.checksum } },
    h('td', null, h('span', { class: 'plugin-type' }, p.type), h('div', { class: 'did', title: p.path }, p.name)),
    h('td', null, p.kind),
    h('td', { class: 'plugin-version' }, p.version || '—'),
    h('td', { class: 'plugin-state' }, h('span', { class: `badge ${st.cls}` }, `${st.sym} ${p.state}`),
      p.pid ? h('div', { class: 'did' }, `pid ${p.pid}`) : null),
    h('td', { class: 'num plugin-restarts' }, String(p.restarts)),
    h('td', { class: 'plugin-checksum' }, h('span', { class: `badge ${sum.cls}`, title: sum.title }, `${sum.sym} ${p.checksum}`)),
    h('td', { class: 'plugin-error' }, p.last_error
      ? [p.last_error_at ? h('time', { datetime: `${p.last_error_at.replace(' ', 'T')}Z` }, fmtTime(p.last_error_at)) : null,
        h('div', { class: 'error small-text' }, p.last_error)]
      : h('span', { class: 'muted' }, 'none')));
}
