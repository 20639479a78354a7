package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// pricingFile is the definitions' price list, at the top of the
// directory: models: {"<model reference>": {input, output, cached_input,
// batch_discount}}, US dollars per million tokens.
const pricingFile = "pricing.yaml"

// readPricing reads the directory's pricing.yaml: nil without one. A file
// that does not decode, or holds a price that is negative or not a
// number, is an error at its line; it loads no price at all.
func readPricing(root fs.FS) (*harness.Pricing, []byte, []FileError) {
	if _, err := fs.Stat(root, pricingFile); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	data, err := readDefFile(root, pricingFile)
	if err != nil {
		return nil, nil, fileErrors(pricingFile, nil, err)
	}
	p, err := decodePricing(data)
	if err != nil {
		return nil, nil, fileErrors(pricingFile, data, err)
	}
	return p, data, nil
}

// decodePricing decodes and checks a pricing file.
func decodePricing(data []byte) (*harness.Pricing, error) {
	var p harness.Pricing
	if err := unmarshal(data, &p); err != nil {
		return nil, err
	}
	var probs Problems
	for _, ref := range slices.Sorted(maps.Keys(p.Models)) {
		if err := p.Models[ref].Check(); err != nil {
			probs = append(probs, &Problem{Line: lineOfModel(data, ref), Message: fmt.Sprintf("models.%s: %v", strconv.Quote(ref), err)})
		}
	}
	if len(probs) > 0 {
		return nil, probs
	}
	if p.Models == nil {
		p.Models = map[string]harness.Price{}
	}
	return &p, nil
}

func encodePricing(p *harness.Pricing) ([]byte, error) { return marshal(p) }

// lineOfModel is the line of a model's entry under models: in a pricing
// file (its references may hold dots, which lineOfField splits on).
func lineOfModel(data []byte, ref string) int {
	file, err := parser.ParseBytes(data, 0)
	if err != nil || len(file.Docs) == 0 || file.Docs[0] == nil {
		return 0
	}
	var models ast.Node
	eachPair(unwrap(file.Docs[0].Body), func(kv *ast.MappingValueNode) {
		if keyName(kv.Key) == "models" {
			models = unwrap(kv.Value)
		}
	})
	line := 0
	eachPair(models, func(kv *ast.MappingValueNode) {
		if keyName(kv.Key) == ref {
			line = lineOfNode(kv.Key)
		}
	})
	return line
}

func eachPair(n ast.Node, fn func(*ast.MappingValueNode)) {
	switch x := n.(type) {
	case *ast.MappingNode:
		for _, kv := range x.Values {
			fn(kv)
		}
	case *ast.MappingValueNode:
		fn(x)
	}
}

// clonePricing returns a copy of p that shares nothing with it.
func clonePricing(p *harness.Pricing) *harness.Pricing {
	if p == nil {
		return nil
	}
	return &harness.Pricing{Models: maps.Clone(p.Models)}
}

// Pricing returns the prices of the definitions' pricing.yaml; nil when
// there is none, or it did not load.
func (c *Catalog) Pricing() *harness.Pricing {
	return clonePricing(c.pricing.Load())
}

// mergePricing returns base with in's prices added, each replacing the
// price of the same reference; in's prices are checked into ve.
func mergePricing(ve *harness.ValidationError, base, in *harness.Pricing) *harness.Pricing {
	if in == nil {
		return clonePricing(base)
	}
	out := clonePricing(base)
	if out == nil {
		out = &harness.Pricing{}
	}
	if out.Models == nil {
		out.Models = map[string]harness.Price{}
	}
	for _, ref := range slices.Sorted(maps.Keys(in.Models)) {
		p := in.Models[ref]
		if ref == "" {
			ve.Add("pricing.models", "a model reference is empty")
			continue
		}
		if err := p.Check(); err != nil {
			ve.Add("pricing.models."+ref, "%v", err)
			continue
		}
		out.Models[ref] = p
	}
	return out
}
