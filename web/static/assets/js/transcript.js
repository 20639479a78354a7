// @ts-check
/** @import { ModelCall, TestResult, TranscriptMessage } from '../../../types/api' */

// One result's transcript: the conversation of its test (system prompt
// collapsed, tool calls with their arguments, tool results, the second
// pass marked) and a timeline of its model calls (each attempt, retries
// included, with its timing, tokens and status). Everything the model or
// a tool wrote is put in the page as text.

import { h, fmtDuration, fmtNumber, pre } from './ui.js';

/** @type {Record<string, string>} */
const ROLE = { system: 'System', user: 'User', assistant: 'Assistant', tool: 'Tool result' };

/** @type {Record<string, string>} */
const PURPOSE = { test: 'Test', tool_round: 'Tool round', pass2: 'Second pass', judge: 'Judge' };

/** @type {Record<string, string>} */
const CALL_STATUS = {
  ok: 'ok', cached: 'from the cache', http_error: 'HTTP error', timeout: 'timed out', unreachable: 'unreachable',
  too_large: 'answer too large', malformed: 'malformed answer', cancelled: 'cancelled', error: 'failed',
};

/**
 * Renders one result's transcript and calls into a new element.
 * @param {TestResult} result
 * @returns {HTMLElement}
 */
export function renderTranscript(result) {
  const msgs = result.transcript || [];
  const calls = result.calls || [];
  return h('section', { class: 'transcript', 'aria-label': 'Transcript' },
    h('h4', null, `Conversation (${msgs.length} message${msgs.length === 1 ? '' : 's'})`),
    msgs.length ? renderMessages(msgs) : h('p', { class: 'muted' }, 'No messages recorded.'),
    h('h4', null, `Model calls (${calls.length})`),
    calls.length ? renderTimeline(calls)
      : h('p', { class: 'muted calls-none' }, 'No model calls recorded: the result was stored before calls were kept, or rescored with no judge.'));
}

/**
 * @param {TranscriptMessage[]} msgs
 */
function renderMessages(msgs) {
  /** @type {Map<string, string>} */
  const names = new Map();
  /** @type {HTMLElement[]} */
  const items = [];
  let inPass2 = false;
  for (const m of msgs) {
    for (const c of m.tool_calls || []) names.set(c.id, c.name);
    if (m.pass2 && !inPass2) {
      items.push(h('li', { class: 'pass2-start', role: 'separator' },
        'Second pass: nothing usable was extracted, so the evaluator asked the model to restate its final answer.'));
    }
    inPass2 = m.pass2;
    if (m.omitted) items.push(h('li', { class: 'omitted muted' }, `… ${fmtNumber(m.omitted)} messages left out of the stored transcript …`));
    items.push(renderMessage(m, names));
  }
  return h('ol', { class: 'messages' }, items);
}

/**
 * @param {TranscriptMessage} m
 * @param {Map<string, string>} names tool-call ids to function names
 */
function renderMessage(m, names) {
  const role = ROLE[m.role] || m.role;
  const head = h('div', { class: 'msg-head' },
    h('span', { class: 'msg-role' }, role),
    m.role === 'tool' && m.tool_call_id
      ? h('span', { class: 'msg-call' }, 'of ', h('code', null, names.get(m.tool_call_id) || '?'), ' ', h('code', { class: 'muted' }, m.tool_call_id)) : null,
    m.pass2 ? h('span', { class: 'tag tag-pass2' }, 'second pass') : null,
    m.truncated ? h('span', { class: 'tag tag-cut', title: 'Cut to fit the stored transcript' }, 'truncated') : null);
  /** @type {(Node | null)[]} */
  const body = [];
  if (m.content !== '' || !(m.tool_calls && m.tool_calls.length)) {
    body.push(m.role === 'tool' ? pre(pretty(m.content), 'msg-content') : pre(m.content, 'msg-content'));
  }
  if (m.content_base64) body.push(h('p', { class: 'muted' }, 'Not valid UTF-8: shown with replacement characters.'));
  for (const c of m.tool_calls || []) {
    body.push(h('div', { class: 'tool-call' },
      h('div', null, 'Calls ', h('code', { class: 'fn' }, c.name), ' ', h('code', { class: 'muted' }, c.id)),
      pre(pretty(c.arguments), 'args')));
  }
  const cls = ['msg', `msg-${m.role}`, m.pass2 ? 'pass2' : ''];
  if (m.role === 'system') {
    return h('li', { class: cls, dataset: { role: m.role } },
      h('details', null, h('summary', null, head, h('span', { class: 'muted' }, ` ${fmtNumber(m.content.length)} characters`)), body));
  }
  return h('li', { class: cls, dataset: { role: m.role } }, head, body);
}

/**
 * The calls as a table with a bar per attempt on the test's time line.
 * @param {ModelCall[]} calls
 */
function renderTimeline(calls) {
  const end = Math.max(1, ...calls.map((c) => c.start_ms + c.duration_ms));
  const th = (/** @type {string} */ text) => h('th', { scope: 'col' }, text);
  return h('div', { class: 'table-wrap' }, h('table', { class: 'list calls' },
    h('caption', { class: 'visually-hidden' }, 'Model calls, in the order they started'),
    h('thead', null, h('tr', null, th('Request'), th('Attempt'), th('Time line'), th('Duration'), th('Tokens'), th('Status'))),
    h('tbody', null, calls.map((c) => {
      const bar = h('span', { class: 'bar', title: `from ${fmtDuration(c.start_ms)} to ${fmtDuration(c.start_ms + c.duration_ms)}` });
      bar.style.setProperty('--at', `${(100 * c.start_ms) / end}%`);
      bar.style.setProperty('--len', `${Math.max(0.5, (100 * c.duration_ms) / end)}%`);
      const ok = c.status === 'ok' || c.status === 'cached';
      return h('tr', { class: ok ? 'call-ok' : 'call-failed', dataset: { purpose: c.purpose, status: c.status } },
        h('td', null, PURPOSE[c.purpose] || c.purpose, c.purpose === 'tool_round' ? ` ${c.round}` : ''),
        h('td', { class: 'num' }, String(c.attempt)),
        h('td', { class: 'timeline' }, h('span', { class: 'track' }, bar)),
        h('td', { class: 'num' }, fmtDuration(c.duration_ms)),
        h('td', { class: 'num' }, ok ? `${fmtNumber(c.prompt_tokens)} + ${fmtNumber(c.completion_tokens)}` : '—'),
        h('td', { class: 'call-status' },
          h('span', { 'aria-hidden': 'true' }, ok ? '✓ ' : '✗ '),
          CALL_STATUS[c.status] || c.status, c.http_status && c.status !== 'ok' ? ` ${c.http_status}` : '',
          c.error ? h('div', { class: 'call-error' }, c.error) : null));
    }))));
}

/**
 * JSON text pretty-printed; anything else as it is.
 * @param {string} s
 */
function pretty(s) {
  try { return JSON.stringify(JSON.parse(s), null, 2); } catch { return s; }
}
