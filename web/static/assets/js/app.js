// @ts-check
/** @import { ModelStatus, ServerConfig, SyncResult } from '../../../types/api' */
/** @import { Route, View } from '../../../types/views' */

// Entry point: the hash router, the header (engine and model status), the
// banners for an unreachable server or model endpoint, and the API-token
// prompt.

import { get, post, getToken, setToken, onTokenNeeded, onReachability, onAuth, APIError, NetworkError } from './api.js';
import { h, banner, errorText, fill } from './ui.js';
import * as live from './live.js';
import * as history from './history.js';
import * as definitions from './definitions.js';
import * as agents from './agents.js';
import * as plugins from './plugins.js';

/** @type {Record<string, View>} */
const VIEWS = {
  live: { module: live, section: 'view-live', title: 'Live run', nav: 'live' },
  history: { module: history, section: 'view-history', title: 'History', nav: 'history' },
  run: { module: history, section: 'view-history', title: 'Run', nav: 'history' },
  compare: { module: history, section: 'view-history', title: 'Compare runs', nav: 'history' },
  definitions: { module: definitions, section: 'view-definitions', title: 'Definitions', nav: 'definitions' },
  agents: { module: agents, section: 'view-agents', title: 'Agents', nav: 'agents' },
  plugins: { module: plugins, section: 'view-plugins', title: 'Plugins', nav: 'plugins' },
};

/** @type {View | null} */
let current = null;

/** @returns {Route} */
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map((p) => { try { return decodeURIComponent(p); } catch { return p; } });
  return Object.assign(parts, { query: query || '' });
}

