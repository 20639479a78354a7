'use strict';
// Unit tests of the evaluator itself, without the plugin machinery:
// npm test (node --test). The Go test beside them runs the plugin through
// the real server-side host.
const test = require('node:test');
const assert = require('node:assert/strict');
const { parseConfig, score, ValidationError } = require('./keyword');

test('scores the share of keywords found', () => {
  const cfg = parseConfig({});
  assert.deepEqual(score(cfg, 'Blue and white.', 'blue, white, red'),
    { score: 2 / 3, passed: false, details: { found: ['blue', 'white'], missing: ['red'], extracted_answer: 'blue, white' } });
  assert.equal(score(parseConfig({ pass_threshold: 0.6 }), 'Blue and white.', 'blue, white, red').passed, true);
  assert.equal(score(parseConfig({ keywords: ['blue'], case_sensitive: true }), 'BLUE', '').score, 0);
});

test('names every bad field, as the Go evaluator does', () => {
  assert.throws(() => parseConfig({ keywords: ['ok', 3], pass_threshold: 0, judge: 'yes' }), (err) => {
    assert.ok(err instanceof ValidationError);
    assert.deepEqual(err.fields.map((f) => f.field), ['config.keywords[1]', 'config.judge', 'config.pass_threshold']);
    assert.equal(err.message, 'invalid: config.keywords[1]: must be a non-empty string; config.judge: must be true or false; ' +
      'config.pass_threshold: must be more than 0 and at most 1');
    return true;
  });
  assert.throws(() => score(parseConfig({}), 'anything', ''), ValidationError);
});
