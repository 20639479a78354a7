package harness

import (
	"fmt"
	"sort"
	"sync"
)

// ExpectedChecker validates an expected answer of one type when a test is
// written.
type ExpectedChecker func(Expected) error

// Registry maps evaluator types, tool names, channel types and expected
// answer types to implementations. It is safe for concurrent use. Build one
// with NewRegistry and give it to the catalog, the engine and the server;
// there is no global registry.
type Registry struct {
	mu         sync.RWMutex
	evaluators map[string]Evaluator
	tools      map[string]Tool
	channels   map[string]Channel
	expected   map[string]ExpectedChecker
	// connector answers the calls of tool records with an MCP block.
	connector ToolConnector
}

// NewRegistry returns a registry that knows the built-in expected answer
// types (see BuiltinExpectedTypes) and nothing else.
func NewRegistry() *Registry {
	r := &Registry{
		evaluators: map[string]Evaluator{},
		tools:      map[string]Tool{},
		channels:   map[string]Channel{},
		expected:   map[string]ExpectedChecker{},
	}
	for name, check := range builtinExpected {
		r.expected[name] = check
	}
	return r
}

func register[T any](r *Registry, m map[string]T, kind, name string, v T) error {
	if name == "" {
		return fmt.Errorf("register %s: empty name: %w", kind, ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := m[name]; dup {
		return fmt.Errorf("register %s %q: already registered: %w", kind, name, ErrConflict)
	}
	m[name] = v
	return nil
}

func lookup[T any](r *Registry, m map[string]T, name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := m[name]
	return v, ok
}

func names[T any](r *Registry, m map[string]T) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RegisterEvaluator makes an evaluator type available. Registering a type
// twice is an error wrapping ErrConflict.
func (r *Registry) RegisterEvaluator(typ string, e Evaluator) error {
	return register(r, r.evaluators, "evaluator", typ, e)
}

// Evaluator returns the implementation of an evaluator type.
func (r *Registry) Evaluator(typ string) (Evaluator, bool) { return lookup(r, r.evaluators, typ) }

// EvaluatorTypes lists the registered evaluator types, sorted.
func (r *Registry) EvaluatorTypes() []string { return names(r, r.evaluators) }

// RegisterTool makes a tool implementation available under its function
// name, which a tool record's function.name refers to.
func (r *Registry) RegisterTool(t Tool) error {
	return register(r, r.tools, "tool", t.Definition().Name, t)
}

// Tool returns the implementation registered under a function name.
func (r *Registry) Tool(name string) (Tool, bool) { return lookup(r, r.tools, name) }

// ToolNames lists the registered tool names, sorted.
func (r *Registry) ToolNames() []string { return names(r, r.tools) }

// RegisterChannel makes a channel type available.
func (r *Registry) RegisterChannel(typ string, c Channel) error {
	return register(r, r.channels, "channel", typ, c)
}

// Channel returns the implementation of a channel type.
func (r *Registry) Channel(typ string) (Channel, bool) { return lookup(r, r.channels, typ) }

// ChannelTypes lists the registered channel types, sorted.
func (r *Registry) ChannelTypes() []string { return names(r, r.channels) }

// RegisterExpectedType makes an expected answer type valid in tests, with
// the check run when a test of that type is written (nil: any answer).
func (r *Registry) RegisterExpectedType(typ string, check ExpectedChecker) error {
	if check == nil {
		check = func(Expected) error { return nil }
	}
	return register(r, r.expected, "expected type", typ, check)
}

// ExpectedType returns the check of an expected answer type.
func (r *Registry) ExpectedType(typ string) (ExpectedChecker, bool) {
	return lookup(r, r.expected, typ)
}

// ExpectedTypes lists the valid expected answer types, sorted.
func (r *Registry) ExpectedTypes() []string { return names(r, r.expected) }