async function route() {
  // An anchor in the page (the skip link's #main) is not a route: the view
  // shown stays; a page opened at one shows the live run.
  const anchor = location.hash.length > 1 && !location.hash.startsWith('#/') ? document.getElementById(location.hash.slice(1)) : null;
  if (anchor && !anchor.classList.contains('view')) {
    if (!current) location.replace('#/live');
    return;
  }
  const parts = parseHash();
  if (!parts.length) { location.replace('#/live'); return; }
  const view = VIEWS[parts[0]];
  for (const s of document.querySelectorAll(/** @type {'section'} */ ('main > .view'))) s.hidden = true;
  for (const a of document.querySelectorAll(/** @type {'a'} */ ('[data-nav]'))) {
    if (view && a.dataset.nav === view.nav) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  if (!view) {
    if (current && current.module.hide) current.module.hide();
    current = null;
    /** @type {HTMLElement} */ (document.getElementById('view-missing')).hidden = false;
    document.title = 'Not found · Gauntlet';
    return;
  }
  const changed = !current || current.section !== view.section;
  if (current && current.module !== view.module && current.module.hide) current.module.hide();
  current = view;
  const section = /** @type {HTMLElement} */ (document.getElementById(view.section));
  section.hidden = false;
  document.title = `${view.title} · Gauntlet`;
  if (changed && routed) /** @type {HTMLElement} */ (document.getElementById('main')).focus({ preventScroll: true });
  routed = true;
  try {
    await view.module.show(parts);
  } catch (err) {
    fill(section, h('h1', null, view.title), h('p', { class: 'error', role: 'alert' }, errorText(err)));
  }
}
let routed = false;

// ---- API token ----

/**
 * @param {string | null} reason
 * @returns {Promise<string | null>}
 */
function tokenDialog(reason) {
  const dlg = /** @type {HTMLDialogElement} */ (document.getElementById('token-dialog'));
  const input = /** @type {HTMLInputElement} */ (dlg.querySelector('#token-input'));
  /** @type {HTMLElement} */ (dlg.querySelector('#token-why')).textContent = reason ||
    'This server requires an API token (its --api-token). It is kept in this browser\u2019s local storage and sent as "Authorization: Bearer …".';
  input.value = getToken();
  dlg.returnValue = '';
  return new Promise((resolve) => {
    // A queued close event of an earlier prompt is not this answer.
    const onClose = () => {
      if (dlg.open) return;
      dlg.removeEventListener('close', onClose);
      const v = dlg.returnValue;
      if (v === 'save' && input.value.trim()) resolve(input.value.trim());
      else { if (v === 'forget') setToken(''); resolve(null); }
    };
    dlg.addEventListener('close', onClose);
    if (!dlg.open) dlg.showModal();
    input.focus();
  });
}

async function askForToken() {
  const tok = await tokenDialog(getToken()
    ? 'The server refused the saved API token. Enter the token the server was started with (--api-token).'
    : 'This server requires an API token (the --api-token it was started with). It is kept in this browser\u2019s local storage and sent as "Authorization: Bearer …".');
  return tok;
}

async function tokenButton() {
  const tok = await tokenDialog(null);
  if (tok) setToken(tok);
  route();
  checkModel();
}

// ---- Model endpoint ----

/** @type {ReturnType<typeof setTimeout> | undefined} */
let modelTimer;

async function checkModel() {
  clearTimeout(modelTimer);
  modelTimer = setTimeout(checkModel, 60000);
  const chip = /** @type {HTMLElement} */ (document.getElementById('model-chip'));
  try {
    const [cfg, m] = await Promise.all([/** @type {Promise<ServerConfig>} */ (get('/api/config')),
      /** @type {Promise<ModelStatus>} */ (get('/api/config/model'))]);
    live.setModels(m.config_model, m.available);
    if (m.model === null || m.model === undefined) {
      chip.className = 'chip chip-button chip-warn';
      chip.textContent = '⚠ Model endpoint unreachable';
      banner('model', `The model endpoint ${cfg.llm_base_url} is not answering: ${m.detail || 'no detail'}. ` +
        'Runs and chats will fail until it is reachable (check --llm-base-url and that the model server is running).', 'warn',
      { label: 'Check again', run: checkModel });
      return;
    }
    chip.className = 'chip chip-button chip-ok';
    chip.textContent = `✓ Model ${m.model}`;
    chip.title = `${cfg.llm_base_url} (configured: ${m.config_model})`;
    if (m.config_model && m.model !== m.config_model) {
      banner('model', `The endpoint ${cfg.llm_base_url} does not list the configured model ${m.config_model}; it serves ${(m.available || []).join(', ')}.`, 'warn',
        { label: 'Check again', run: checkModel });
    } else {
      banner('model', null);
    }
  } catch (err) {
    if (err instanceof NetworkError) return; // the chips already say the server is unreachable
    chip.className = 'chip chip-button chip-warn';
    chip.textContent = 'Model: unknown';
    if (!(err instanceof APIError && err.status === 401)) chip.title = errorText(err);
  }
}

// ---- Server unreachable ----

// True from a request that could not reach the server to the next that did.
let unreachable = false;

/**
 * With the server away, the header claims nothing it cannot know: both
 * chips say the state is unknown until a request gets through again.
 */
function chipsUnknown() {
  const model = /** @type {HTMLElement} */ (document.getElementById('model-chip'));
  model.className = 'chip chip-button chip-warn';
  model.textContent = '⚠ Model unknown: server unreachable';
  model.title = `Cannot reach the Gauntlet server at ${location.origin}`;
  const engine = /** @type {HTMLElement} */ (document.getElementById('engine-chip'));
  engine.className = 'chip chip-warn';
  engine.textContent = '⚠ Engine unknown: server unreachable';
}

// ---- Definition files that did not load ----

/** @type {ReturnType<typeof setTimeout> | undefined} */
let syncTimer;

/**
 * Shows a banner listing the definition files the last sync refused (the
 * server's start-up sync included), so that a typo never drops a level
 * silently. Checked at start, every minute, and after "Sync again".
 */
export async function checkSync() {
  clearTimeout(syncTimer);
  syncTimer = setTimeout(checkSync, 60000);
  /** @type {SyncResult} */
  let res;
  try {
    res = await get('/api/settings/sync');
  } catch {
    return; // an older server, or unreachable: the other banners say so
  }
  const errs = res.errors || [];
  if (!errs.length) { banner('sync', null); return; }
  const shown = errs.slice(0, 20);
  banner('sync', h('span', { class: 'sync-errors', id: 'sync-errors' },
    `${errs.length} problem${errs.length === 1 ? '' : 's'} in the definition files: a file with an error loads nothing. Fix the files, then sync again.`,
    h('ul', null, shown.map((e) => h('li', null, h('code', null, `${e.file}${e.line ? `:${e.line}` : ''}`), ` ${e.error}`)),
      errs.length > shown.length ? h('li', null, `… and ${errs.length - shown.length} more`) : null)), 'warn',
  { label: 'Sync again', run: async () => { try { await post('/api/settings/sync'); } catch { /* the answer is read below */ } checkSync(); } });
}

// ---- Start ----

function init() {
  onTokenNeeded(askForToken);
  onReachability((ok, err) => {
    if (ok) {
      banner('server', null);
      // Back: the model is checked again; the engine's chip is the live poller's.
      if (unreachable) { unreachable = false; checkModel(); }
      return;
    }
    if (!unreachable) { unreachable = true; chipsUnknown(); }
    banner('server', `Cannot reach the Gauntlet server at ${location.origin} (${err && err.cause instanceof Error && err.cause.message ? err.cause.message : 'network error'}). Is gauntlet serve running? Retrying…`, 'error');
  });
  onAuth((ok) => {
    if (ok) banner('auth', null);
    else banner('auth', 'This server requires an API token, and none (or a wrong one) is saved in this browser.', 'warn', { label: 'Enter token', run: tokenButton });
  });
  // The skip link moves the focus to the content and leaves the route as it is.
  /** @type {HTMLElement} */ (document.querySelector('a.skip')).addEventListener('click', (e) => {
    e.preventDefault();
    const main = /** @type {HTMLElement} */ (document.getElementById('main'));
    main.focus();
    main.scrollIntoView();
  });
  /** @type {HTMLElement} */ (document.getElementById('token-button')).addEventListener('click', tokenButton);
  /** @type {HTMLElement} */ (document.getElementById('model-chip')).addEventListener('click', checkModel);
  for (const v of [live, history, definitions, agents, plugins]) v.mount(/** @type {HTMLElement} */ (document.getElementById(VIEWS[/** @type {string} */ (Object.keys(VIEWS).find((k) => VIEWS[k].module === v))].section)));
  window.addEventListener('hashchange', route);
  route();
  live.startPolling();
  checkModel();
  checkSync();
}

init();
