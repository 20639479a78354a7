package deadport_test

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/internal/deadport"
)

// TestAddrRefusesAndIsHeld: a connection to the address is refused, and
// no listener can take its port while the test runs.
func TestAddrRefusesAndIsHeld(t *testing.T) {
	t.Parallel()
	addr := deadport.Addr(t)
	for range 3 {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("%s accepted a connection", addr)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial %s: %v, want connection refused", addr, err)
		}
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("a listener took %s while it was held", addr)
	}
}
