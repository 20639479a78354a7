// @ts-check
/** @import { DefinitionCounts, Domain, Evaluator, ImportResult, LevelConfig, Snapshot, SyncResult, Test, Tool } from '../../../types/api' */
/** @import { FieldOption } from '../../../types/dom' */
/** @import { Route } from '../../../types/views' */

/** @typedef {{list: HTMLElement, editor: HTMLElement, result: HTMLElement}} Shell */

// Definitions: domains, level prompts, tests, evaluators and tools through
// /api/settings/...; export, import and sync. A refused save shows each of
// the server's errors beside the field its location names.

import { get, post, put, del, seg, APIError } from './api.js';
import { h, field, formValues, showErrors, clearErrors, busy, confirmDialog, toast, errorText, download, fill, FieldError } from './ui.js';

// The built-in types, then those of the first-party evaluators that gauntlet
// serve registers (json_schema, rubric); the server refuses any it lacks.
const EXPECTED_TYPES = ['exact', 'numeric', 'integer', 'choice', 'contains', 'regex', 'boolean', 'json', 'tool_call', 'json_schema', 'rubric'];
const MODES = [
  { value: 'append', label: 'append (domain prompt, then level prompt)' },
  { value: 'prepend', label: 'prepend (level prompt, then domain prompt)' },
  { value: 'replace', label: 'replace (level prompt alone)' },
];

/** @type {HTMLElement} */
let section;
// The outcome of an import or a sync, shown again after the view reloads.
/** @type {HTMLElement | null} */
let carried = null;

/** @param {HTMLElement} s */
export function mount(s) { section = s; }
export function hide() {}

/**
 * parts: ['definitions', kind?, id?, level?, test?]
 * @param {Route} parts
 */
export async function show(parts) {
  const [, kind = 'domains', id, level, test] = parts;
  const shell = renderShell(kind);
  try {
    if (kind === 'evaluators') await showEvaluators(shell, id);
    else if (kind === 'tools') await showTools(shell, id);
    else await showDomains(shell, id, level, test);
  } catch (err) {
    fill(shell.editor, h('p', { class: 'error', role: 'alert' }, `Could not load the definitions: ${errorText(err)}`));
  }
}

/**
 * @param {string} kind
 * @returns {Shell}
 */
function renderShell(kind) {
  const result = h('div', { id: 'defs-result', class: 'defs-result', role: 'status', 'aria-live': 'polite' }, carried);
  carried = null;
  const file = h('input', { type: 'file', id: 'import-file', accept: '.json,application/json', 'aria-label': 'Definitions file to import' });
  const merge = h('input', { type: 'checkbox', id: 'import-merge', checked: true });
  const toolbar = h('div', { class: 'toolbar defs-toolbar' },
    h('button', { type: 'button', id: 'export-button', onclick: () => exportDefs(result) }, '⇩ Export JSON'),
    h('span', { class: 'import-group' },
      h('label', { for: 'import-file', class: 'visually-hidden' }, 'Definitions file'), file,
      h('span', { class: 'check' }, merge, h('label', { for: 'import-merge' }, 'Merge')),
      h('button', { type: 'button', id: 'import-button', onclick: () => importDefs(file, merge, result) }, '⇧ Import')),
    h('button', { type: 'button', id: 'sync-button', onclick: () => syncDefs(result) }, '⟳ Sync from files'));
  const tabs = h('nav', { class: 'tabs', 'aria-label': 'Kinds of definitions' },
    [['domains', 'Domains & tests'], ['evaluators', 'Evaluators'], ['tools', 'Tools']].map(([k, label]) =>
      h('a', { href: `#/definitions/${k}`, 'aria-current': k === kind ? 'page' : null }, label)));
  const list = h('div', { class: 'side-list' });
  const editor = h('div', { class: 'editor' }, h('p', { class: 'muted' }, 'Loading…'));
  fill(section, h('h1', null, 'Definitions'),
    h('p', { class: 'hint' }, 'Every change is written to the definition files first, then to the cache. The files are the source of truth.'),
    toolbar, result, tabs, h('div', { class: 'split' }, list, editor));
  return { list, editor, result };
}

