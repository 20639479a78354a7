// @ts-check
/** @import { Domain, EngineStatus, HistoryPage, LiveMatrix, LogPoll, MessageResult, RateLimitState, RunInfo, StartResult, Sweep, SweepStarted } from '../../../types/api' */
/** @import { Child } from '../../../types/dom' */
/** @import { DomainNames, Route } from '../../../types/views' */

// Live run: start, stop and reset; the matrix (GET /api/test_matrix), the
// progress (GET /api/status) and the log (GET /api/log_poll), polled about
// once a second while a run is active. A sweep (POST /api/sweep) runs the
// same selection for several models; when it completes, the comparison of
// its runs opens.

import { get, post, seg, APIError } from './api.js';
import { h, field, formValues, showErrors, clearErrors, busy, confirmDialog, toast, statusBadge, fmtScore, fmtDuration,
  fmtNumber, fmtTime, dl, scoreColor, errorText, STATUS, fill, FieldError, runBadge, runState, countsText } from './ui.js';
import { MatrixView } from './matrix.js';
import { openCell } from './cell.js';
import { targetField, loadAgents, targetBody } from './target.js';

const FAST = 1000;   // while a run is active
const SLOW = 2500;   // idle, with the live view shown
const IDLE = 5000;   // idle, another view shown
const MAX_LOG = 5000;

/**
 * @type {{
 *   section: HTMLElement | null, visible: boolean, timer: ReturnType<typeof setTimeout> | undefined,
 *   status: EngineStatus | null, running: boolean, watchRun: string | null, announced: Set<string>,
 *   matrix: LiveMatrix | null, needMatrix: boolean, domains: Domain[], names: DomainNames,
 *   engineMissing: boolean, configModel: string, logCursor: number, ticking: boolean, again: boolean,
 *   started: number, runInfo?: RunInfo | null, infoFor?: string,
 * }}
 */
const st = {
  section: null,
  visible: false,
  timer: undefined,
  status: null,
  running: false,
  watchRun: null,       // a run we saw (or started) and have not announced the end of
  announced: new Set(),
  matrix: null,
  needMatrix: true,
  domains: [],
  names: new Map(),
  engineMissing: false,
  configModel: '',
  logCursor: 0,         // the since of the next /api/log_poll
  ticking: false,       // a tick is waiting on the server
  again: false,         // poked during that tick: tick again at once after it
  started: 0,           // runs and sweeps started from this page: a status asked for before the last is stale
};

// The most lines one log poll brings: when more wait after the cursor
// (a page opened after a long run, a tab left in the background), the
// server skips to the newest ones and says how many it left out, so the
// page catches up in one request instead of replaying the log.
const LOG_TAIL = 1000;

/**
 * The view's elements, set by mount.
 * @typedef {{
 *   form: HTMLFormElement, logList: HTMLOListElement, follow: HTMLInputElement, runLine: HTMLElement,
 *   progress: HTMLProgressElement, progressText: HTMLElement, announce: HTMLElement, summary: HTMLElement,
 *   facts: HTMLElement, start: HTMLButtonElement, stop: HTMLButtonElement, checks: HTMLElement, models: HTMLDataListElement,
 *   rateLimit: HTMLElement,
 * }} Elements
 */
let els = /** @type {Elements} */ ({});
/** @type {MatrixView} */
let matrixView;

