// @ts-check
/** @import { Agent, Channel, Conversation, ConversationList, ConversationMessage, ConversationSummary } from '../../../types/api' */

// An agent's conversations (/api/agents/{id}/conversations): the users who
// talked to it through the API or any channel, most recent first, and the
// transcript of one, with its tool calls, which can be cleared. Each
// conversation shows the channel its latest message came through, named
// after the agent's channel record while it exists; a message that came
// through another channel says so. A reply shows the knowledge-base
// chunks its model was given (sources.js). Every text from the server is
// inserted as text.

import { get, del, seg } from './api.js';
import { h, fill, fmtTime, fmtNumber, confirmDialog, toast, errorText, pre } from './ui.js';
import { sourcesView } from './sources.js';

/** Conversations per page of the list. */
const PAGE = 25;
/** Messages per page of a transcript. */
const MESSAGES = 100;

/**
 * The Conversations card of an agent's page.
 * @param {Agent} a
 */
export function conversationsCard(a) {
  const base = `/api/agents/${seg(a.id)}/conversations`;
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading conversations…'));
  const transcript = h('div', { class: 'conv-transcript', id: 'conv-transcript' });
  let offset = 0;
  /** @type {string | null} the user whose transcript is open */
  let open = null;
  /** @type {Map<string, Channel>} the agent's channels by id, read with each list */
  let channels = new Map();

  /** Reads the agent's channels, for their names; without them, types only. */
  const loadChannels = async () => {
    try {
      /** @type {{channels: Channel[]}} */
      const res = await get(`/api/agents/${seg(a.id)}/channels`);
      channels = new Map(res.channels.map((ch) => [ch.id, ch]));
    } catch { /* the labels show types only */ }
  };

  const refresh = async () => {
    /** @type {ConversationList} */
    let page;
    const names = loadChannels(); // never fails
    try {
      page = await get(`${base}?limit=${PAGE}&offset=${offset}`);
    } catch (err) {
      fill(body, h('p', { class: 'error', role: 'alert' }, `Could not list the conversations: ${errorText(err)}`));
      return;
    }
    await names;
    if (!page.conversations.length && offset > 0) { offset = Math.max(0, offset - PAGE); refresh(); return; }
    const list = page.conversations;
    fill(body, list.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'list conversations' },
      h('thead', null, h('tr', null, ['User', 'Messages', 'Last message', 'Updated', 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, list.map((c) => row(c)))))
      : h('p', { class: 'muted' }, 'No conversations yet: chat with the agent, or start a channel.'),
    h('div', { class: 'pager' },
      h('span', null, list.length ? `Conversations ${offset + 1}–${offset + list.length} of ${fmtNumber(page.total)}` : ''),
      offset > 0 ? h('button', { type: 'button', class: 'small', onclick: () => { offset = Math.max(0, offset - PAGE); refresh(); } }, '← More recent') : null,
      offset + list.length < page.total ? h('button', { type: 'button', class: 'small', onclick: () => { offset += PAGE; refresh(); } }, 'Older →') : null));
  };

  /** @param {ConversationSummary} c */
  const row = (c) => h('tr', { dataset: { user: c.user_id }, 'aria-current': c.user_id === open ? 'true' : null },
    h('td', null, h('code', null, c.user_id), ' ', channelBadge(c.channel, c.channel_id, channels)),
    h('td', { class: 'num' }, fmtNumber(c.messages)),
    h('td', { class: 'conv-last' }, h('span', { class: 'msg-who' }, `${WHO[c.last_role] || c.last_role}: `),
      c.last_message + (c.last_message_truncated ? '…' : '')),
    h('td', null, fmtTime(c.updated_at)),
    h('td', { class: 'row-actions' },
      h('button', { type: 'button', class: 'small', 'aria-label': `Open the conversation with ${c.user_id}`, onclick: () => show(c.user_id) }, 'Open')));

  /**
   * Shows a user's transcript: its most recent messages, then older ones
   * on demand.
   * @param {string} user
   */
  const show = async (user) => {
    open = user;
    for (const tr of body.querySelectorAll('tr[data-user]')) {
      tr.setAttribute('aria-current', /** @type {HTMLElement} */ (tr).dataset.user === user ? 'true' : 'false');
    }
    const log = h('ol', { class: 'chat-log conv-log', role: 'log', 'aria-label': `Conversation with ${user}` });
    const more = h('div');
    const via = h('span', { class: 'conv-head-channel' });
    const head = h('div', { class: 'card-head' },
      h('h3', null, 'Conversation with ', h('code', null, user), ' ', via),
      h('div', { class: 'actions' },
        h('button', { type: 'button', class: 'small', onclick: () => show(user) }, '↻ Reload'),
        h('button', { type: 'button', class: 'small danger', id: 'conv-clear', onclick: () => clearConversation(user) }, 'Clear conversation'),
        h('button', { type: 'button', class: 'small', onclick: close }, 'Close')));
    const count = h('p', { class: 'hint' });
    fill(transcript, head, count, more, log);
    /** @type {Map<string, string>} the tool name of each call id seen */
    const calls = new Map();
    let shown = 0;
    /** @param {number} before 0: the most recent */
    const load = async (before) => {
      /** @type {Conversation} */
      let c;
      try {
        c = await get(`${base}/${seg(user)}?limit=${MESSAGES}${before ? `&before=${before}` : ''}`);
      } catch (err) {
        fill(more, h('p', { class: 'error', role: 'alert' }, `Could not read the conversation: ${errorText(err)}`));
        return;
      }
      for (const m of c.messages) for (const tc of m.tool_calls || []) calls.set(tc.id, tc.name);
      shown += c.messages.length;
      fill(via, channelBadge(c.channel, c.channel_id, channels));
      log.prepend(...c.messages.map((m) => message(m, calls, sameChannel(m, c) ? null : channelText(m.channel, m.channel_id, channels))));
      if (!before) log.scrollTop = log.scrollHeight;
      count.textContent = `${fmtNumber(c.total)} message${c.total === 1 ? '' : 's'}${shown < c.total ? `, the last ${fmtNumber(shown)} shown` : ''}.`;
      const next = c.next_before;
      fill(more, next ? h('button', { type: 'button', class: 'small', id: 'conv-more', onclick: () => load(next) }, 'Show earlier messages') : null);
    };
    await load(0);
  };

  const close = () => {
    open = null;
    fill(transcript);
    for (const tr of body.querySelectorAll('tr[data-user]')) tr.setAttribute('aria-current', 'false');
  };

  /** @param {string} user */
  const clearConversation = async (user) => {
    if (!(await confirmDialog(`Clear the conversation of ${user} with ${a.name || a.id}? Every message of it is deleted from the server; the user's next message starts a new one.`,
      { title: 'Clear conversation?', confirm: 'Clear' }))) return;
    try {
      await del(`${base}/${seg(user)}`);
      toast(`Conversation with ${user} cleared.`, 'success');
      close();
    } catch (err) { toast(`Could not clear the conversation: ${errorText(err)}`, 'error'); }
    refresh();
  };

  const card = h('section', { class: 'card', id: 'conversations', 'aria-labelledby': 'conversations-heading' },
    h('div', { class: 'card-head' }, h('h2', { id: 'conversations-heading' }, 'Conversations'),
      h('button', { type: 'button', class: 'small', id: 'conv-refresh', onclick: () => { refresh(); if (open !== null) show(open); } }, '↻ Refresh')),
    h('p', { class: 'hint' }, 'Everyone who talked to this agent, through the API, the chat above or a channel; the most recent first.'),
    body, transcript);
  refresh();
  return card;
}

