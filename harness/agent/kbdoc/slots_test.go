package kbdoc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestChildSlotsBoundChildren: with every slot taken, a further document
// waits within its time limit and is then refused as busy, never
// starting a child beyond the bound.
func TestChildSlotsBoundChildren(t *testing.T) {
	for range cap(childSlots) {
		childSlots <- struct{}{}
	}
	defer func() {
		for range cap(childSlots) {
			<-childSlots
		}
	}()
	_, _, err := extractChild(context.Background(), "a.pdf", PDF, []byte("%PDF-1.4"), Options{Timeout: 50 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "documents were being read") {
		t.Fatalf("extract with every slot taken = %v, want a busy DeadlineExceeded", err)
	}
}