/**
 * @template {{id: string, name: string}} T
 * @param {Shell} shell
 * @param {string} title
 * @param {T[]} items
 * @param {string | undefined} current
 * @param {(item: T) => string} hrefOf
 * @param {string} newHref
 * @param {string} newLabel
 */
function sideList(shell, title, items, current, hrefOf, newHref, newLabel) {
  fill(shell.list,
    h('h2', { class: 'side-title' }, title),
    h('a', { class: 'button small primary', href: newHref }, `+ ${newLabel}`),
    items.length ? h('ul', { class: 'nav-list' }, items.map((it) => h('li', null,
      h('a', { href: hrefOf(it), 'aria-current': it.id === current ? 'true' : null },
        h('span', null, it.name || it.id), it.name && it.name !== it.id ? h('span', { class: 'did' }, it.id) : null))))
      : h('p', { class: 'muted' }, 'None yet.'));
}

// ---- Export, import, sync ----

/** @param {HTMLElement} result */
async function exportDefs(result) {
  try {
    /** @type {Snapshot} */
    const snap = await get('/api/settings/export');
    const day = new Date().toISOString().slice(0, 10);
    download(`gauntlet-definitions-${day}.json`, JSON.stringify(snap, null, 2));
    fill(result, h('p', { class: 'ok' }, `Exported ${countText(countsOf(snap))}.`));
  } catch (err) {
    fill(result, h('p', { class: 'error' }, `Export failed: ${errorText(err)}`));
  }
}

/**
 * @param {Snapshot} snap
 * @returns {Record<string, number>}
 */
function countsOf(snap) {
  return Object.fromEntries(/** @type {(keyof Snapshot)[]} */ (['domains', 'levels', 'tests', 'evaluators', 'tools']).map((k) => [k, (snap[k] || []).length]));
}

/** @param {Record<string, number> | DefinitionCounts | null | undefined} c */
function countText(c) {
  return Object.entries(c || {}).map(([k, n]) => `${n} ${n === 1 ? k.replace(/s$/, '') : k}`).join(', ');
}

/**
 * @param {HTMLInputElement} fileInput
 * @param {HTMLInputElement} merge
 * @param {HTMLElement} result
 */
async function importDefs(fileInput, merge, result) {
  const f = fileInput.files && fileInput.files[0];
  if (!f) { fill(result, h('p', { class: 'error' }, 'Choose a JSON file to import first (one written by Export).')); fileInput.focus(); return; }
  let data;
  try { data = JSON.parse(await f.text()); } catch (e) {
    fill(result, h('p', { class: 'error' }, `${f.name} is not valid JSON: ${/** @type {Error} */ (e).message}`));
    return;
  }
  if (!merge.checked && !(await confirmDialog('Without merge, the import replaces every definition: domains, levels, tests, evaluators and tools not in the file are deleted, files included.',
    { title: 'Replace all definitions?', confirm: 'Replace everything' }))) return;
  try {
    /** @type {ImportResult} */
    const res = await post('/api/settings/import', { ...data, merge: merge.checked });
    carried = h('p', { class: 'ok' }, `Imported ${countText(res.imported)} (${res.merge ? 'merged' : 'replacing everything'}). Now: ${countText(res.total)}.`);
    fill(result, carried);
    toast('Definitions imported.', 'success');
    route();
  } catch (err) {
    const items = err instanceof APIError ? err.errors : [];
    fill(result, h('div', { class: 'error', role: 'alert' }, h('p', null, `Import refused, nothing changed: ${errorText(err)}`),
      items.length ? h('ul', null, items.map((e) => h('li', null, h('code', null, e.location || ''), ' ', e.message || ''))) : null));
  }
}

