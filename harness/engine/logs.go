package engine

import (
	"fmt"
	"strings"
	"sync"
)

// logQueue holds the newest log lines of the current run, each numbered
// by a sequence that only grows. It is bounded: when it is full, the
// oldest line goes.
//
// Two kinds of reader share it. Drain (GET /api/log_poll without a
// cursor) hands each line out once, to whichever poll comes first, and
// starts with a line saying how many were dropped when nobody polled for
// too long. Read (with a cursor) lets any number of readers follow the log
// on their own, each keeping the sequence number of the last line it saw.
type logQueue struct {
	mu  sync.Mutex
	buf []string
	// first and last are the sequence numbers of the oldest and newest
	// lines kept; first == last+1 when none is.
	first, last uint64
	// cleared is the last line of the previous run: lines up to it are
	// gone on purpose, not dropped.
	cleared uint64
	// drained is the last line handed out by drain.
	drained uint64
}

func newLogQueue(capacity int) *logQueue {
	return &logQueue{buf: make([]string, capacity), first: 1}
}

func (q *logQueue) push(line string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.last++
	q.buf[q.last%uint64(len(q.buf))] = line
	if q.last-q.first+1 > uint64(len(q.buf)) {
		q.first = q.last - uint64(len(q.buf)) + 1
	}
}

// drain returns up to limit lines no drain returned before, oldest first.
func (q *logQueue) drain(limit int) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	lines, next := q.readLocked(q.drained, limit, "because nobody polled")
	q.drained = next
	return lines
}

// read returns up to limit lines after the line numbered after, oldest
// first, and the number of the last line returned (after itself when
// there is none). A cursor from beyond the newest line (one kept from
// before a restart) reads from the start of the current run.
func (q *logQueue) read(after uint64, limit int) ([]string, uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.readLocked(after, limit, "before this poll")
}

func (q *logQueue) readLocked(after uint64, limit int, why string) ([]string, uint64) {
	if after > q.last {
		after = q.cleared
	}
	start := max(after, q.cleared) + 1
	out := make([]string, 0, min(uint64(limit), q.last-start+2))
	if start < q.first && limit > 0 {
		// The marker takes the domain and level of the first line kept, so
		// that it has the form of every other line.
		out = append(out, fmt.Sprintf("%s %d older lines were dropped %s", linePrefix(q.buf[q.first%uint64(len(q.buf))]), q.first-start, why))
		start = q.first
	}
	next := start - 1
	for ; next < q.last && len(out) < limit; next++ {
		out = append(out, q.buf[(next+1)%uint64(len(q.buf))])
	}
	if next < after {
		next = after
	}
	return out, next
}

// tail is read that skips to the newest n lines: when more than n lines
// follow after, the older ones are left out and a first line says how
// many. It returns at most n+1 lines and the number of the last one.
func (q *logQueue) tail(after uint64, n int) ([]string, uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if after > q.last {
		after = q.cleared
	}
	start := max(after, q.cleared) + 1
	n = min(n, len(q.buf)) // so the lines kept cover the newest n
	if n <= 0 || q.last < start || q.last-start+1 <= uint64(n) {
		return q.readLocked(after, max(n, 1), "before this poll")
	}
	from := q.last - uint64(n) + 1
	lines, next := q.readLocked(from-1, n, "before this poll")
	if len(lines) == 0 {
		return lines, next
	}
	marker := fmt.Sprintf("%s %d earlier lines left out; the newest %d follow", linePrefix(lines[0]), from-start, n)
	return append([]string{marker}, lines...), next
}

// clear forgets the lines of the previous run; sequence numbers go on.
func (q *logQueue) clear() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range q.buf {
		q.buf[i] = ""
	}
	q.first, q.cleared, q.drained = q.last+1, q.last, q.last
}

// linePrefix returns the "[<domain>][L<level>]" that starts a log line.
func linePrefix(line string) string {
	if i := strings.Index(line, "] "); i >= 0 && strings.HasPrefix(line, "[") {
		return line[:i+1]
	}
	return "[run][L1]"
}
