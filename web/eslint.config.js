// ESLint for the dashboard's modules (static/assets/js), which run as they
// are in the browser: no build step, no bundler. Run with `npx eslint .`
// from web/ (after `npm ci`); `.ci/web-check` runs it with the type check.

import js from '@eslint/js';
import globals from 'globals';

// Browser globals that are easy to use by mistake for a local variable
// that was never declared (a missing `const status = …` would silently
// read window.status): referring to them as bare names is an error.
// window.name, location… stay available as window.x.
const confusingGlobals = [
  'addEventListener', 'blur', 'close', 'closed', 'confirm', 'event', 'external', 'find', 'focus',
  'frameElement', 'frames', 'history', 'innerHeight', 'innerWidth', 'length', 'name', 'onblur',
  'onerror', 'onfocus', 'onload', 'onresize', 'onunload', 'open', 'opener', 'origin', 'parent',
  'print', 'removeEventListener', 'screen', 'scroll', 'self', 'status', 'stop', 'top',
].map((name) => ({ name, message: `use a local variable, or window.${name} if the global is meant` }));

// Everything the server sends goes into the page as text, never parsed as
// HTML: the dashboard builds its DOM with h() and textContent.
const htmlMessage = 'build elements with h() and set text, never parse HTML';
const htmlSinks = [
  ...['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'createContextualFragment', 'parseFromString']
    .map((property) => ({ property, message: htmlMessage })),
  ...['write', 'writeln'].map((property) => ({ object: 'document', property, message: htmlMessage })),
];

export default [
  {
    ignores: ['node_modules/'],
  },
  js.configs.recommended,
  {
    linterOptions: {
      reportUnusedDisableDirectives: 'error',
    },
  },
  {
    files: ['static/**/*.js'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { ...globals.browser },
    },
    rules: {
      'no-undef': 'error',
      'no-unused-vars': ['error', { args: 'after-used', caughtErrors: 'all', ignoreRestSiblings: true }],
      'no-implicit-globals': 'error',
      'no-restricted-globals': ['error', ...confusingGlobals],
      'no-restricted-properties': ['error', ...htmlSinks],
      'no-eval': 'error',
      'no-implied-eval': 'error',
      'no-new-func': 'error',
      'no-script-url': 'error',
      eqeqeq: ['error', 'always'],
      'prefer-const': 'error',
      'no-var': 'error',
      'no-shadow': ['error', { builtinGlobals: false, hoist: 'functions' }],
      // Only a use in the same scope before the declaration: a TDZ error at run time.
      'no-use-before-define': ['error', { functions: false, classes: false, variables: false }],
      'no-self-compare': 'error',
      'no-template-curly-in-string': 'error',
      'no-unmodified-loop-condition': 'error',
      'no-unreachable-loop': 'error',
      'no-promise-executor-return': 'error',
      'no-constructor-return': 'error',
      'no-return-assign': 'error',
      'no-sequences': 'error',
      'no-throw-literal': 'error',
      'no-useless-concat': 'error',
      'no-useless-return': 'error',
      'no-lone-blocks': 'error',
      'no-new-wrappers': 'error',
      'array-callback-return': 'error',
      'no-console': 'error',
      'no-alert': 'error',
    },
  },
  {
    files: ['eslint.config.js'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { ...globals.node },
    },
  },
];
