//go:build race

package harnesstest_test

const raceEnabled = true
