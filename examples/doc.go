// Package examples holds example definitions (examples/definitions) and
// example programs: examples/embedder runs an embedded suite with the
// library alone, examples/evaluator-plugin is a third-party evaluator
// plugin. Its test checks that the example definitions load cleanly.
package examples