/** @param {HTMLElement} section */
export function mount(section) {
  st.section = section;
  matrixView = new MatrixView({
    caption: 'Live run: domain × level results',
    onCell: (d, l) => {
      const run = st.matrix && st.matrix.run_id;
      if (run) openCell(run, d, l, { domainName: (st.names.get(d) || {}).name });
    },
  });
  const form = h('form', { class: 'card start-form', id: 'start-form', novalidate: true, onsubmit: (e) => { e.preventDefault(); start(); } },
    h('h2', null, 'Start a run'),
    field('model_name', 'Run label', { value: 'default', hint: 'Names this run in the history.', omitEmpty: true }),
    field('model', 'Model (optional)', { placeholder: 'the configured model', omitEmpty: true,
      hint: 'Overrides the endpoint model for this run only.' }),
    field('max_cost_usd', 'Budget in US dollars (optional)', { type: 'number', step: 'any', min: 0, placeholder: 'no budget',
      hint: 'Once what the run cost (judges included, at the prices of pricing.yaml) reaches it, no new request is sent and the run stops; resume it with a new budget.' }),
    field('cache', 'Use the response cache', { type: 'checkbox', value: false,
      hint: 'A request identical to one made before (same model, messages, tools, parameters and repeat) is answered from the database. A judge is always asked.' }),
    sweepFields(),
    h('fieldset', { class: 'field field-checks', dataset: { field: 'domains' } },
      h('legend', null, 'Domains'),
      h('div', { class: 'checks', id: 'domain-checks' }, h('span', { class: 'muted' }, 'Loading domains…')),
      h('div', { class: 'inline-actions' },
        h('button', { type: 'button', class: 'small', onclick: () => checkAll(true) }, 'All'),
        h('button', { type: 'button', class: 'small', onclick: () => checkAll(false) }, 'None'))),
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary', id: 'start-button' }, '▶ Start run'),
      h('button', { type: 'button', id: 'stop-button', onclick: stop }, '■ Stop'),
      h('button', { type: 'button', id: 'reset-button', onclick: reset }, '↺ Reset engine')));
  const modelInput = /** @type {HTMLInputElement} */ (form.querySelector('input[name="model"]'));
  modelInput.setAttribute('list', 'model-options');
  /** @type {HTMLElement} */ (modelInput.closest('.field')).before(targetField(modelInput));
  form.append(h('datalist', { id: 'model-options' }));

  const runCard = h('section', { class: 'card run-card', 'aria-labelledby': 'run-heading' },
    h('h2', { id: 'run-heading' }, 'Current run'),
    h('div', { id: 'run-line', class: 'run-line' }, h('span', { class: 'muted' }, 'Waiting for the server…')),
    h('div', { class: 'progress-row' },
      h('progress', { id: 'run-progress', max: 1, value: 0, 'aria-labelledby': 'progress-text' }),
      h('span', { id: 'progress-text', class: 'progress-text' }, '')),
    h('p', { id: 'run-rate-limit', class: 'rate-limit', role: 'status', 'aria-live': 'polite', hidden: true }),
    h('p', { id: 'run-summary', class: 'run-summary' }),
    h('div', { id: 'run-facts' }),
    h('p', { id: 'run-announce', class: 'announce', role: 'status', 'aria-live': 'polite' }));

  const legend = h('ul', { class: 'legend', 'aria-label': 'Legend' },
    ['passed', 'failed', 'error', 'partial', 'running', 'pending', 'skipped'].map((s) =>
      h('li', null, h('span', { class: `legend-cell cell st-${s}`, 'aria-hidden': 'true' }, STATUS[s].sym), STATUS[s].label)),
    h('li', { class: 'scale' }, h('span', { 'aria-hidden': 'true', class: 'scale-bar' }), 'score 0% → 100%'));
  const scaleBar = /** @type {HTMLElement} */ (legend.querySelector('.scale-bar'));
  scaleBar.style.setProperty('--lo', scoreColor(0));
  scaleBar.style.setProperty('--mid', scoreColor(0.5));
  scaleBar.style.setProperty('--hi', scoreColor(1));

  const logList = h('ol', { id: 'log', class: 'log', role: 'log', 'aria-live': 'off', tabindex: '0', 'aria-label': 'Run log' });
  const follow = h('input', { type: 'checkbox', id: 'log-follow', checked: true });
  const logCard = h('section', { class: 'card', 'aria-labelledby': 'log-heading' },
    h('div', { class: 'card-head' }, h('h2', { id: 'log-heading' }, 'Log'),
      h('span', { class: 'inline-actions' },
        h('span', { class: 'check' }, follow, h('label', { for: 'log-follow' }, 'Follow')),
        h('button', { type: 'button', class: 'small', onclick: () => fill(logList) }, 'Clear'))),
    logList);

  fill(section,
    h('h1', null, 'Live run'),
    h('div', { class: 'live-grid' }, form, runCard),
    h('section', { class: 'card', 'aria-labelledby': 'matrix-heading' },
      h('div', { class: 'card-head' }, h('h2', { id: 'matrix-heading' }, 'Matrix'), legend),
      h('p', { class: 'hint' }, 'Each cell is a domain at a level. Select a cell to see its tests.'),
      matrixView.el),
    logCard);
  /**
   * The element under root that sel names, of the type its use expects.
   * @template {Element} E
   * @param {ParentNode} root
   * @param {string} sel
   * @returns {E}
   */
  const $ = (root, sel) => /** @type {E} */ (root.querySelector(sel));
  els = { form, logList, follow, runLine: $(runCard, '#run-line'), progress: $(runCard, '#run-progress'),
    progressText: $(runCard, '#progress-text'), announce: $(runCard, '#run-announce'),
    summary: $(runCard, '#run-summary'), facts: $(runCard, '#run-facts'),
    start: $(form, '#start-button'), stop: $(form, '#stop-button'), checks: $(form, '#domain-checks'),
    models: $(form, '#model-options'), rateLimit: $(runCard, '#run-rate-limit') };
  logList.addEventListener('scroll', () => {
    const atBottom = logList.scrollHeight - logList.scrollTop - logList.clientHeight < 24;
    if (!atBottom && follow.checked && !logList.dataset.autoscrolling) follow.checked = false;
  });
  renderButtons();
}

