package engine

import "github.com/gauntlet-eval/gauntlet/harness"

// contentOnly returns msgs without their parts (a model's reasoning): an
// evaluator sees what a model answered, never what it thought. The
// transcript keeps the parts; msgs is not changed.
func contentOnly(msgs []harness.Message) []harness.Message {
	out := make([]harness.Message, len(msgs))
	for i, m := range msgs {
		m.Parts = nil
		out[i] = m
	}
	return out
}
