// Package deadport gives tests a loopback address that refuses
// connections for as long as the test runs.
//
// A port found free, then closed again, is free for anyone: a server of a
// test running in parallel may take it, and its answers then come back
// where a refusal was expected. Addr holds its port with a socket bound
// to it that never listens, so every connection to it is refused, and
// no one else can bind it, until the test ends.
package deadport

import (
	"fmt"
	"syscall"
	"testing"
)

// Addr returns "127.0.0.1:PORT", a loopback address that refuses every
// connection until tb ends.
func Addr(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		tb.Fatalf("deadport: socket: %v", err)
	}
	tb.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatalf("deadport: bind: %v", err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatalf("deadport: getsockname: %v", err)
	}
	in4, ok := sa.(*syscall.SockaddrInet4)
	if !ok {
		tb.Fatalf("deadport: bound to %v", sa)
	}
	return fmt.Sprintf("127.0.0.1:%d", in4.Port)
}