/** @param {HTMLElement} result */
async function syncDefs(result) {
  try {
    /** @type {SyncResult} */
    const res = await post('/api/settings/sync');
    const errs = res.errors || [];
    carried = h('div', { class: errs.length ? 'warn' : 'ok' },
      h('p', null, `Synced from the files: loaded ${countText(res.loaded)}.`,
        errs.length ? ` ${errs.length} file${errs.length === 1 ? ' was' : 's were'} refused and loaded nothing:` : ' Every file loaded.'),
      errs.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'list sync-errors' },
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'File'), h('th', { scope: 'col' }, 'Error'))),
        h('tbody', null, errs.map((e) => h('tr', null, h('td', null, h('code', null, e.file)), h('td', null, e.error)))))) : null);
    fill(result, carried);
    route();
  } catch (err) {
    fill(result, h('p', { class: 'error' }, `Sync failed: ${errorText(err)}`));
  }
}

function route() { window.dispatchEvent(new HashChangeEvent('hashchange')); }

// ---- Domains, levels, tests ----

/**
 * @param {Shell} shell
 * @param {string | undefined} id
 * @param {string | undefined} levelKey
 * @param {string | undefined} testID
 */
async function showDomains(shell, id, levelKey, testID) {
  const [{ domains }, { evaluators }, { tools }] = await Promise.all([
    /** @type {Promise<{domains: Domain[]}>} */ (get('/api/settings/domains')),
    /** @type {Promise<{evaluators: Evaluator[]}>} */ (get('/api/settings/evaluators')),
    /** @type {Promise<{tools: Tool[]}>} */ (get('/api/settings/tools'))]);
  sideList(shell, 'Domains', domains, id, (d) => `#/definitions/domains/${seg(d.id)}`, '#/definitions/domains/new', 'New domain');
  const evalOptions = [{ value: '', label: '(built-in regex, defaults)' }, ...evaluators.map((e) => ({ value: e.id, label: `${e.name} (${e.id})` }))];
  const toolOptions = tools.map((t) => ({ value: t.id, label: t.name && t.name !== t.id ? `${t.name} (${t.id})` : t.id }));

  if (!id) {
    fill(shell.editor, h('p', { class: 'muted' }, domains.length ? 'Pick a domain to edit it, its levels and its tests.' : 'No domains yet: create one.'));
    return;
  }
  const isNew = id === 'new';
  /** @type {Partial<Domain>} */
  const d = isNew ? { enabled: true } : await get(`/api/settings/domains/${seg(id)}`);
  const form = h('form', { class: 'card stack', id: 'domain-form', novalidate: true },
    h('h2', null, isNew ? 'New domain' : `Domain “${d.name || d.id}”`),
    h('div', { class: 'grid2' },
      field('id', 'Id', { value: d.id, disabled: !isNew, mono: true, hint: isNew ? 'Letters, digits, _ . - ; used in paths and file names.' : null }),
      field('name', 'Name', { value: d.name }),
      field('evaluator_id', 'Evaluator', { type: 'select', options: evalOptions, value: d.evaluator_id || '' }),
      field('color', 'Colour', { value: d.color, placeholder: '#2F6FDE', mono: true, hint: '#RRGGBB' }),
      field('icon', 'Icon', { value: d.icon }),
      field('enabled', 'Enabled (included in runs over all domains)', { type: 'checkbox', value: d.enabled })),
    field('description', 'Description', { type: 'textarea', rows: 2, value: d.description }),
    field('system_prompt', 'System prompt', { type: 'textarea', rows: 3, value: d.system_prompt }),
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, isNew ? 'Create domain' : 'Save domain'),
      isNew ? null : h('button', { type: 'button', class: 'danger', onclick: () => deleteDomain(/** @type {Domain} */ (d)) }, 'Delete domain')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    save(form, async () => {
      const body = formValues(form);
      /** @type {Domain} */
      const saved = isNew ? await post('/api/settings/domains', body) : await put(`/api/settings/domains/${seg(id)}`, body);
      toast(`Domain ${saved.id} saved.`, 'success');
      if (isNew) location.hash = `#/definitions/domains/${seg(saved.id)}`; else route();
    });
  });
  fill(shell.editor, form);
  if (isNew) return;

  /** @type {{tests: Test[]}} */
  const { tests } = await get(`/api/settings/tests?domain=${seg(id)}`);
  const levels = [...new Set(tests.map((t) => t.level))].sort((a, b) => a - b);
  const level = levelKey !== undefined && levelKey !== '' ? Number(levelKey) : levels[0];
  const addLevel = h('input', { type: 'number', min: 0, max: 1000, id: 'add-level', class: 'narrow', 'aria-label': 'Level number' });
  const levelNav = h('section', { class: 'card', 'aria-labelledby': 'levels-heading' },
    h('h2', { id: 'levels-heading' }, 'Levels'),
    h('div', { class: 'level-tabs' },
      levels.length ? h('nav', { class: 'tabs', 'aria-label': 'Levels' }, levels.map((l) => h('a', {
        href: `#/definitions/domains/${seg(id)}/${l}`, 'aria-current': l === level ? 'page' : null },
      `Level ${l} (${tests.filter((t) => t.level === l).length})`))) : h('p', { class: 'muted' }, 'No tests yet.'),
      h('span', { class: 'inline-actions' }, h('label', { for: 'add-level' }, 'Open level'), addLevel,
        h('button', { type: 'button', class: 'small', onclick: () => { if (addLevel.value !== '') location.hash = `#/definitions/domains/${seg(id)}/${Number(addLevel.value)}`; } }, 'Open'))));
  shell.editor.append(levelNav);
  if (level === undefined || Number.isNaN(level)) return;

  /** @type {LevelConfig} */
  const lc = await get(`/api/settings/levels/${seg(id)}/${level}`);
  const levelForm = h('form', { class: 'stack', id: 'level-form', novalidate: true },
    h('h3', null, `Level ${level} settings`),
    field('system_prompt', 'Level system prompt', { type: 'textarea', rows: 3, value: lc.system_prompt }),
    h('div', { class: 'grid2' },
      field('system_prompt_mode', 'Combine with the domain prompt', { type: 'select', options: MODES, value: lc.system_prompt_mode || 'append' }),
      field('pass_threshold', 'Pass threshold (0–1)', { type: 'number', step: 0.05, min: 0, max: 1, value: lc.pass_threshold,
        hint: 'The mean test score at which the cell counts as passed.' })),
    field('tools', 'Tools offered at every test of the level', { type: 'checks', options: toolOptions, value: lc.tools || [], empty: 'No tools defined.' }),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save level')));
  levelForm.addEventListener('submit', (e) => {
    e.preventDefault();
    save(levelForm, async () => {
      await put(`/api/settings/levels/${seg(id)}/${level}`, formValues(levelForm));
      toast(`Level ${level} saved.`, 'success');
    });
  });
  const levelTests = tests.filter((t) => t.level === level);
  const testTable = levelTests.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'list tests-table' },
    h('thead', null, h('tr', null, ['Test', 'Prompt', 'Expected', 'Actions'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', null, levelTests.map((t) => h('tr', { dataset: { test: t.id }, class: t.id === testID ? 'current' : null },
      h('td', null, t.name || t.id, h('div', { class: 'did' }, t.id)),
      h('td', { class: 'clip' }, t.prompt),
      h('td', null, h('code', null, t.expected.answer), h('span', { class: 'muted' }, ` (${t.expected.type})`),
        t.expected.arguments ? h('div', { class: 'did' }, 'arguments ', h('code', null, JSON.stringify(t.expected.arguments))) : null),
      h('td', { class: 'row-actions' },
        h('a', { class: 'button small', href: `#/definitions/domains/${seg(id)}/${level}/${seg(t.id)}`, 'aria-label': `Edit test ${t.id}` }, 'Edit'),
        h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete test ${t.id}`, onclick: () => deleteTest(t) }, 'Delete'))))))) :
    h('p', { class: 'muted' }, 'No tests at this level yet.');
  const levelCard = h('section', { class: 'card', 'aria-label': `Level ${level}` }, levelForm,
    h('div', { class: 'card-head' }, h('h3', null, `Tests at level ${level}`),
      h('a', { class: 'button small primary', href: `#/definitions/domains/${seg(id)}/${level}/new` }, '+ New test')),
    testTable);
  shell.editor.append(levelCard);

  if (testID) {
    /** @type {TestDraft} */
    const t = testID === 'new' ? { domain_id: id, level, expected: { type: 'exact', answer: '' }, tools: [] }
      : levelTests.find((x) => x.id === testID) || await get(`/api/settings/tests/${seg(testID)}`);
    const tf = testForm(t, testID === 'new', domains, evaluators, toolOptions);
    levelCard.append(tf);
    /** @type {HTMLTextAreaElement} */ (tf.querySelector('textarea[name="prompt"]')).focus();
  }
}

/**
 * A test being edited: a new one has no id, name, prompt yet.
 * @typedef {Partial<Test> & Pick<Test, 'domain_id' | 'level' | 'expected'>} TestDraft
 */

/**
 * @param {TestDraft} t
 * @param {boolean} isNew
 * @param {Domain[]} domains
 * @param {Evaluator[]} evaluators
 * @param {FieldOption[]} toolOptions
 */
function testForm(t, isNew, domains, evaluators, toolOptions) {
  const types = EXPECTED_TYPES.includes(t.expected.type) ? EXPECTED_TYPES : [...EXPECTED_TYPES, t.expected.type];
  const form = h('form', { class: 'stack test-form', id: 'test-form', novalidate: true },
    h('h3', null, isNew ? 'New test' : `Edit test ${t.id}`),
    h('div', { class: 'grid2' },
      field('id', 'Id', { value: t.id, disabled: !isNew, mono: true, omitEmpty: true, placeholder: isNew ? 'generated when empty' : null }),
      field('name', 'Name', { value: t.name }),
      field('domain_id', 'Domain', { type: 'select', options: domains.map((d) => ({ value: d.id, label: d.name || d.id })), value: t.domain_id,
        hint: isNew ? null : 'Another domain or level moves the test.' }),
      field('level', 'Level', { type: 'number', min: 0, max: 1000, value: t.level })),
    field('prompt', 'Prompt', { type: 'textarea', rows: 3, value: t.prompt }),
    h('div', { class: 'grid2' },
      field('expected.answer', 'Expected answer', { value: t.expected.answer, mono: true }),
      field('expected.type', 'Expected type', { type: 'select', options: types.map((x) => ({ value: x })), value: t.expected.type }),
      field('expected.tolerance', 'Tolerance (numeric, relative)', { type: 'number', step: 'any', min: 0, value: t.expected.tolerance, placeholder: '1e-6' }),
      field('evaluator_id', 'Evaluator override', { type: 'select', value: t.evaluator_id || '',
        options: [{ value: '', label: '(the domain’s)' }, ...evaluators.map((e) => ({ value: e.id, label: `${e.name} (${e.id})` }))] })),
    field('expected.arguments', 'Expected arguments (tool_call)', { type: 'json', rows: 3, value: t.expected.arguments || '',
      placeholder: '{"city": "Paris"}', hint: 'A JSON object: the arguments the call must include (it may have others). Empty: any arguments.' }),
    field('tools', 'Tools offered for this test', { type: 'checks', options: toolOptions, value: t.tools || [], empty: 'No tools defined.' }),
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, isNew ? 'Create test' : 'Save test'),
      h('a', { class: 'button', href: `#/definitions/domains/${seg(t.domain_id)}/${t.level}` }, 'Cancel')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    save(form, async () => {
      const body = formValues(form);
      const args = body.expected.arguments;
      if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) {
        throw new FieldError('expected.arguments', 'must be a JSON object, like {"city": "Paris"}');
      }
      // An emptied field clears the stored arguments (PUT keeps a field left out).
      if (args === undefined && !isNew && t.expected.arguments) body.expected.arguments = null;
      /** @type {Test} */
      const saved = isNew ? await post('/api/settings/tests', body) : await put(`/api/settings/tests/${seg(/** @type {string} */ (t.id))}`, body);
      toast(`Test ${saved.id} saved.`, 'success');
      location.hash = `#/definitions/domains/${seg(saved.domain_id)}/${saved.level}`;
    });
  });
  return form;
}

