package catalog

import (
	"maps"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// Validator returns a validator that checks a definition as the catalog's
// writes check it: the catalog's registry, and references to the domains,
// evaluators and tools it holds now. The ids are copied, so the validator
// is safe to use while the catalog changes; a write validates again, so a
// definition that a later change made invalid is still refused.
func (c *Catalog) Validator() harness.Validator {
	c.mu.Lock()
	defer c.mu.Unlock()
	refs := newRefSet()
	if c.refs != nil {
		maps.Copy(refs.domains, c.refs.domains)
		maps.Copy(refs.evaluators, c.refs.evaluators)
		maps.Copy(refs.tools, c.refs.tools)
	}
	return harness.Validator{Registry: c.reg, Refs: refs}
}
