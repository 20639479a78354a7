//go:build race

package host

// raceEnabled builds the test plugins with -race too, so that races in
// the SDK's plugin side are caught.
const raceEnabled = true
