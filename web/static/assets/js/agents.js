// @ts-check
/** @import { Agent, AgentDetail, Channel, ChannelAction, ChatReply, KBContent, KBFile, RetrievalInfo, Source, Tool, ToolCallRecord, Usage } from '../../../types/api' */
/** @import { Route } from '../../../types/views' */

// Agents: list, create and edit; tools, knowledge-base files, channels
// and a chat box (/api/agents/...).

import { get, post, put, del, seg, APIError } from './api.js';
import { h, field, formValues, showErrors, clearErrors, busy, confirmDialog, toast, errorText, fmtBytes, fmtTime, pre, fill,
  FieldError } from './ui.js';
import { conversationsCard } from './conversations.js';
import { kbSearchCard } from './kbsearch.js';
import { sourcesView } from './sources.js';

/** @type {HTMLElement} */
let section;
const USER_KEY = 'gauntlet.chatUser';
/**
 * A message of the chat box.
 * @typedef {{role: 'user' | 'agent' | 'error', text: string, tools?: ToolCallRecord[], usage?: Usage,
 *   sources?: Source[], retrieval?: RetrievalInfo | null}} ChatMessage
 */
// Messages exchanged from this page, per agent and user (the server keeps
// the whole conversation: see the Conversations card, conversations.js).
/** @type {Map<string, ChatMessage[]>} */
const transcripts = new Map();

/** @param {HTMLElement} s */
export function mount(s) { section = s; }
export function hide() {}

/**
 * route: ['agents', id?]
 * @param {Route} route
 */
export async function show(route) {
  const id = route[1];
  const list = h('div', { class: 'side-list' });
  const main = h('div', { class: 'editor' }, h('p', { class: 'muted' }, 'Loading…'));
  fill(section, h('h1', null, 'Agents'),
    h('p', { class: 'hint' }, 'Agents answer users through the API, the chat below, or messaging channels, with their own system prompt, tools and knowledge base.'),
    h('div', { class: 'split' }, list, main));
  /** @type {Agent[]} */
  let agents;
  try {
    ({ agents } = /** @type {{agents: Agent[]}} */ (await get('/api/agents')));
  } catch (err) {
    fill(main, h('p', { class: 'error', role: 'alert' },
      err instanceof APIError && err.status === 404 ? 'This server does not manage agents.' : `Could not load the agents: ${errorText(err)}`));
    fill(list);
    return;
  }
  fill(list, h('h2', { class: 'side-title' }, 'Agents'),
    h('a', { class: 'button small primary', href: '#/agents/new' }, '+ New agent'),
    agents.length ? h('ul', { class: 'nav-list' }, agents.map((a) => h('li', null,
      h('a', { href: `#/agents/${seg(a.id)}`, 'aria-current': a.id === id ? 'true' : null },
        h('span', null, a.name || a.id), h('span', { class: 'did' }, a.id))))) : h('p', { class: 'muted' }, 'None yet.'));
  if (!id) {
    fill(main, h('p', { class: 'muted' }, agents.length ? 'Pick an agent.' : 'No agents yet: create one.'));
    return;
  }
  if (id === 'new') { fill(main, agentForm(null)); /** @type {HTMLInputElement} */ (main.querySelector('input[name="id"]')).focus(); return; }
  try {
    await showAgent(main, id);
  } catch (err) {
    fill(main, h('p', { class: 'error', role: 'alert' }, err instanceof APIError && err.status === 404 ? `There is no agent ${id}.` : `Could not load agent ${id}: ${errorText(err)}`));
  }
}

/** @param {Partial<Agent> | null} a null for a new agent */
function agentForm(a) {
  const isNew = !a;
  a = a || {};
  const form = h('form', { class: 'card stack', id: 'agent-form', novalidate: true },
    h('h2', null, isNew ? 'New agent' : 'Settings'),
    h('div', { class: 'grid2' },
      field('id', 'Id', { value: a.id, disabled: !isNew, mono: true, hint: isNew ? 'Letters, digits and _ only.' : null }),
      field('name', 'Name', { value: a.name }),
      field('model', 'Model', { value: a.model || '', placeholder: 'the configured model', hint: 'Empty: the configured model.' })),
    field('description', 'Description', { type: 'textarea', rows: 2, value: a.description }),
    field('system_prompt', 'System prompt', { type: 'textarea', rows: 4, value: a.system_prompt }),
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, isNew ? 'Create agent' : 'Save settings'),
      isNew ? null : h('a', { class: 'button', id: 'evaluate-agent', href: `#/live?agent=${seg(/** @type {string} */ (a.id))}`,
        title: 'Start a run whose tests go through this agent: its system prompt, knowledge base, tools and model' }, '▶ Evaluate this agent'),
      isNew ? null : h('button', { type: 'button', class: 'danger', onclick: () => deleteAgent(/** @type {Agent} */ (a)) }, 'Delete agent')));
  /** @type {HTMLInputElement} */ (form.querySelector('input[name="model"]')).dataset.type = 'nullable';
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    save(form, async () => {
      const body = formValues(form);
      /** @type {Agent} */
      const saved = isNew ? await post('/api/agents', body) : await put(`/api/agents/${seg(/** @type {string} */ (a.id))}`, body);
      toast(`Agent ${saved.id} saved.`, 'success');
      location.hash = `#/agents/${seg(saved.id)}`;
      if (!isNew) window.dispatchEvent(new HashChangeEvent('hashchange'));
    });
  });
  return form;
}

