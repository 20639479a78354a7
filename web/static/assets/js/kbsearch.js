// @ts-check
/** @import { Agent, KBSearch, KBSearchHit } from '../../../types/api' */

// The "Search the knowledge base" panel of an agent's page
// (GET /api/agents/{id}/kb/search): what the agent would retrieve for a
// question, each chunk with its score and its places in the keyword
// (BM25) and embeddings rankings. Chunk texts are the knowledge base's,
// untrusted: they are shown as text, never parsed as HTML.

import { get, seg } from './api.js';
import { h, fill, busy, showErrors, clearErrors, pre, FieldError } from './ui.js';
import { fmtScore, fallbackNote } from './sources.js';

/** @param {number | null} rank */
const fmtRank = (rank) => (rank === null || rank === undefined ? '—' : String(rank));

/**
 * @param {Agent} a
 */
export function kbSearchCard(a) {
  const q = h('input', { type: 'search', id: 'kb-search-q', name: 'q', autocomplete: 'off', maxlength: 1000,
    placeholder: 'A question a user might ask' });
  const k = h('input', { type: 'number', id: 'kb-search-k', name: 'k', min: 1, max: 50, value: '5', class: 'num-input' });
  const results = h('div', { id: 'kb-search-results', 'aria-live': 'polite' });
  const form = h('form', { class: 'inline-form kb-search-form', id: 'kb-search-form', role: 'search', novalidate: true },
    h('div', { class: 'field grow', dataset: { field: 'query.q' } }, h('label', { for: 'kb-search-q' }, 'Question'), q),
    h('div', { class: 'field', dataset: { field: 'query.k' } }, h('label', { for: 'kb-search-k' }, 'Chunks (k)'), k),
    h('button', { type: 'submit', class: 'primary' }, 'Search'));
  const card = h('section', { class: 'card', id: 'kb-search', 'aria-labelledby': 'kb-search-heading' },
    h('h2', { id: 'kb-search-heading' }, 'Search the knowledge base'),
    h('p', { class: 'hint' }, 'What the agent would retrieve for a question: the best chunks, with their score and their places in the keyword (BM25) and embeddings rankings.'),
    form, results);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    clearErrors(form);
    if (!q.value.trim()) { showErrors(form, new FieldError('query.q', 'write a question first')); return; }
    busy(form, async () => {
      try {
        /** @type {KBSearch} */
        const res = await get(`/api/agents/${seg(a.id)}/kb/search?q=${encodeURIComponent(q.value)}&k=${encodeURIComponent(k.value || '5')}`);
        fill(results, searchResults(res));
      } catch (err) {
        fill(results);
        showErrors(form, err);
      }
    });
  });
  return card;
}

/** @param {KBSearch} res */
function searchResults(res) {
  const head = h('p', { class: 'kb-search-mode', dataset: { mode: res.mode } },
    `${res.results.length} chunk${res.results.length === 1 ? '' : 's'}, ranked by `,
    h('span', { class: 'badge' }, res.mode === 'hybrid' ? 'hybrid (BM25 + embeddings)' : 'BM25'));
  if (!res.results.length) {
    return h('div', null, head, fallbackNote(res.fallback),
      h('p', { class: 'muted' }, 'Nothing matches: the agent would get no knowledge-base text for this question (or it has no knowledge base).'));
  }
  return h('div', null, head, fallbackNote(res.fallback),
    h('div', { class: 'table-wrap' }, h('table', { class: 'list kb-search-results' },
      h('thead', null, h('tr', null, ['#', 'File', 'Part', 'Score', 'BM25 rank', 'Vector rank', 'Text'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', null, res.results.map((r, i) => hitRow(r, i))))));
}

/**
 * @param {KBSearchHit} r
 * @param {number} i
 */
function hitRow(r, i) {
  return h('tr', { dataset: { file: r.file, chunk: String(r.chunk) } },
    h('td', { class: 'num' }, String(i + 1)),
    h('td', null, h('code', null, r.file)),
    h('td', { class: 'num' }, String(r.chunk + 1)),
    h('td', { class: 'num kb-score' }, fmtScore(r.score)),
    h('td', { class: 'num kb-bm25-rank' }, fmtRank(r.bm25_rank)),
    h('td', { class: 'num kb-vector-rank' }, fmtRank(r.vector_rank)),
    h('td', { class: 'kb-search-text' }, pre(r.text)));
}