/** @param {Route} [route] ?agent=ID preselects that agent as the target */
export function show(route) {
  st.visible = true;
  st.needMatrix = true;
  loadAgents(new URLSearchParams(route && route.query).get('agent') || '');
  loadDomains();
  poke();
  followSweep(null);
}

export function hide() { st.visible = false; }

/**
 * Sets what the model field proposes (from GET /api/config/model).
 * @param {string} configModel
 * @param {string[] | undefined} available
 */
export function setModels(configModel, available) {
  st.configModel = configModel || '';
  if (!els.models) return;
  fill(els.models, ...(available || []).map((m) => h('option', { value: m })));
  const input = /** @type {HTMLInputElement} */ (els.form.querySelector('input[name="model"]'));
  input.placeholder = configModel ? `${configModel} (configured)` : 'the configured model';
}

/** Starts the poller; it runs for the life of the page. */
export function startPolling() { poke(); }

// One tick at a time: a poke while a tick waits on the server (the view
// shown again, a start or a stop) does not start a second one, which
// would read the log from the same cursor, append its lines twice, and
// re-arm a second timer for good; the tick in flight ticks again at once
// when it ends instead.
function poke() {
  if (st.ticking) { st.again = true; return; }
  clearTimeout(st.timer);
  st.timer = setTimeout(tick, 0);
}

async function tick() {
  st.ticking = true;
  st.again = false;
  let next = st.visible ? SLOW : IDLE;
  try {
    if (st.engineMissing) return;
    const started = st.started;
    /** @type {EngineStatus} */
    const status = await get('/api/status');
    // A run started from this page while the status was on its way: the
    // answer may predate it, and would announce its end at once. Ask again.
    if (started !== st.started) { st.again = true; return; }
    const running = status.status === 'running';
    if (running && status.run_id) st.watchRun = status.run_id;
    st.status = status;
    st.running = running;
    // Follow the log with a cursor (since) rather than draining it, so
    // that several dashboards (and curl) each see every line; one request
    // a tick, the recent tail when much is waiting.
    /** @type {LogPoll} */
    const logs = await get(`/api/log_poll?since=${st.logCursor}&tail=${LOG_TAIL}`);
    if (typeof logs.cursor === 'number') st.logCursor = logs.cursor;
    const ended = appendLog(logs.messages || []);
    if (st.visible && (running || st.needMatrix || ended || st.watchRun)) {
      st.matrix = await get('/api/test_matrix');
      st.needMatrix = false;
      matrixView.update(st.matrix);
    }
    // The same for a run started while the log or the matrix was asked for.
    if (started !== st.started) { st.again = true; return; }
    if (!running && st.matrix && st.matrix.run_id && st.matrix.run_id !== st.infoFor && st.visible) await loadRunInfo(st.matrix.run_id);
    if (!running && st.watchRun && !st.announced.has(st.watchRun)) {
      const id = st.watchRun;
      st.watchRun = null;
      await announceEnd(id);
    }
    renderStatus();
    next = running ? FAST : next;
  } catch (err) {
    if (err instanceof APIError && err.status === 404) {
      st.engineMissing = true;
      renderMissing();
      return;
    }
    // Unreachable server: app.js shows the banner; keep trying.
    next = Math.max(next, 3000);
  } finally {
    st.ticking = false;
    if (!st.engineMissing) st.timer = setTimeout(tick, st.again ? 0 : next);
  }
}