/** @param {Domain} d */
async function deleteDomain(d) {
  if (!(await confirmDialog(`Delete the domain “${d.name || d.id}” with all its tests and level settings? Its files are removed.`,
    { title: 'Delete domain?', confirm: 'Delete domain' }))) return;
  try {
    await del(`/api/settings/domains/${seg(d.id)}`);
    toast(`Domain ${d.id} deleted.`, 'success');
    location.hash = '#/definitions/domains';
  } catch (err) { toast(`Could not delete: ${errorText(err)}`, 'error'); }
}

/** @param {Test} t */
async function deleteTest(t) {
  if (!(await confirmDialog(`Delete the test “${t.name || t.id}”?`, { title: 'Delete test?', confirm: 'Delete test' }))) return;
  try {
    await del(`/api/settings/tests/${seg(t.id)}`);
    toast(`Test ${t.id} deleted.`, 'success');
    location.hash = `#/definitions/domains/${seg(t.domain_id)}/${t.level}`;
    route();
  } catch (err) { toast(`Could not delete: ${errorText(err)}`, 'error'); }
}

/**
 * Runs a save: clears old errors, shows the new ones beside their fields.
 * @param {HTMLElement} form
 * @param {() => Promise<void>} fn
 */
async function save(form, fn) {
  clearErrors(form);
  await busy(form, async () => {
    try { await fn(); } catch (err) { showErrors(form, err); }
  });
}

