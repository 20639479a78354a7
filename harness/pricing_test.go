package harness_test

import (
	"math"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

func TestPricingCost(t *testing.T) {
	half, cached := 0.5, 1.25
	p := &harness.Pricing{Models: map[string]harness.Price{
		"anthropic/claude": {Input: 3, Output: 15, CachedInput: &cached, BatchDiscount: &half},
		"plain":            {Input: 2, Output: 8},
	}}
	u := harness.Usage{PromptTokens: 1000, CompletionTokens: 300, CachedTokens: 400, ReasoningTokens: 120}
	for _, c := range []struct {
		ref   string
		batch bool
		want  float64
		ok    bool
	}{
		{"anthropic/claude", false, (600*3 + 400*1.25 + 300*15) / 1e6, true},
		{"anthropic/claude", true, (600*3 + 400*1.25 + 300*15) / 1e6 * 0.5, true},
		{"plain", false, (600*2 + 400*2 + 300*8) / 1e6, true}, // cached_input defaults to input
		{"plain", true, (600*2 + 400*2 + 300*8) / 1e6, true},  // batch_discount to 1
		{"claude", false, 0, false},                           // a reference is matched whole
	} {
		got, ok := p.Cost(c.ref, u, c.batch)
		if ok != c.ok || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Cost(%s, batch %v) = %v, %v; want %v, %v", c.ref, c.batch, got, ok, c.want, c.ok)
		}
	}
	if _, ok := (*harness.Pricing)(nil).Price("plain"); ok {
		t.Error("a nil Pricing has a price")
	}
	neg := -1.0
	if err := (&harness.Pricing{Models: map[string]harness.Price{"m": {Input: 1, CachedInput: &neg}}}).Check(); err == nil {
		t.Error("a negative cached_input passed Check")
	}
}
