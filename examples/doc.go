// Package examples holds example definitions (examples/definitions) and,
// as they land, example programs. Its test checks that the example
// definitions load cleanly.
package examples