function renderMissing() {
  if (!els.runLine) return;
  fill(els.runLine, h('p', { class: 'error' }, 'This server does not run evaluations (it was started without an engine).'));
  els.start.disabled = true;
  els.stop.disabled = true;
  setChip('engine unavailable', 'idle');
}

// ---- Log ----

/**
 * Appends log lines; returns true when one is EVAL_COMPLETE.
 * @param {string[]} lines
 */
function appendLog(lines) {
  if (!lines.length || !els.logList) return false;
  let ended = false;
  const list = els.logList;
  const items = lines.map((line) => {
    if (line === 'EVAL_COMPLETE') {
      ended = true;
      return h('li', { class: 'log-end' }, h('span', { 'aria-hidden': 'true' }, '■ '), 'EVAL_COMPLETE — the run has ended');
    }
    const m = /^\[([^\]]*)\]\[L(\d+)\]\s?(.*)$/s.exec(line);
    const cls = /\b(failed|error)\b/.test(line) ? 'log-fail' : /\bpassed\b/.test(line) ? 'log-pass' : '';
    if (!m) return h('li', { class: cls }, line);
    return h('li', { class: cls }, h('span', { class: 'log-tag' }, `[${m[1]}][L${m[2]}]`), ' ', m[3]);
  });
  list.append(...items);
  while (list.childElementCount > MAX_LOG) /** @type {Element} */ (list.firstElementChild).remove();
  if (els.follow.checked) {
    list.dataset.autoscrolling = '1';
    list.scrollTop = list.scrollHeight;
    requestAnimationFrame(() => { delete list.dataset.autoscrolling; });
  }
  return ended;
}

// ---- Status ----

