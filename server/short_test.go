package server_test

import "testing"

// fullSizeBodies reports whether the tests send bodies the size of the
// built-in limits (a 50 MiB document, 10 MiB of text, a 256 MiB stream):
// not under -short. The race pass of make test runs with -short, and the
// race detector makes every byte of a body cost many times over (it
// checks each copy of it); there a test whose limit is one of
// server.Limits lowers it and sends small bodies that reach it the same
// way, and the cases of the limits built into the knowledge base (the
// size of a document or of a text file) are left to the exhaustive pass,
// which runs them whole without the race detector. A test that calls it
// is named in the Makefile's EXHAUSTIVE_TESTS.
func fullSizeBodies() bool { return !testing.Short() }