// ---- Evaluators ----

/**
 * @param {Shell} shell
 * @param {string | undefined} id
 */
async function showEvaluators(shell, id) {
  /** @type {{evaluators: Evaluator[]}} */
  const { evaluators } = await get('/api/settings/evaluators');
  sideList(shell, 'Evaluators', evaluators, id, (e) => `#/definitions/evaluators/${seg(e.id)}`, '#/definitions/evaluators/new', 'New evaluator');
  if (!id) {
    fill(shell.editor, h('p', { class: 'muted' }, 'Pick an evaluator. The built-in type is regex: it extracts the answer with extraction_regex and compares it per the test’s expected type.'));
    return;
  }
  const isNew = id === 'new';
  /** @type {Partial<Evaluator>} */
  const ev = isNew ? { type: 'regex', uses_pass2: false } : await get(`/api/settings/evaluators/${seg(id)}`);
  const form = h('form', { class: 'card stack', id: 'evaluator-form', novalidate: true },
    h('h2', null, isNew ? 'New evaluator' : `Evaluator “${ev.name || ev.id}”`),
    h('div', { class: 'grid2' },
      field('id', 'Id', { value: ev.id, disabled: !isNew, mono: true }),
      field('name', 'Name', { value: ev.name }),
      field('type', 'Type', { value: ev.type, hint: 'regex, or a registered or plugin evaluator type.' })),
    field('description', 'Description', { type: 'textarea', rows: 2, value: ev.description }),
    field('extraction_regex', 'Extraction regex', { value: ev.extraction_regex, mono: true,
      hint: 'The named group answer, else group 1, else the whole match; the last match wins. RE2 or .NET syntax.' }),
    field('uses_pass2', 'Second pass: ask the model to restate its final answer when nothing usable is extracted', { type: 'checkbox', value: ev.uses_pass2 }),
    field('config', 'Config (JSON, for other types)', { type: 'json', rows: 3, value: ev.config }),
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, isNew ? 'Create evaluator' : 'Save evaluator'),
      isNew ? null : h('button', { type: 'button', class: 'danger', onclick: () => deleteThing('evaluators', /** @type {Evaluator} */ (ev), 'evaluator') }, 'Delete evaluator')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    save(form, async () => {
      const body = formValues(form);
      /** @type {Evaluator} */
      const saved = isNew ? await post('/api/settings/evaluators', body) : await put(`/api/settings/evaluators/${seg(id)}`, body);
      toast(`Evaluator ${saved.id} saved.`, 'success');
      if (isNew) location.hash = `#/definitions/evaluators/${seg(saved.id)}`; else route();
    });
  });
  fill(shell.editor, form);
}