function renderStatus() {
  const s = st.status;
  if (!s || !els.runLine) return;
  const m = st.matrix;
  const running = s.status === 'running';
  let progress = 0;
  let total = 0;
  if (running) {
    progress = s.progress; total = s.total_tests;
  } else if (m && m.domains) {
    for (const levels of Object.values(m.domains)) for (const c of Object.values(levels)) { progress += c.done || 0; total += c.tests || 0; }
  }
  els.progress.max = Math.max(total, 1);
  els.progress.value = progress;
  els.progressText.textContent = running && s.preparing
    ? `preparing ${total} tests…`
    : total ? `${progress} / ${total} tests` : '';
  els.progress.dataset.progress = String(progress);
  els.progress.dataset.total = String(total);
  renderRateLimit(running ? s.rate_limit : undefined);
  fill(els.summary, ...summaryOf(m));
  const info = !running && st.runInfo && m && st.runInfo.run_id === m.run_id ? st.runInfo : null;
  fill(els.facts, info ? dl([
    ['Run', runBadge(info)],
    info.error ? ['Stopped because', h('span', { class: 'run-error' }, info.error)] : null,
    ['Overall score', info.complete === false && info.overall_score !== null
      ? `${fmtScore(info.overall_score)} (over the ${fmtNumber(info.passed + info.failed)} scored tests)` : fmtScore(info.overall_score)],
    typeof info.done_tests === 'number' ? ['Tests', `${fmtNumber(info.done_tests)} of ${fmtNumber(info.total_tests)} done: ${countsText(info)}`] : null,
    ['Model', info.model || '—'],
    ['Started', fmtTime(info.started_at)],
    ['Duration', fmtDuration(info.total_duration_ms)],
    ['Tokens', fmtNumber(info.total_tokens)],
  ], 'facts facts-grid facts-run') : null);

  const runID = running ? s.run_id : m && m.run_id;
  const label = running ? s.model_name : m && m.model_name;
  const runStatus = running ? 'running' : m && m.run_id ? m.status : 'idle';
  /** @type {Child[]} */
  const parts = [statusBadge(runStatus)];
  if (runID) {
    parts.push(' ', h('span', { class: 'run-label' }, label || ''), ' · run ', h('a', { href: `#/run/${seg(runID)}` }, runID));
  } else {
    parts.push(' ', h('span', { class: 'muted' }, 'No run yet: pick domains and press Start run.'));
  }
  if (running && s.current_domain) {
    parts.push(h('span', { class: 'run-now' }, ` · now ${(st.names.get(s.current_domain) || {}).name || s.current_domain}, level ${s.current_level}`));
  }
  fill(els.runLine, ...parts);
  els.runLine.dataset.status = runStatus;
  setChip(running ? `running ${progress}/${total}` : 'idle', running ? 'running' : 'idle');
  renderButtons();
}

/**
 * Says, during a run, which providers are throttling: the concurrency
 * their rate limits leave (halved on a rate-limited answer, grown back by
 * one per 20 answers) and the time waited out. Hidden when none is.
 * @param {Record<string, RateLimitState> | undefined} limits
 */
function renderRateLimit(limits) {
  const el = els.rateLimit;
  if (!el) return;
  const throttled = Object.entries(limits || {}).filter(([, r]) => r.throttled).sort(([a], [b]) => a.localeCompare(b));
  el.hidden = throttled.length === 0;
  el.dataset.throttled = throttled.map(([name]) => name).join(',');
  if (!throttled.length) { fill(el); return; }
  fill(el, ...throttled.flatMap(([name, r], i) => [
    i ? ' · ' : '',
    h('span', { class: 'rate-limit-provider' }, name),
    ` is rate limiting: ${r.concurrency_max ? `${r.concurrency} of ${r.concurrency_max}` : r.concurrency} requests at once, `
      + `${fmtNumber(Math.round(r.waiting_s))} s waited out`,
  ]));
}

/**
 * "7 passed · 2 failed · 3 errors of 12 finished · cells: 4 passed, 1
 * error, 1 partial" for a matrix: errors are never folded into failures.
 * @param {LiveMatrix | null} m
 * @returns {string[]}
 */
function summaryOf(m) {
  if (!m || !m.domains) return [];
  const t = { passed: 0, failed: 0, errors: 0, done: 0 };
  /** @type {Record<string, number>} */
  const cells = {};
  for (const levels of Object.values(m.domains)) {
    for (const c of Object.values(levels)) {
      t.passed += c.passed || 0;
      t.failed += c.failed || 0;
      t.errors += c.errors || 0;
      t.done += c.done || 0;
      cells[c.status] = (cells[c.status] || 0) + 1;
    }
  }
  if (!Object.keys(cells).length) return [];
  const order = ['passed', 'failed', 'error', 'partial', 'running', 'pending', 'skipped'];
  const parts = order.filter((s) => cells[s]).map((s) => `${cells[s]} ${s}`);
  return [`${countsText(t)} of ${t.done} finished · cells: ${parts.join(', ')}`];
}

/**
 * @param {string} text
 * @param {string} status
 */
function setChip(text, status) {
  const chip = document.getElementById('engine-chip');
  if (!chip) return;
  const sym = (STATUS[status] || STATUS.idle).sym;
  chip.className = `chip st-${status}`;
  fill(chip, h('span', { 'aria-hidden': 'true' }, `${sym} `), `Engine ${text}`);
}

