package engine

import (
	"fmt"
	"sync"
)

// logQueue holds log lines until a poll drains them. It is bounded: when
// nobody polls, the oldest lines are dropped and the next poll starts with
// a line saying how many.
type logQueue struct {
	mu      sync.Mutex
	lines   []string
	head    int
	size    int
	dropped int
}

func newLogQueue(capacity int) *logQueue {
	return &logQueue{lines: make([]string, capacity)}
}

func (q *logQueue) push(line string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.size == len(q.lines) {
		q.head = (q.head + 1) % len(q.lines)
		q.size--
		q.dropped++
	}
	q.lines[(q.head+q.size)%len(q.lines)] = line
	q.size++
}

// drain returns up to max lines, oldest first.
func (q *logQueue) drain(max int) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]string, 0, min(max, q.size+1))
	if q.dropped > 0 && max > 0 {
		out = append(out, fmt.Sprintf("[log][L0] %d older lines were dropped because nobody polled", q.dropped))
		q.dropped = 0
	}
	for len(out) < max && q.size > 0 {
		out = append(out, q.lines[q.head])
		q.lines[q.head] = ""
		q.head = (q.head + 1) % len(q.lines)
		q.size--
	}
	return out
}

func (q *logQueue) clear() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := range q.lines {
		q.lines[i] = ""
	}
	q.head, q.size, q.dropped = 0, 0, 0
}
