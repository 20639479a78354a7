// Package web is Gauntlet's dashboard: plain HTML, CSS and JavaScript
// modules (no build step, no Node) compiled into the binary with embed.
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
package web