// ---- Tools ----

/**
 * @param {Shell} shell
 * @param {string | undefined} id
 */
async function showTools(shell, id) {
  /** @type {{tools: Tool[]}} */
  const { tools } = await get('/api/settings/tools');
  sideList(shell, 'Tools', tools, id, (t) => `#/definitions/tools/${seg(t.id)}`, '#/definitions/tools/new', 'New tool');
  if (!id) {
    fill(shell.editor, h('p', { class: 'muted' }, 'Pick a tool: a function definition offered to the model, answered with its mock response.'));
    return;
  }
  const isNew = id === 'new';
  /** @type {Partial<Omit<Tool, 'function'>> & {function?: Partial<Tool['function']>}} */
  const t = isNew ? { function: { parameters: { type: 'object', properties: {}, required: [] } } } : await get(`/api/settings/tools/${seg(id)}`);
  const fn = t.function || {};
  const form = h('form', { class: 'card stack', id: 'tool-form', novalidate: true },
    h('h2', null, isNew ? 'New tool' : `Tool “${t.name || t.id}”`),
    h('div', { class: 'grid2' },
      field('id', 'Id', { value: t.id, disabled: !isNew, mono: true }),
      field('name', 'Name', { value: t.name, hint: 'Defaults to the function name.' }),
      field('function.name', 'Function name', { value: fn.name, mono: true, hint: 'What the model calls: ^[a-zA-Z0-9_-]{1,64}$' })),
    field('description', 'Description', { type: 'textarea', rows: 2, value: t.description }),
    field('function.description', 'Function description (for the model)', { type: 'textarea', rows: 2, value: fn.description }),
    field('function.parameters', 'Parameters (JSON Schema object)', { type: 'json', rows: 6, value: fn.parameters }),
    field('mock_response', 'Mock response (JSON)', { type: 'json', rows: 4, value: t.mock_response }),
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'primary' }, isNew ? 'Create tool' : 'Save tool'),
      isNew ? null : h('button', { type: 'button', class: 'danger', onclick: () => deleteThing('tools', /** @type {Tool} */ (t), 'tool') }, 'Delete tool')));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    save(form, async () => {
      const body = formValues(form);
      /** @type {Tool} */
      const saved = isNew ? await post('/api/settings/tools', body) : await put(`/api/settings/tools/${seg(id)}`, body);
      toast(`Tool ${saved.id} saved.`, 'success');
      if (isNew) location.hash = `#/definitions/tools/${seg(saved.id)}`; else route();
    });
  });
  fill(shell.editor, form);
}

/**
 * @param {'evaluators' | 'tools'} kind
 * @param {{id: string, name: string}} rec
 * @param {string} noun
 */
async function deleteThing(kind, rec, noun) {
  if (!(await confirmDialog(`Delete the ${noun} “${rec.name || rec.id}”?`, { title: `Delete ${noun}?`, confirm: `Delete ${noun}` }))) return;
  try {
    await del(`/api/settings/${kind}/${seg(rec.id)}`);
    toast(`The ${noun} ${rec.id} was deleted.`, 'success');
    location.hash = `#/definitions/${kind}`;
  } catch (err) {
    toast(`Could not delete the ${noun}: ${errorText(err)}`, 'error');
  }
}
