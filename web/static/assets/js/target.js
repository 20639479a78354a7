// @ts-check
/** @import { Agent, Target } from '../../../types/api' */

// The start form's target: the bare model, an agent whose pipeline
// (system prompt, knowledge base, tools, model) each test goes through,
// or a black-box target (targets/<id>.yaml) each user turn is sent to
// over HTTP. An agent or a target decides its model, so the model field
// is disabled while one is the target (the server refuses both).

import { get, APIError } from './api.js';
import { h, field, fill, errorText, FieldError } from './ui.js';

/** @type {{ el: HTMLElement | null, kind: HTMLSelectElement | null, agent: HTMLSelectElement | null,
 *   box: HTMLSelectElement | null, model: HTMLInputElement | null, want: string }} */
const st = { el: null, kind: null, agent: null, box: null, model: null, want: '' };

/**
 * The target fields: "Target: model | agent" and the agent selector. model
 * is the form's model input, disabled while an agent is the target.
 * @param {HTMLInputElement} model
 * @returns {HTMLElement}
 */
export function targetField(model) {
  const kind = field('target', 'Target', { type: 'select', value: 'model',
    options: [{ value: 'model', label: 'Model' }, { value: 'agent', label: 'Agent' }, { value: 'box', label: 'Black-box target' }],
    hint: 'An agent is evaluated through its own system prompt, knowledge base and tools; a black-box target gets each user turn over HTTP. The domains\u2019 system prompts are not used.' });
  const agent = field('agent_id', 'Agent', { type: 'select', options: [] });
  const box = field('target_id', 'Black-box target', { type: 'select', options: [] });
  st.kind = /** @type {HTMLSelectElement} */ (kind.querySelector('select'));
  st.agent = /** @type {HTMLSelectElement} */ (agent.querySelector('select'));
  st.box = /** @type {HTMLSelectElement} */ (box.querySelector('select'));
  st.model = model;
  rename(st.kind, 'target-kind');
  rename(st.agent, 'target-agent');
  rename(st.box, 'target-box');
  st.kind.addEventListener('change', sync);
  st.el = h('div', { class: 'target-fields' }, kind, agent, box);
  sync();
  return st.el;
}

/**
 * Gives a field's control a fixed id, its label following: a label that
 * names no control leaves the control without a name for assistive
 * technology.
 * @param {HTMLElement} control
 * @param {string} id
 */
function rename(control, id) {
  const label = /** @type {HTMLLabelElement | null} */ (control.closest('.field')?.querySelector(`label[for="${control.id}"]`) ?? null);
  control.id = id;
  if (label) label.htmlFor = id;
}

/** Shows the selector of the kind of target chosen, and disables the
 * model field unless the model is the target. */
function sync() {
  if (!st.kind || !st.agent || !st.box || !st.model) return;
  for (const [sel, kind] of /** @type {[HTMLSelectElement, string][]} */ ([[st.agent, 'agent'], [st.box, 'box']])) {
    sel.disabled = st.kind.value !== kind;
    /** @type {HTMLElement} */ (sel.closest('.field')).hidden = sel.disabled;
  }
  st.model.disabled = st.kind.value !== 'model';
}

/** Loads the black-box targets into their selector. */
async function loadTargets() {
  if (!st.box) return;
  const sel = st.box;
  try {
    /** @type {{targets: Target[]}} */
    const { targets } = await get('/api/settings/targets?limit=200');
    const keep = sel.value;
    fill(sel, ...(targets || []).map((t) => h('option', { value: t.id }, t.description ? `${t.id} \u2014 ${t.description}` : t.id)));
    if (keep && (targets || []).some((t) => t.id === keep)) sel.value = keep;
  } catch (err) {
    fill(sel, h('option', { value: '' }, `Could not load the targets: ${errorText(err)}`));
  }
}

/**
 * Loads the agents into the selector; with want, makes that agent the
 * target (the agent page's "Evaluate this agent" links here so).
 * @param {string} [want]
 */
export async function loadAgents(want) {
  if (want) st.want = want;
  if (!st.agent || !st.kind) return;
  void loadTargets();
  const sel = st.agent;
  try {
    /** @type {{agents: Agent[]}} */
    const { agents } = await get('/api/agents');
    const keep = st.want || sel.value;
    fill(sel, ...(agents || []).map((a) => h('option', { value: a.id }, a.name && a.name !== a.id ? `${a.name} (${a.id})` : a.id)));
    if (keep && (agents || []).some((a) => a.id === keep)) sel.value = keep;
    if (st.want) { st.kind.value = 'agent'; st.want = ''; }
  } catch (err) {
    // A server without the agent endpoints: the model is the only target.
    if (err instanceof APIError && err.status === 404) { st.kind.value = 'model'; st.kind.disabled = true; }
    else fill(sel, h('option', { value: '' }, `Could not load the agents: ${errorText(err)}`));
  }
  sync();
}

/**
 * The target's part of the start body: {agent_id} for an agent,
 * {target_id} for a black-box target, nothing for the model. Throws a
 * FieldError when the kind chosen has nothing picked.
 * @returns {{agent_id?: string, target_id?: string}}
 */
export function targetBody() {
  if (!st.kind) return {};
  if (st.kind.value === 'box' && st.box) {
    if (!st.box.value) throw new FieldError('target_id', 'pick a target (a file targets/<id>.yaml of the definitions)');
    return { target_id: st.box.value };
  }
  if (st.kind.value !== 'agent' || !st.agent) return {};
  if (!st.agent.value) throw new FieldError('agent_id', 'pick an agent (create one under Agents)');
  return { agent_id: st.agent.value };
}