function renderButtons() {
  if (!els.start) return;
  els.start.disabled = st.running || st.engineMissing;
  els.stop.disabled = !st.running;
}

/** @param {string} runID */
async function loadRunInfo(runID) {
  st.infoFor = runID;
  try {
    /** @type {HistoryPage} */
    const hist = await get('/api/history?limit=5&offset=0');
    st.runInfo = (hist.runs || []).find((r) => r.run_id === runID) || null;
  } catch { st.runInfo = null; }
}

/** @param {string} runID */
async function announceEnd(runID) {
  st.announced.add(runID);
  /** @type {LiveMatrix} */
  const matrix = await get('/api/test_matrix');
  st.matrix = matrix;
  matrixView.update(matrix);
  /** @type {RunInfo | null} */
  let info = null;
  try {
    /** @type {HistoryPage} */
    const hist = await get('/api/history?limit=5&offset=0');
    info = (hist.runs || []).find((r) => r.run_id === runID) || null;
  } catch { /* the matrix is enough */ }
  let passed = 0;
  let total = 0;
  for (const levels of Object.values(matrix.domains || {})) for (const c of Object.values(levels)) { passed += c.passed || 0; total += c.tests || 0; }
  st.runInfo = info;
  st.infoFor = runID;
  const status = info ? info.status : matrix.status;
  // A run that is not complete says so first, and its score is said to be
  // over what finished: "stopped — 4 of 12 tests", never "completed, 100%".
  const state = info && typeof info.done_tests === 'number' ? runState(info).text : status;
  const counts = info && typeof info.done_tests === 'number' ? countsText(info) : `${passed} of ${total} tests passed`;
  const scoreText = info && info.complete === false && info.overall_score !== null
    ? `score ${fmtScore(info.overall_score)} over the tests scored` : `overall score ${fmtScore(info ? info.overall_score : null)}`;
  const text = `Run ${runID} ${state}: ${scoreText}, ${counts}` +
    (info && info.error ? ` (${info.error})` : '') + (info ? `, ${fmtDuration(info.total_duration_ms)}.` : '.');
  els.announce.textContent = text;
  els.announce.dataset.run = runID;
  els.announce.dataset.status = status || '';
  toast(text, info && info.complete ? 'success' : 'info');
}

// ---- Domains ----

// Counts the reads of the domains: only the latest one's answer is shown.
let domainReads = 0;

async function loadDomains() {
  const mine = ++domainReads;
  try {
    /** @type {{domains: Domain[]}} */
    const { domains } = await get('/api/settings/domains');
    if (mine !== domainReads) return;
    st.domains = domains || [];
    st.names = new Map(st.domains.map((d) => [d.id, { name: d.name, color: d.color }]));
    matrixView.setNames(st.names);
    renderDomainChecks();
  } catch (err) {
    if (mine !== domainReads) return;
    fill(els.checks, h('span', { class: 'error' }, `Could not load the domains: ${errorText(err)}`));
  }
}

function renderDomainChecks() {
  const previous = new Map([...els.checks.querySelectorAll('input')].map((i) => [i.value, i.checked]));
  if (!st.domains.length) {
    fill(els.checks, h('span', { class: 'muted' }, 'No domains yet: add some under ', h('a', { href: '#/definitions' }, 'Definitions'), '.'));
    return;
  }
  fill(els.checks, ...st.domains.map((d) => {
    const id = `dom-${d.id}`;
    const checked = previous.has(d.id) ? previous.get(d.id) : d.enabled;
    return h('span', { class: 'check' },
      h('input', { type: 'checkbox', id, name: 'domains', value: d.id, checked, dataset: { type: 'list', enabled: d.enabled ? '1' : '0' } }),
      h('label', { for: id }, d.name || d.id, d.enabled ? null : h('span', { class: 'muted' }, ' (disabled)')));
  }));
}

/** @param {boolean} on */
function checkAll(on) {
  for (const i of els.checks.querySelectorAll('input')) i.checked = on;
}

// ---- Actions ----

