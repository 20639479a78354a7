//go:build race

package kbdoc

// raceBuild is true in a race-detector build.
const raceBuild = true
