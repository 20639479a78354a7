package harnesstest

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"
)

// Limits of the kits.
const (
	// callLimit bounds a call the kit expects to complete normally.
	callLimit = 30 * time.Second
	// promptLimit is how soon a call must return once its context is done.
	promptLimit = 2 * time.Second
	// concurrency is how many goroutines the concurrency checks use.
	concurrency = 8
)

// outcome is how a call of an implementation ended.
type outcome[T any] struct {
	v     T
	err   error
	panic any
	stack string
	// timedOut is true when the call had not returned within the limit;
	// it is left running.
	timedOut bool
	took     time.Duration
}

// call runs f in its own goroutine, catching a panic, and waits for it at
// most limit.
func call[T any](limit time.Duration, f func() (T, error)) outcome[T] {
	ch := make(chan outcome[T], 1)
	start := time.Now()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- outcome[T]{panic: p, stack: string(debug.Stack())}
			}
		}()
		v, err := f()
		ch <- outcome[T]{v: v, err: err}
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case o := <-ch:
		o.took = time.Since(start)
		return o
	case <-t.C:
		return outcome[T]{timedOut: true, took: limit}
	}
}

// problem describes an outcome that is neither a value nor an error: a
// panic or a call that did not return; "" otherwise.
func (o outcome[T]) problem(what string) string {
	switch {
	case o.panic != nil:
		return fmt.Sprintf("%s panicked: %v\n%s", what, o.panic, o.stack)
	case o.timedOut:
		return fmt.Sprintf("%s did not return within %s", what, o.took)
	}
	return ""
}

// snapshot is v as JSON, to tell whether a call changed it.
func snapshot(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return string(b)
}