async function start() {
  const form = els.form;
  clearErrors(form);
  const v = formValues(form);
  const picked = v.domains || [];
  if (!picked.length) {
    showErrors(form, new FieldError('domains', 'pick at least one domain'));
    return;
  }
  const enabled = st.domains.filter((d) => d.enabled).map((d) => d.id).sort();
  /** @type {{model_name?: string, model?: string, agent_id?: string, target_id?: string, domains?: string[] | null, cache?: boolean, max_cost_usd?: number}} */
  const body = { model_name: v.model_name || 'default' };
  if (v.model) body.model = v.model;
  if (typeof v.max_cost_usd === 'number' && v.max_cost_usd > 0) body.max_cost_usd = v.max_cost_usd;
  if (v.cache) body.cache = true;
  try { Object.assign(body, targetBody()); } catch (err) { showErrors(form, err); return; }
  // Labelled with the agent's name, or the target's id.
  if ((body.agent_id || body.target_id) && body.model_name === 'default') delete body.model_name;
  if (body.target_id) delete body.cache; // a target's answers are not cached
  // Exactly the enabled domains: send null, as "all enabled domains".
  body.domains = JSON.stringify([...picked].sort()) === JSON.stringify(enabled) ? null : picked;
  if (v.sweep) { await startSweep(form, body, v.models || ''); return; }
  await busy(form, async () => {
    try {
      /** @type {StartResult} */
      const res = await post('/api/start', body);
      st.watchRun = res.run_id;
      st.running = true;
      st.started++;
      st.needMatrix = true;
      els.announce.textContent = `Run ${res.run_id} started.`;
      delete els.announce.dataset.run;
      toast(`Run ${res.run_id} started.`, 'success');
    } catch (err) {
      showErrors(form, err);
    }
  });
  renderButtons();
  poke();
}

async function stop() {
  try {
    /** @type {MessageResult} */
    const res = await post('/api/stop');
    toast(res.message || 'Stopped.', res.success ? 'success' : 'info');
  } catch (err) {
    toast(`Stop failed: ${errorText(err)}`, 'error');
  }
  st.needMatrix = true;
  poke();
}

async function reset() {
  const ok = await confirmDialog('Reset is for a stuck engine: an active run is cancelled at once and recorded as aborted. Its finished results are kept.',
    { title: 'Reset the engine?', confirm: 'Reset engine' });
  if (!ok) return;
  try {
    /** @type {MessageResult} */
    const res = await post('/api/reset');
    toast(res.message || 'Engine reset.', 'success');
  } catch (err) {
    toast(`Reset failed: ${errorText(err)}`, 'error');
  }
  st.needMatrix = true;
  poke();
}

// ---- Sweeps ----

/** @type {ReturnType<typeof setTimeout> | undefined} */
let sweepTimer;
// Counts the calls of followSweep: only the latest one goes on.
let sweepFollow = 0;
// The sweep this page started: when it completes, its comparison opens.
/** @type {string | null} */
let ownSweep = null;

/**
 * The sweep option of the start form: a checkbox, and the models it runs,
 * shown when it is ticked. A sweep labels each run by its model, so the
 * label and model fields are disabled meanwhile.
 */
function sweepFields() {
  const models = field('models', 'Models', { placeholder: 'model-a, model-b, model-c', omitEmpty: true,
    hint: 'Comma-separated, 2 to 20: one run each, one after another, labelled by its model. The first is the baseline of the comparison that opens when the sweep completes.' });
  models.hidden = true;
  const box = field('sweep', 'Sweep: several models', { type: 'checkbox' });
  const check = /** @type {HTMLInputElement} */ (box.querySelector('input'));
  check.id = 'sweep-check';
  /** @type {HTMLLabelElement} */ (box.querySelector('label')).htmlFor = 'sweep-check';
  const input = /** @type {HTMLInputElement} */ (models.querySelector('input'));
  input.id = 'sweep-models';
  /** @type {HTMLLabelElement} */ (models.querySelector('label')).htmlFor = 'sweep-models';
  input.disabled = true;
  input.setAttribute('list', 'model-options');
  check.addEventListener('change', () => {
    const on = check.checked;
    models.hidden = !on;
    input.disabled = !on;
    const form = /** @type {HTMLFormElement | null} */ (check.form);
    for (const name of ['model_name', 'model']) {
      const other = /** @type {HTMLInputElement | null} */ (form && form.querySelector(`input[name="${name}"]`));
      if (other) other.disabled = on;
    }
    /** @type {HTMLButtonElement | null} */
    const button = form && form.querySelector('#start-button');
    if (button) button.textContent = on ? '▶ Start sweep' : '▶ Start run';
    if (on) input.focus();
  });
  return h('div', { class: 'sweep-fields' }, box, models, h('p', { id: 'sweep-status', class: 'sweep-status', role: 'status', 'aria-live': 'polite' }));
}