/**
 * @param {HTMLElement} form
 * @param {() => Promise<void>} fn
 */
async function save(form, fn) {
  clearErrors(form);
  await busy(form, async () => { try { await fn(); } catch (err) { showErrors(form, err); } });
}

/** @param {Agent} a */
async function deleteAgent(a) {
  if (!(await confirmDialog(`Delete the agent “${a.name || a.id}”? Its channels are stopped and removed; its conversations and knowledge-base files are deleted.`,
    { title: 'Delete agent?', confirm: 'Delete agent' }))) return;
  try {
    await del(`/api/agents/${seg(a.id)}`);
    toast(`Agent ${a.id} deleted.`, 'success');
    location.hash = '#/agents';
  } catch (err) { toast(`Could not delete the agent: ${errorText(err)}`, 'error'); }
}

/**
 * @param {HTMLElement} main
 * @param {string} id
 */
async function showAgent(main, id) {
  const [a, toolsRes] = await Promise.all([/** @type {Promise<AgentDetail>} */ (get(`/api/agents/${seg(id)}`)),
    /** @type {Promise<{tools: Tool[]}>} */ (get('/api/settings/tools')).catch(() => ({ tools: [] }))]);
  const tools = toolsRes.tools || [];
  fill(main,
    h('h2', { class: 'agent-title' }, a.name || a.id, ' ', h('code', { class: 'did' }, a.id)),
    h('p', { class: 'muted' }, `Created ${fmtTime(a.created_at)}`),
    chatCard(a),
    conversationsCard(a),
    agentForm(a),
    toolsCard(a, tools),
    kbCard(a),
    kbSearchCard(a),
    channelsCard(a));
}

// ---- Tools ----

/**
 * @param {AgentDetail} a
 * @param {Tool[]} tools
 */
function toolsCard(a, tools) {
  const form = h('form', { class: 'card stack', id: 'agent-tools-form', novalidate: true },
    h('h2', null, 'Tools'),
    field('tools', 'Tools the agent may call', { type: 'checks', value: a.tools || [],
      options: tools.map((t) => ({ value: t.id, label: t.name && t.name !== t.id ? `${t.name} (${t.id})` : t.id })),
      empty: 'No tools defined: add some under Definitions → Tools.' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save tools')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    save(form, async () => {
      /** @type {{tools: string[]}} */
      const res = await put(`/api/agents/${seg(a.id)}/tools`, { tools: formValues(form).tools || [] });
      toast(`Tools saved: ${(res.tools || []).join(', ') || 'none'}.`, 'success');
    });
  });
  return form;
}

// ---- Knowledge base ----

