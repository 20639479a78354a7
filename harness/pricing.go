package harness

import (
	"fmt"
	"math"
	"sort"
)

// Pricing is what models cost: the models section of the definitions'
// pricing.yaml, keyed by model reference ("[provider/]model", as a run
// or a judge names it). Prices are US dollars per million tokens.
type Pricing struct {
	Models map[string]Price `json:"models" yaml:"models"`
}

// Price is one model's price, in US dollars per million tokens.
type Price struct {
	// Input is the price of a prompt token that was not read from the
	// provider's prompt cache; Output of a completion token (reasoning
	// tokens included).
	Input  float64 `json:"input" yaml:"input"`
	Output float64 `json:"output" yaml:"output"`
	// CachedInput is the price of a prompt token read from the cache;
	// nil means Input.
	CachedInput *float64 `json:"cached_input,omitempty" yaml:"cached_input,omitempty"`
	// BatchDiscount multiplies the cost of a call made in batch mode;
	// nil means 1 (no discount).
	BatchDiscount *float64 `json:"batch_discount,omitempty" yaml:"batch_discount,omitempty"`
}

// Resolved returns p with its defaults filled in: CachedInput and
// BatchDiscount are never nil.
func (p Price) Resolved() Price {
	if p.CachedInput == nil {
		v := p.Input
		p.CachedInput = &v
	}
	if p.BatchDiscount == nil {
		v := 1.0
		p.BatchDiscount = &v
	}
	return p
}

// Check returns an error naming the first field of p that is negative or
// not a finite number, or a batch discount above 1.
func (p Price) Check() error {
	for _, f := range []struct {
		name string
		v    *float64
	}{{"input", &p.Input}, {"output", &p.Output}, {"cached_input", p.CachedInput}, {"batch_discount", p.BatchDiscount}} {
		if f.v == nil {
			continue
		}
		if math.IsNaN(*f.v) || math.IsInf(*f.v, 0) || *f.v < 0 {
			return fmt.Errorf("%s must be a number of dollars per million tokens, 0 or more; got %v", f.name, *f.v)
		}
	}
	if p.BatchDiscount != nil && *p.BatchDiscount > 1 {
		return fmt.Errorf("batch_discount multiplies the cost of a batch call: from 0 to 1; got %v", *p.BatchDiscount)
	}
	return nil
}

// Price returns the price of a model reference, its defaults filled in;
// false when the reference has none. A nil Pricing has no prices.
func (pr *Pricing) Price(ref string) (Price, bool) {
	if pr == nil {
		return Price{}, false
	}
	p, ok := pr.Models[ref]
	if !ok {
		return Price{}, false
	}
	return p.Resolved(), true
}

// Cost returns what a call of model ref with usage u cost, in US
// dollars: ((prompt − cached)·input + cached·cached_input +
// completion·output) / 10⁶, times the batch discount in batch mode.
// False when ref has no price.
func (pr *Pricing) Cost(ref string, u Usage, batch bool) (usd float64, ok bool) {
	p, ok := pr.Price(ref)
	if !ok {
		return 0, false
	}
	return p.Cost(u, batch), true
}

// Cost returns what a call with usage u cost at price p (see
// Pricing.Cost).
func (p Price) Cost(u Usage, batch bool) float64 {
	p = p.Resolved()
	uncached := max(u.PromptTokens-u.CachedTokens, 0)
	usd := (float64(uncached)*p.Input + float64(u.CachedTokens)**p.CachedInput + float64(u.CompletionTokens)*p.Output) / 1e6
	if batch {
		usd *= *p.BatchDiscount
	}
	return usd
}

// Only returns the prices of the references given that have one, with
// their defaults filled in (nil when none has): the prices a run used,
// kept with it.
func (pr *Pricing) Only(refs ...string) map[string]Price {
	var out map[string]Price
	for _, ref := range refs {
		if p, ok := pr.Price(ref); ok {
			if out == nil {
				out = map[string]Price{}
			}
			out[ref] = p
		}
	}
	return out
}

// Check returns an error naming the first model whose price is wrong.
func (pr *Pricing) Check() error {
	if pr == nil {
		return nil
	}
	refs := make([]string, 0, len(pr.Models))
	for ref := range pr.Models {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		if ref == "" {
			return fmt.Errorf("models: a model reference is empty")
		}
		if err := pr.Models[ref].Check(); err != nil {
			return fmt.Errorf("models.%s: %w", ref, err)
		}
	}
	return nil
}