/**
 * Starts a sweep of the models listed in text with the rest of a start
 * body (its label and model are the models').
 * @param {HTMLFormElement} form
 * @param {Record<string, unknown>} body
 * @param {string} text
 */
async function startSweep(form, body, text) {
  const models = text.split(',').map((m) => m.trim()).filter(Boolean);
  if (models.length < 2) {
    showErrors(form, new FieldError('models', 'list at least two models, separated by commas'));
    return;
  }
  const rest = Object.fromEntries(Object.entries(body).filter(([k]) => k !== 'model' && k !== 'model_name'));
  await busy(form, async () => {
    try {
      /** @type {SweepStarted} */
      const res = await post('/api/sweep', { ...rest, models });
      ownSweep = res.sweep_id;
      st.running = true;
      st.started++;
      st.needMatrix = true;
      toast(`Sweep started: ${res.models.length} models, one run each.`, 'success');
      followSweep(res.sweep_id);
    } catch (err) {
      showErrors(form, err);
    }
  });
  renderButtons();
  poke();
}

/**
 * Follows GET /api/sweep while a sweep runs, showing how far it is. When
 * the sweep this page started completes, its comparison opens (or, with
 * another view shown, a toast links to it). With id null, follows the
 * sweep this page started, else a sweep only if one is running.
 * @param {string | null} id
 */
async function followSweep(id) {
  const mine = ++sweepFollow;
  clearTimeout(sweepTimer);
  id = id ?? ownSweep;
  const line = document.getElementById('sweep-status');
  /** @type {Sweep} */
  let sw;
  try {
    sw = await get('/api/sweep');
  } catch (err) {
    if (mine !== sweepFollow || (err instanceof APIError && err.status === 404)) return; // no sweep yet
    sweepTimer = setTimeout(() => followSweep(id), 3000);
    return;
  }
  if (mine !== sweepFollow || (id !== null && sw.sweep_id !== id)) return;
  const n = sw.models.length;
  if (sw.status === 'running') {
    if (line) line.textContent = `Sweep: model ${sw.run_ids.length} of ${n}${sw.current ? ` (${sw.current})` : ''}.`;
    sweepTimer = setTimeout(() => followSweep(sw.sweep_id), FAST);
    return;
  }
  if (id === null) return; // a sweep that ended before this page looked
  const hash = `#/compare/${sw.run_ids.map(seg).join('/')}`;
  const started = ownSweep === sw.sweep_id;
  ownSweep = null;
  if (sw.status === 'completed') {
    if (line) line.textContent = `Sweep completed: ${n} runs.`;
    if (started && st.visible) { location.hash = hash; return; }
    toast(h('span', null, `Sweep completed: ${n} runs. `, h('a', { href: hash }, 'Compare them')), 'success');
    return;
  }
  const why = sw.error ? ` (${sw.error})` : '';
  if (line) line.textContent = `Sweep stopped after ${sw.run_ids.length} of ${n} runs${why}.`;
  toast(h('span', null, `Sweep stopped after ${sw.run_ids.length} of ${n} runs${why}. `,
    sw.run_ids.length > 1 ? h('a', { href: hash }, 'Compare them') : null), 'info');
}