/** @param {Agent} a */
function kbCard(a) {
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading files…'));
  const viewer = h('div', { class: 'kb-viewer', id: 'kb-viewer' });
  const file = h('input', { type: 'file', name: 'file', id: 'kb-file', accept: '.txt,.md,.markdown,.csv,.json,.yaml,.yml,text/*,application/json' });
  const upload = h('form', { class: 'inline-form', id: 'kb-upload', novalidate: true },
    h('div', { class: 'field', dataset: { field: 'file' } }, h('label', { for: 'kb-file' }, 'Add a text file (up to 10 MiB)'), file),
    h('button', { type: 'submit', class: 'primary' }, '⇧ Upload'));
  const card = h('section', { class: 'card', 'aria-labelledby': 'kb-heading' },
    h('h2', { id: 'kb-heading' }, 'Knowledge base'),
    h('p', { class: 'hint' }, 'Text files the agent answers from: whole when they fit, otherwise the best-matching chunks.'),
    upload, body, viewer);
  const refresh = async () => {
    try {
      /** @type {{files: KBFile[]}} */
      const { files } = await get(`/api/agents/${seg(a.id)}/kb`);
      fill(body, files.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'list kb-files' },
        h('thead', null, h('tr', null, ['File', 'Size', 'Modified', 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', null, files.map((f) => h('tr', { dataset: { file: f.filename } },
          h('td', null, h('code', null, f.filename)),
          h('td', { class: 'num' }, fmtBytes(f.size)),
          h('td', null, new Date(f.modified * 1000).toLocaleString()),
          h('td', { class: 'row-actions' },
            h('button', { type: 'button', class: 'small', 'aria-label': `View ${f.filename}`, onclick: () => view(f.filename) }, 'View'),
            h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete ${f.filename}`, onclick: () => remove(f.filename) }, 'Delete')))))))
        : h('p', { class: 'muted' }, 'No files yet.'));
    } catch (err) { fill(body, h('p', { class: 'error' }, `Could not list the files: ${errorText(err)}`)); }
  };
  const view = async (/** @type {string} */ name) => {
    try {
      /** @type {KBContent} */
      const f = await get(`/api/agents/${seg(a.id)}/kb/${seg(name)}`);
      fill(viewer, h('div', { class: 'card-head' }, h('h3', null, f.filename),
        h('button', { type: 'button', class: 'small', onclick: () => fill(viewer) }, 'Close')), pre(f.content));
      /** @type {HTMLButtonElement} */ (viewer.querySelector('button')).focus();
    } catch (err) { toast(`Could not read ${name}: ${errorText(err)}`, 'error'); }
  };
  const remove = async (/** @type {string} */ name) => {
    if (!(await confirmDialog(`Delete ${name} from the knowledge base?`, { title: 'Delete file?', confirm: 'Delete file' }))) return;
    try { await del(`/api/agents/${seg(a.id)}/kb/${seg(name)}`); toast(`${name} deleted.`, 'success'); fill(viewer); refresh(); } catch (err) { toast(`Could not delete ${name}: ${errorText(err)}`, 'error'); }
  };
  upload.addEventListener('submit', (e) => {
    e.preventDefault();
    save(upload, async () => {
      const files = /** @type {FileList} */ (file.files);
      if (!files.length) throw new FieldError('file', 'choose a file first');
      const fd = new FormData();
      fd.append('file', files[0]);
      /** @type {KBFile} */
      const res = await post(`/api/agents/${seg(a.id)}/kb`, fd);
      toast(`${res.filename} uploaded (${fmtBytes(res.size)}).`, 'success');
      upload.reset();
      refresh();
    });
  });
  refresh();
  return card;
}

// ---- Channels ----

/** @type {Record<string, [name: string, label: string, type: 'password' | 'text' | 'checkbox'][]>} */
const CHANNEL_FIELDS = {
  telegram: [['config.bot_token', 'Bot token', 'password'], ['config.api_url', 'Bot API server URL (optional)', 'text'],
    ['config.show_sources', 'End replies with their knowledge-base sources', 'checkbox']],
  webhook: [['config.secret', 'Signing secret', 'password'], ['config.callback_url', 'Callback URL (optional)', 'text']],
};

/** @param {Agent} a */
function channelsCard(a) {
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading channels…'));
  const formBox = h('div');
  const card = h('section', { class: 'card', 'aria-labelledby': 'channels-heading' },
    h('div', { class: 'card-head' }, h('h2', { id: 'channels-heading' }, 'Channels'),
      h('button', { type: 'button', class: 'small primary', onclick: () => showForm(null) }, '+ New channel')),
    body, formBox);
  // A channel's start answers "running" at once; a failure (a refused
  // token) is reported later: the list is read again every few seconds
  // while a channel is not stopped and the card is shown, and redrawn
  // when it changed.
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  let shown = '';
  const refresh = async () => {
    clearTimeout(timer);
    try {
      /** @type {{channels: Channel[]}} */
      const { channels } = await get(`/api/agents/${seg(a.id)}/channels`);
      if (channels.some((c) => c.status !== 'stopped')) timer = setTimeout(() => { if (card.isConnected) refresh(); }, 2000);
      if (JSON.stringify(channels) === shown) return;
      shown = JSON.stringify(channels);
      fill(body, channels.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'list channels' },
        h('thead', null, h('tr', null, ['Channel', 'Type', 'Status', 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', null, channels.map((c) => h('tr', { dataset: { channel: c.id, status: c.status } },
          h('td', null, c.name || c.id, h('div', { class: 'did' }, c.id),
            c.type === 'webhook' ? h('div', { class: 'hint' }, 'POST ', h('code', null, `${location.origin}/api/channels/${c.id}/webhook`)) : null),
          h('td', null, c.type),
          h('td', null, channelStatus(c), c.last_error ? h('div', { class: 'error small-text' }, c.last_error) : null),
          h('td', { class: 'row-actions' },
            c.status === 'running'
              ? h('button', { type: 'button', class: 'small', onclick: () => act(c, 'stop') }, '■ Stop')
              : h('button', { type: 'button', class: 'small', onclick: () => act(c, 'start') }, '▶ Start'),
            h('button', { type: 'button', class: 'small', onclick: () => showForm(c) }, 'Edit'),
            h('button', { type: 'button', class: 'small danger', onclick: () => remove(c) }, 'Delete')))))))
        : h('p', { class: 'muted' }, 'No channels yet.'));
    } catch (err) { shown = ''; fill(body, h('p', { class: 'error' }, `Could not list the channels: ${errorText(err)}`)); }
  };
  const act = async (/** @type {Channel} */ c, /** @type {'start' | 'stop'} */ what) => {
    try {
      /** @type {ChannelAction} */
      const res = await post(`/api/agents/${seg(a.id)}/channels/${seg(c.id)}/${what}`);
      toast(`Channel ${c.name || c.id}: ${res.status}${res.last_error ? ` (${res.last_error})` : ''}.`, res.status === 'error' ? 'error' : 'success');
    } catch (err) { toast(`Could not ${what} the channel: ${errorText(err)}`, 'error'); }
    refresh();
  };
  const remove = async (/** @type {Channel} */ c) => {
    if (!(await confirmDialog(`Delete the channel “${c.name || c.id}”? It is stopped first.`, { title: 'Delete channel?', confirm: 'Delete channel' }))) return;
    try { await del(`/api/agents/${seg(a.id)}/channels/${seg(c.id)}`); toast('Channel deleted.', 'success'); refresh(); } catch (err) { toast(`Could not delete: ${errorText(err)}`, 'error'); }
  };
  const showForm = (/** @type {Channel | null} */ c) => {
    const isNew = !c;
    const type = h('select', { id: 'channel-type', name: 'type', disabled: !isNew },
      ['telegram', 'webhook', 'other'].map((t) => h('option', { value: t }, t)));
    type.value = isNew ? 'telegram' : (CHANNEL_FIELDS[c.type] ? c.type : 'other');
    const specific = h('div', { class: 'grid2' });
    const form = h('form', { class: 'stack channel-form', id: 'channel-form', novalidate: true },
      h('h3', null, isNew ? 'New channel' : `Edit channel ${c.name || c.id}`),
      h('div', { class: 'grid2' },
        h('div', { class: 'field', dataset: { field: 'type' } }, h('label', { for: 'channel-type' }, 'Type'), type),
        field('name', 'Name', { value: c ? c.name : '' })),
      specific,
      h('p', { class: 'hint' }, isNew ? 'Channels are created stopped: start them from the list.' : 'Secrets show as ******** ; leave them so to keep the stored value.'),
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, isNew ? 'Create channel' : 'Save channel'),
        h('button', { type: 'button', onclick: () => fill(formBox) }, 'Cancel')));
    const renderSpecific = () => {
      const t = type.value;
      const cfg = (c && c.config) || {};
      if (CHANNEL_FIELDS[t]) {
        fill(specific, ...CHANNEL_FIELDS[t].map(([name, label, kind]) =>
          field(name, label, { type: kind, value: cfg[name.slice(7)] ?? '', omitEmpty: true, mono: true })));
      } else {
        fill(specific,
          field('custom_type', 'Plugin channel type', { value: c ? c.type : '', mono: true }),
          field('config', 'Config (JSON)', { type: 'json', rows: 4, value: c ? c.config : {} }));
      }
    };
    type.addEventListener('change', renderSpecific);
    renderSpecific();
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      save(form, async () => {
        const v = formValues(form);
        if (v.type === 'other') v.type = v.custom_type;
        delete v.custom_type;
        if (!isNew) delete v.type;
        if (isNew) await post(`/api/agents/${seg(a.id)}/channels`, v);
        else await put(`/api/agents/${seg(a.id)}/channels/${seg(c.id)}`, v);
        toast(isNew ? 'Channel created.' : 'Channel saved.', 'success');
        fill(formBox);
        refresh();
      });
    });
    fill(formBox, form);
    /** @type {HTMLInputElement} */ (form.querySelector('input[name="name"]')).focus();
  };
  refresh();
  return card;
}

/** @param {Channel} c */
function channelStatus(c) {
  const sym = /** @type {Record<string, string>} */ ({ running: '●', stopped: '○', error: '⚠' })[c.status] || '?';
  return h('span', { class: `badge ch-${c.status}` }, h('span', { 'aria-hidden': 'true' }, `${sym} `), c.status);
}

// ---- Chat ----

/** @param {Agent} a */
function chatCard(a) {
  let user = '';
  try { user = localStorage.getItem(USER_KEY) || ''; } catch { /* none */ }
  user = user || 'dashboard';
  const log = h('ol', { class: 'chat-log', id: 'chat-log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation' });
  const userInput = h('input', { type: 'text', id: 'chat-user', name: 'user_id', value: user, autocomplete: 'off', class: 'mono' });
  const message = h('textarea', { id: 'chat-message', name: 'message', rows: 2, placeholder: 'Write a message… (Enter sends, Shift+Enter for a new line)' });
  const form = h('form', { class: 'chat-form', id: 'chat-form', novalidate: true },
    h('div', { class: 'field', dataset: { field: 'message' } }, h('label', { for: 'chat-message' }, 'Message'), message),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Send'),
      h('button', { type: 'button', onclick: clearChat }, 'Clear conversation')));
  const card = h('section', { class: 'card chat', 'aria-labelledby': 'chat-heading' },
    h('h2', { id: 'chat-heading' }, 'Chat'),
    h('div', { class: 'field chat-user', dataset: { field: 'user_id' } }, h('label', { for: 'chat-user' }, 'User id'), userInput,
      h('p', { class: 'hint' }, 'Each user id has its own conversation with the agent, kept on the server.')),
    log, form);
  const key = () => `${a.id}\u0000${userInput.value}`;
  const render = () => {
    const items = transcripts.get(key()) || [];
    fill(log, ...items.map(renderMsg));
    if (!items.length) log.append(h('li', { class: 'muted chat-empty' }, 'No messages from this page yet.'));
    log.scrollTop = log.scrollHeight;
  };
  const push = (/** @type {ChatMessage} */ m) => {
    if (!transcripts.has(key())) transcripts.set(key(), []);
    /** @type {ChatMessage[]} */ (transcripts.get(key())).push(m);
    render();
  };
  userInput.addEventListener('change', () => { try { localStorage.setItem(USER_KEY, userInput.value); } catch { /* none */ } render(); });
  message.addEventListener('keydown', (e) => { if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); } });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = message.value;
    const uid = userInput.value.trim();
    clearErrors(card);
    if (!uid) { showErrors(card, new FieldError('user_id', 'a user id is required')); return; }
    if (!text.trim()) { message.focus(); return; }
    push({ role: 'user', text });
    message.value = '';
    busy(form, async () => {
      try {
        /** @type {ChatReply} */
        const res = await post(`/api/agents/${seg(a.id)}/chat`, { user_id: uid, message: text });
        push({ role: 'agent', text: res.response, tools: res.tool_calls || [], usage: res.usage,
          sources: res.sources || [], retrieval: res.retrieval });
      } catch (err) {
        push({ role: 'error', text: errorText(err) });
      }
      message.focus();
    });
  });
  async function clearChat() {
    const uid = userInput.value.trim();
    if (!(await confirmDialog(`Clear the conversation of ${uid} with ${a.name || a.id} on the server?`, { title: 'Clear conversation?', confirm: 'Clear' }))) return;
    try {
      await post(`/api/agents/${seg(a.id)}/chat/clear`, { user_id: uid });
      transcripts.delete(key());
      render();
      toast('Conversation cleared.', 'success');
    } catch (err) { toast(`Could not clear: ${errorText(err)}`, 'error'); }
  }
  render();
  return card;
}

/** @param {ChatMessage} m */
function renderMsg(m) {
  const who = { user: 'You', agent: 'Agent', error: 'Error' }[m.role];
  const tools = (m.tools || []).map((c) => h('li', null, h('code', null, `${c.name}(${typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments)})`),
    ' → ', h('code', null, typeof c.output === 'string' ? c.output : JSON.stringify(c.output))));
  const usage = m.usage && (m.usage.prompt_tokens || m.usage.completion_tokens)
    ? h('div', { class: 'hint' }, `${m.usage.prompt_tokens || 0} prompt + ${m.usage.completion_tokens || 0} completion tokens`) : null;
  return h('li', { class: `msg msg-${m.role}` }, h('div', { class: 'msg-who' }, who), h('div', { class: 'msg-text' }, m.text),
    tools.length ? h('details', null, h('summary', null, `${tools.length} tool call${tools.length === 1 ? '' : 's'}`), h('ul', null, tools)) : null,
    m.role === 'agent' ? sourcesView(m.sources, m.retrieval) : null, usage);
}
