// Package maketest holds tests of the Makefile's test targets: that the
// tests which do less under -short (make test's race pass) are the ones
// its exhaustive pass runs whole.
package maketest
