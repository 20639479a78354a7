// @ts-check
/** @import { Agent } from '../../../types/api' */

// The start form's target: the bare model, or an agent whose pipeline
// (system prompt, knowledge base, tools, model) each test goes through.
// The agent decides its model, so the model field is disabled while an
// agent is the target (the server refuses both).

import { get, APIError } from './api.js';
import { h, field, fill, errorText, FieldError } from './ui.js';

/** @type {{ el: HTMLElement | null, kind: HTMLSelectElement | null, agent: HTMLSelectElement | null,
 *   model: HTMLInputElement | null, want: string }} */
const st = { el: null, kind: null, agent: null, model: null, want: '' };

/**
 * The target fields: "Target: model | agent" and the agent selector. model
 * is the form's model input, disabled while an agent is the target.
 * @param {HTMLInputElement} model
 * @returns {HTMLElement}
 */
export function targetField(model) {
  const kind = field('target', 'Target', { type: 'select', value: 'model',
    options: [{ value: 'model', label: 'Model' }, { value: 'agent', label: 'Agent' }],
    hint: 'An agent is evaluated through its own system prompt, knowledge base and tools; the domains\u2019 system prompts are not used.' });
  const agent = field('agent_id', 'Agent', { type: 'select', options: [] });
  st.kind = /** @type {HTMLSelectElement} */ (kind.querySelector('select'));
  st.agent = /** @type {HTMLSelectElement} */ (agent.querySelector('select'));
  st.model = model;
  st.kind.id = 'target-kind';
  st.agent.id = 'target-agent';
  st.kind.addEventListener('change', sync);
  st.el = h('div', { class: 'target-fields' }, kind, agent);
  sync();
  return st.el;
}

/** Shows the agent selector and disables the model field, or the reverse. */
function sync() {
  if (!st.kind || !st.agent || !st.model) return;
  const agent = st.kind.value === 'agent';
  st.agent.disabled = !agent;
  const box = /** @type {HTMLElement} */ (st.agent.closest('.field'));
  box.hidden = !agent;
  st.model.disabled = agent;
}

/**
 * Loads the agents into the selector; with want, makes that agent the
 * target (the agent page's "Evaluate this agent" links here so).
 * @param {string} [want]
 */
export async function loadAgents(want) {
  if (want) st.want = want;
  if (!st.agent || !st.kind) return;
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
 * The target's part of the start body: {agent_id} for an agent, nothing
 * for the model. Throws a FieldError when the agent target has no agent.
 * @returns {{agent_id?: string}}
 */
export function targetBody() {
  if (!st.kind || st.kind.value !== 'agent' || !st.agent) return {};
  if (!st.agent.value) throw new FieldError('agent_id', 'pick an agent (create one under Agents)');
  return { agent_id: st.agent.value };
}
