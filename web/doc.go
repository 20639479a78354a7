// Package web is Gauntlet's dashboard: plain HTML, CSS and JavaScript
// modules compiled into the binary with embed, served as they are written
// (no build step; building Gauntlet needs no Node).
//
// The dashboard is a client of the public HTTP API like any other: it
// watches and steers evaluations (/api/start, /api/test_matrix,
// /api/log_poll...), browses history, edits definitions and manages
// agents. Handler serves it; the server mounts it at / (see
// server.Server), outside /api/, so loading it needs no API token while
// every call it makes does.
//
// Layout of the embedded files:
//
//	index.html            the page, served at /
//	assets/app.css        styles
//	assets/js/*.js        ES modules, entry point assets/js/app.js
//	assets/favicon.svg    icon
//
// Only static/ is embedded. Beside it, for development only, package.json
// pins ESLint and TypeScript, which check the modules (JSDoc types, the
// API's shapes in types/api.d.ts) without changing them: run
// .ci/web-check from the repository root, or npm ci, npx eslint . and
// npx tsc -p . here. README.md in this directory has the details.
package web
