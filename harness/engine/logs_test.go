package engine

import (
	"fmt"
	"slices"
	"testing"
)

func lines(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("[d][L1] line %d", i))
	}
	return out
}

func pushLines(q *logQueue, from, to int) {
	for _, l := range lines(from, to) {
		q.push(l)
	}
}

// Readers with a cursor each see every line, and do not take lines from
// draining polls or from each other.
func TestLogQueueCursors(t *testing.T) {
	q := newLogQueue(50)
	pushLines(q, 1, 30)

	a, ca := q.read(0, 20)
	if !slices.Equal(a, lines(1, 20)) || ca != 20 {
		t.Fatalf("first read: %q cursor %d", a, ca)
	}
	b, cb := q.read(0, 100)
	if !slices.Equal(b, lines(1, 30)) || cb != 30 {
		t.Fatalf("second reader: %q cursor %d", b, cb)
	}
	if d := q.drain(100); !slices.Equal(d, lines(1, 30)) {
		t.Fatalf("drain after the readers: %q", d)
	}
	a, ca = q.read(ca, 100)
	if !slices.Equal(a, lines(21, 30)) || ca != 30 {
		t.Fatalf("first reader again: %q cursor %d", a, ca)
	}
	if a, c := q.read(ca, 100); len(a) != 0 || c != ca {
		t.Fatalf("nothing new: %q cursor %d", a, c)
	}

	// A reader that falls behind by more than the queue holds is told.
	pushLines(q, 31, 100)
	got, c := q.read(cb, 100)
	if got[0] != "[d][L1] 20 older lines were dropped before this poll" || !slices.Equal(got[1:], lines(51, 100)) || c != 100 {
		t.Fatalf("behind: %q cursor %d", got, c)
	}
	if d := q.drain(100); d[0] != "[d][L1] 20 older lines were dropped because nobody polled" || !slices.Equal(d[1:], lines(51, 100)) {
		t.Fatalf("drain behind: %q", d)
	}

	// At most limit lines, the marker included.
	pushLines(q, 101, 180)
	got, c = q.read(150, 10)
	if !slices.Equal(got, lines(151, 160)) || c != 160 {
		t.Fatalf("limited: %q cursor %d", got, c)
	}
	got, c = q.read(10, 5)
	if len(got) != 5 || got[0] != "[d][L1] 120 older lines were dropped before this poll" || !slices.Equal(got[1:], lines(131, 134)) || c != 134 {
		t.Fatalf("limited behind: %q cursor %d", got, c)
	}
}

// A new run clears the queue: its readers see only its lines, with no
// marker for the previous run's, and cursors go on from where they were.
func TestLogQueueClear(t *testing.T) {
	q := newLogQueue(10)
	pushLines(q, 1, 5)
	_, c := q.read(0, 2)
	q.clear()
	pushLines(q, 6, 8)
	got, next := q.read(c, 100)
	if !slices.Equal(got, lines(6, 8)) || next != 8 {
		t.Fatalf("after clear: %q cursor %d", got, next)
	}
	if d := q.drain(100); !slices.Equal(d, lines(6, 8)) {
		t.Fatalf("drain after clear: %q", d)
	}
	// A cursor from beyond the newest line (kept across a server restart)
	// reads the current run from its start.
	if got, next := q.read(1000, 100); !slices.Equal(got, lines(6, 8)) || next != 8 {
		t.Fatalf("cursor from the future: %q cursor %d", got, next)
	}
}
