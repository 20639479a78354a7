package jsonschema

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL is the base URI an expected schema is compiled under. A $ref to
// another document resolves against it and is refused: schemas must be
// self-contained ($defs and "#/..." references work).
const schemaURL = "https://schema.gauntlet.invalid/expected.json"

// errExternalRef is what the loader answers for any document but the
// schema itself and the standard meta-schemas, which are built in.
var errExternalRef = errors.New("references to other documents are not supported; use $defs")

// refuseLoader loads nothing: no file and no network access at compile
// time.
type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) { return nil, errExternalRef }

// compile compiles the text of a JSON Schema: draft 2020-12 unless
// $schema names another draft, format assertions on, no external
// documents.
func compile(text string) (*jsv.Schema, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("is empty: it must hold a JSON Schema")
	}
	doc, err := jsv.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("is not JSON: %v", err)
	}
	c := jsv.NewCompiler()
	c.DefaultDraft(jsv.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("is not a usable JSON Schema: %v", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, compileError(err)
	}
	return sch, nil
}

// maxCompileErrors bounds the meta-schema errors a compile error lists.
const maxCompileErrors = 5

// compileError words a compile error on one line: the meta-schema
// violations by location ("/type: value must be one of ..."), else the
// library's text.
func compileError(err error) error {
	var se *jsv.SchemaValidationError
	var ve *jsv.ValidationError
	if errors.As(err, &se) && errors.As(se.Err, &ve) {
		var lines []string
		for _, l := range allLeaves(ve, nil) {
			lines = append(lines, message(l))
		}
		lines = compactStrings(lines)
		if len(lines) > maxCompileErrors {
			lines = append(lines[:maxCompileErrors], "...")
		}
		return fmt.Errorf("is not a valid JSON Schema: %s", strings.Join(lines, "; "))
	}
	text := strings.Join(strings.Fields(err.Error()), " ")
	text = strings.ReplaceAll(text, schemaURL, "the schema")
	return fmt.Errorf("is not a valid JSON Schema: %s", text)
}

// allLeaves appends every leaf of an error tree.
func allLeaves(e *jsv.ValidationError, out []*jsv.ValidationError) []*jsv.ValidationError {
	if len(e.Causes) == 0 {
		return append(out, e)
	}
	for _, c := range e.Causes {
		out = allLeaves(c, out)
	}
	return out
}

// DefaultCacheSize is the number of compiled schemas an Evaluator keeps
// when Options.CacheSize is zero.
const DefaultCacheSize = 1024

// cache keeps compiled schemas, and compile errors, by schema text. Each
// text is compiled once however many goroutines ask for it at the same
// time. When full, an arbitrary entry makes room.
type cache struct {
	mu  sync.Mutex
	max int
	m   map[string]*entry
}

type entry struct {
	once sync.Once
	sch  *jsv.Schema
	err  error
}

func newCache(size int) *cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &cache{max: size, m: make(map[string]*entry)}
}

func (c *cache) get(text string) (*jsv.Schema, error) {
	c.mu.Lock()
	e, ok := c.m[text]
	if !ok {
		if len(c.m) >= c.max {
			for k := range c.m {
				delete(c.m, k)
				break
			}
		}
		e = &entry{}
		c.m[text] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.sch, e.err = compile(text) })
	return e.sch, e.err
}

// len reports the number of cached entries, for tests.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
