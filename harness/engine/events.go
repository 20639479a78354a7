package engine

import (
	"context"

	"github.com/gauntlet-eval/gauntlet/harness/runs"
)

// EventKind says what an Event reports.
type EventKind string

// The event kinds, in the order a run sends them: one EventRunStarted,
// then EventTestFinished, EventCellFinished and EventLog as they happen,
// and one EventRunFinished, the run's last event.
const (
	EventRunStarted   EventKind = "run_started"
	EventTestFinished EventKind = "test_finished"
	EventCellFinished EventKind = "cell_finished"
	EventLog          EventKind = "log"
	EventRunFinished  EventKind = "run_finished"
)

// Event is something that happened in a run. Events are shared between
// their receivers: read them, do not change them.
type Event struct {
	Kind   EventKind
	RunID  string
	Domain string
	Level  int
	// Done and Total are the run's progress when the event was sent: the
	// tests finished (stored) so far, resumed ones included, and the tests
	// of the run. Every event carries them, so a progress bar is right
	// even when it missed events.
	Done, Total int
	// Result is set for EventTestFinished: the stored result.
	Result *runs.Result
	// Cell is set for EventCellFinished: the cell's final state.
	Cell *runs.Cell
	// Line is set for EventLog.
	Line string
	// Info is set for EventRunStarted, and for EventRunFinished: the run's
	// final info (status, counts, score).
	Info *runs.Info
	// Dropped is how many events of this receiver were discarded to make
	// room (see Subscribe) since the last event it received; always 0 for
	// Options.OnEvent, which misses nothing. The Dropped of the events a
	// receiver gets add up to all it lost.
	Dropped int
}

// DefaultEventBuffer is how many events a subscription, or a run's
// StartRequest.OnEvent, holds for a receiver that is behind, by default.
const DefaultEventBuffer = 1024

// SubscribeOptions configure a subscription.
type SubscribeOptions struct {
	// RunID, when set, keeps only the events of that run.
	RunID string
	// Buffer is how many events wait for the receiver (default
	// DefaultEventBuffer). When it is full, the oldest waiting event is
	// discarded to make room for the new one.
	Buffer int
}

// subscriber is one receiver of events: a subscription, or a run's own
// StartRequest.OnEvent.
type subscriber struct {
	ch      chan Event
	runID   string
	dropped int
}

// send delivers ev without ever waiting: when the buffer is full, the
// oldest waiting event is discarded (and counted) to make room. Only one
// goroutine sends at a time (e.eventMu), and the receiver only takes
// events out, so after one is discarded there is room.
func (s *subscriber) send(ev Event) {
	for {
		ev.Dropped = s.dropped
		select {
		case s.ch <- ev:
			s.dropped = 0
			return
		default:
		}
		select {
		case old := <-s.ch:
			// The count the discarded event carried passes on.
			s.dropped += 1 + old.Dropped
		default:
		}
	}
}

// Subscribe returns a channel that receives the events of every run (or
// of opts.RunID) from now on, in the order they happen, until ctx is done;
// the channel is then closed. Cancel ctx when done with it.
//
// The engine never waits for a subscriber: a receiver that falls more
// than opts.Buffer events behind loses the oldest waiting ones, and the
// next event it gets says how many in Dropped. The newest events are
// always kept, EventRunFinished included, and every event carries the
// run's progress (Done, Total), so a slow receiver still shows where the
// run is and learns how it ended.
func (e *Engine) Subscribe(ctx context.Context, opts SubscribeOptions) <-chan Event {
	s := e.subscribe(opts.RunID, opts.Buffer)
	context.AfterFunc(ctx, func() { e.unsubscribe(s) })
	return s.ch
}

func (e *Engine) subscribe(runID string, buffer int) *subscriber {
	if buffer <= 0 {
		buffer = DefaultEventBuffer
	}
	s := &subscriber{ch: make(chan Event, buffer), runID: runID}
	e.eventMu.Lock()
	defer e.eventMu.Unlock()
	if e.subs == nil {
		e.subs = map[*subscriber]struct{}{}
	}
	e.subs[s] = struct{}{}
	return s
}

// unsubscribe removes a subscriber and closes its channel, once.
func (e *Engine) unsubscribe(s *subscriber) {
	e.eventMu.Lock()
	defer e.eventMu.Unlock()
	if _, ok := e.subs[s]; ok {
		delete(e.subs, s)
		close(s.ch)
	}
}

// deliver runs a run's StartRequest.OnEvent on the events of its
// subscriber, in order, on a goroutine of its own so that a slow callback
// never holds up the run; done is closed when the last event (the run's
// EventRunFinished) has been handled.
func deliver(s *subscriber, fn func(Event), done chan<- struct{}) {
	defer close(done)
	for ev := range s.ch {
		fn(ev)
	}
}

// emit sends an event of run r to Options.OnEvent and every subscriber.
// It fills in the run's id and progress. A run sends nothing after its
// EventRunFinished (a call that ignored a reset may finish later); the
// run's own subscriber is closed after it.
func (e *Engine) emit(r *run, ev Event) {
	ev.RunID = r.info.RunID
	r.mu.Lock() // a run's total is set by its preparation
	ev.Total = r.info.TotalTests
	if ev.Kind == EventRunFinished {
		ev.Done = ev.Info.DoneTests
	} else {
		ev.Done = r.reported
	}
	r.mu.Unlock()
	e.eventMu.Lock()
	defer e.eventMu.Unlock()
	if r.announced {
		return
	}
	if e.opts.OnEvent != nil {
		e.opts.OnEvent(ev)
	}
	for s := range e.subs {
		if s.runID == "" || s.runID == ev.RunID {
			s.send(ev)
		}
	}
	if ev.Kind == EventRunFinished {
		r.announced = true
		if s := r.own; s != nil {
			if _, ok := e.subs[s]; ok {
				delete(e.subs, s)
				close(s.ch)
			}
		}
	}
}
