'use strict';
// The keyword evaluator: the score is the share of the expected keywords
// found in the response, and the response passes when that share reaches
// pass_threshold. The same evaluator as examples/evaluator-plugin (Go),
// with one more option: judge.
//
// Its config, in the evaluator record:
//
//   keywords        the keywords (strings); when absent, the test's
//                   expected answer, split on commas
//   case_sensitive  match case exactly (default false)
//   pass_threshold  the share needed to pass, in (0, 1] (default 1: all)
//   judge           also ask the run's model, through the server, whether
//                   the response answers the prompt: its yes or no goes
//                   into details.judge and its tokens into usage; the
//                   score stays the keyword share (default false)

/** A field error, as harness.FieldError. */
class FieldError {
  /** @param {string} field @param {string} message */
  constructor(field, message) { this.field = field; this.message = message; }
}

/** Invalid input naming its fields, as harness.ValidationError. */
class ValidationError extends Error {
  /** @param {FieldError[]} fields */
  constructor(fields) {
    // The text Go's harness.ValidationError has for the same fields, so
    // that the server sees the very same error.
    super('invalid: ' + fields.map((f) => (f.field ? `${f.field}: ${f.message}` : f.message)).join('; '));
    this.name = 'ValidationError';
    this.fields = fields;
  }
}

/**
 * Reads and checks an evaluator record's config.
 * @param {Record<string, unknown>} config
 * @returns {{keywords: string[], caseSensitive: boolean, threshold: number, judge: boolean}}
 */
function parseConfig(config) {
  const cfg = { keywords: [], caseSensitive: false, threshold: 1, judge: false };
  const errs = [];
  const kw = config.keywords;
  if (kw !== undefined && kw !== null) {
    if (!Array.isArray(kw)) {
      errs.push(new FieldError('config.keywords', 'must be a list of strings'));
    } else {
      kw.forEach((k, i) => {
        if (typeof k !== 'string' || k.trim() === '') errs.push(new FieldError(`config.keywords[${i}]`, 'must be a non-empty string'));
        else cfg.keywords.push(k.trim());
      });
    }
  }
  for (const [key, prop] of [['case_sensitive', 'caseSensitive'], ['judge', 'judge']]) {
    const v = config[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'boolean') errs.push(new FieldError(`config.${key}`, 'must be true or false'));
    else cfg[prop] = v;
  }
  const t = config.pass_threshold;
  if (t !== undefined && t !== null) {
    if (typeof t !== 'number') errs.push(new FieldError('config.pass_threshold', 'must be a number'));
    else if (!(t > 0 && t <= 1)) errs.push(new FieldError('config.pass_threshold', 'must be more than 0 and at most 1'));
    else cfg.threshold = t;
  }
  if (errs.length) throw new ValidationError(errs);
  return cfg;
}

/**
 * Scores a response.
 * @param {ReturnType<typeof parseConfig>} cfg
 * @param {string} response
 * @param {string} expectedAnswer the test's expected answer
 */
function score(cfg, response, expectedAnswer) {
  let keywords = cfg.keywords;
  if (!keywords.length) keywords = expectedAnswer.split(',').map((k) => k.trim()).filter(Boolean);
  if (!keywords.length) {
    throw new ValidationError([new FieldError('config.keywords', "is required when the test's expected answer names no keywords")]);
  }
  const haystack = cfg.caseSensitive ? response : response.toLowerCase();
  const found = [];
  const missing = [];
  for (const k of keywords) {
    (haystack.includes(cfg.caseSensitive ? k : k.toLowerCase()) ? found : missing).push(k);
  }
  const share = found.length / keywords.length;
  return {
    score: share,
    passed: share >= cfg.threshold,
    details: { found, missing, extracted_answer: found.join(', ') },
  };
}

module.exports = { FieldError, ValidationError, parseConfig, score };