/** @type {Record<string, string>} */
const WHO = { user: 'User', assistant: 'Agent', tool: 'Tool' };

/**
 * The label of a channel: its type, and the name of the agent's channel
 * record when it still exists and its name says more than the type.
 * Null (no channel) is a chat through the API, or a message stored before
 * channels were recorded.
 * @param {string | null} type
 * @param {string | null} id
 * @param {Map<string, Channel>} channels the agent's channels by id
 */
function channelText(type, id, channels) {
  if (!type) return 'API';
  const ch = id ? channels.get(id) : undefined;
  return ch && ch.name && ch.name !== type ? `${type} · ${ch.name}` : type;
}

/**
 * A badge with a channel's label; nothing for a chat through the API.
 * @param {string | null} type
 * @param {string | null} id
 * @param {Map<string, Channel>} channels
 */
function channelBadge(type, id, channels) {
  if (!type) return null;
  const title = !id ? `Through a ${type} channel (recorded before channels were stored per message)`
    : channels.has(id) ? `Through the ${type} channel ${id}` : `Through the ${type} channel ${id}, since deleted`;
  return h('span', { class: 'badge conv-channel', title, dataset: { channel: type, channelId: id || '' } }, channelText(type, id, channels));
}

/**
 * Whether a message came through the conversation's channel.
 * @param {ConversationMessage} m
 * @param {Conversation} c
 */
function sameChannel(m, c) {
  return (m.channel || null) === (c.channel || null) && (m.channel_id || null) === (c.channel_id || null);
}

/**
 * One message of a transcript.
 * @param {ConversationMessage} m
 * @param {Map<string, string>} calls tool names by call id
 * @param {string | null} via the channel it came through, when not the conversation's
 */
function message(m, calls, via) {
  const role = m.role === 'assistant' ? 'agent' : m.role;
  const toolCalls = m.tool_calls || [];
  /** @type {(Node | string | null)[]} */
  let content;
  if (m.role === 'tool') {
    const name = calls.get(m.tool_call_id || '');
    content = [h('div', { class: 'msg-who' }, `Tool result${name ? ` of ${name}` : ''}`), pre(m.content, 'conv-tool-output')];
  } else {
    content = [h('div', { class: 'msg-who' }, WHO[m.role] || m.role,
      via && m.role === 'user' ? h('span', { class: 'hint conv-via' }, ` · via ${via}`) : null),
      m.content ? h('div', { class: 'msg-text' }, m.content) : null,
      toolCalls.length ? h('ul', { class: 'conv-calls' }, toolCalls.map((tc) => h('li', null,
        'Calls ', h('code', null, `${tc.name}(${tc.arguments})`)))) : null,
      m.role === 'assistant' ? sourcesView(m.sources, m.retrieval) : null];
  }
  return h('li', { class: `msg msg-${role}`, dataset: { role: m.role, id: String(m.id) } },
    ...content, h('div', { class: 'hint conv-time' }, fmtTime(m.created_at)));
}
