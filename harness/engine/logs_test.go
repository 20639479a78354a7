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
	t.Parallel()
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
	t.Parallel()
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

// A tail read skips to the newest lines, and says how many it left out.
func TestLogQueueTail(t *testing.T) {
	t.Parallel()
	q := newLogQueue(50)
	pushLines(q, 1, 40)
	for _, tc := range []struct {
		name   string
		after  uint64
		n      int
		want   []string
		cursor uint64
	}{
		{"a long backlog", 0, 10, append([]string{"[d][L1] 30 earlier lines left out; the newest 10 follow"}, lines(31, 40)...), 40},
		{"from a cursor", 25, 10, append([]string{"[d][L1] 5 earlier lines left out; the newest 10 follow"}, lines(31, 40)...), 40},
		{"fewer than n", 35, 10, lines(36, 40), 40},
		{"exactly n", 30, 10, lines(31, 40), 40},
		{"nothing new", 40, 10, []string{}, 40},
		{"more than the queue holds", 0, 100, lines(1, 40), 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, c := q.tail(tc.after, tc.n)
			if !slices.Equal(got, tc.want) || c != tc.cursor {
				t.Errorf("tail(%d, %d) = %q cursor %d, want %q cursor %d", tc.after, tc.n, got, c, tc.want, tc.cursor)
			}
		})
	}
	// Behind by more than the queue holds: one line says how many are
	// missing in all, the dropped ones with those left out.
	pushLines(q, 41, 120)
	got, c := q.tail(0, 10)
	if got[0] != "[d][L1] 110 earlier lines left out; the newest 10 follow" || !slices.Equal(got[1:], lines(111, 120)) || c != 120 {
		t.Errorf("tail far behind: %q cursor %d", got, c)
	}
	// A tail larger than the queue reads all it holds.
	got, c = q.tail(0, 500)
	if got[0] != "[d][L1] 70 earlier lines left out; the newest 50 follow" || !slices.Equal(got[1:], lines(71, 120)) || c != 120 {
		t.Errorf("tail over the capacity: %q cursor %d", got, c)
	}
}
