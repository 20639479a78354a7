// @ts-check
/** @import { RetrievalInfo, Source } from '../../../types/api' */

// Where a reply came from: the knowledge-base chunks its model was given
// (file, part, score) and how they were found, shown under the reply in
// the chat and in the conversations view. File names come from the
// server and are inserted as text.

import { h } from './ui.js';

/** Chunks listed at once; the others behind a disclosure. */
const SHOWN = 5;

/**
 * A score as a short number: 2.67, 0.0164.
 * @param {number} score
 */
export function fmtScore(score) {
  return String(Number(score.toPrecision(3)));
}

/**
 * A fallback notice: retrieval meant to be hybrid was BM25 only.
 * @param {string | undefined | null} reason
 */
export function fallbackNote(reason) {
  if (!reason) return null;
  return h('p', { class: 'sources-fallback', role: 'note' },
    h('span', { 'aria-hidden': 'true' }, '⚠ '), 'Retrieval fell back to BM25: ', h('span', { class: 'sources-fallback-reason' }, reason));
}

/**
 * The sources of a reply, or null when it has none to show (no knowledge
 * base, or a reply stored before sources were recorded).
 * @param {Source[] | null | undefined} sources
 * @param {RetrievalInfo | null | undefined} retrieval
 */
export function sourcesView(sources, retrieval) {
  const list = sources || [];
  const fallback = retrieval ? retrieval.fallback : undefined;
  if (!list.length && !fallback) return null;
  const item = (/** @type {Source} */ s) => h('li', { dataset: { file: s.file, chunk: String(s.chunk) } },
    h('code', { class: 'source-file' }, s.file), ` · part ${s.chunk + 1} · `,
    s.score > 0 ? h('span', { class: 'source-score' }, `score ${fmtScore(s.score)}`)
      : h('span', { class: 'source-score muted', title: 'Given because the whole knowledge base fits the model; it does not match the message' }, 'not matched'));
  const rest = list.slice(SHOWN);
  return h('div', { class: 'sources', dataset: { sources: String(list.length), mode: retrieval ? retrieval.mode : '' } },
    h('div', { class: 'sources-head' }, list.length ? `Sources (${list.length})` : 'No sources',
      retrieval ? h('span', { class: 'badge sources-mode' }, retrieval.mode) : null),
    fallbackNote(fallback),
    list.length ? h('ol', { class: 'sources-list' }, list.slice(0, SHOWN).map(item)) : null,
    rest.length ? h('details', { class: 'sources-more' }, h('summary', null, `${rest.length} more`),
      h('ol', { class: 'sources-list', start: String(SHOWN + 1) }, rest.map(item))) : null);
}
