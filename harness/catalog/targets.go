package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/uptrace/bun"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/internal/sqldb"
)

// Black-box targets: targets/<id>.yaml, one file per target. Nothing
// else in the definitions refers to a target (a run names one), so the
// files are read on their own, after the tools.

const targetsDir = "targets"

func targetPath(id string) string { return targetsDir + "/" + id + yamlExt }

// targetDoc is the form of a target file. The response is free-form
// here (a pointer, or an object of pointers) and read by
// harness.ParseTargetResponse, whose errors name the key.
type targetDoc struct {
	ID          string                   `yaml:"id"`
	Description string                   `yaml:"description,omitempty"`
	URL         string                   `yaml:"url"`
	Method      string                   `yaml:"method,omitempty"`
	Headers     map[string]string        `yaml:"headers,omitempty"`
	Body        any                      `yaml:"body"`
	Response    any                      `yaml:"response"`
	Signature   *harness.TargetSignature `yaml:"signature,omitempty"`
}

func encodeTarget(t harness.TargetDefinition) ([]byte, error) {
	doc := targetDoc{ID: t.ID, Description: t.Description, URL: t.URL, Method: t.Method,
		Headers: t.Headers, Body: t.Body, Signature: t.Signature}
	if len(doc.Headers) == 0 {
		doc.Headers = nil
	}
	// The short form when the answer is all the reply gives.
	if t.Response.ToolCalls == "" && t.Response.Sources == "" {
		doc.Response = t.Response.Answer
	} else {
		doc.Response = t.Response
	}
	return marshal(doc)
}

func decodeTarget(data []byte) (harness.TargetDefinition, error) {
	var doc targetDoc
	if err := unmarshal(data, &doc); err != nil {
		return harness.TargetDefinition{}, err
	}
	t := harness.TargetDefinition{ID: doc.ID, Description: doc.Description, URL: doc.URL, Method: doc.Method,
		Headers: doc.Headers, Signature: doc.Signature}
	body, err := jsonValue(doc.Body)
	if err != nil {
		return t, harness.Invalid("body", "is not JSON: %v", err)
	}
	t.Body = body
	resp, err := jsonValue(doc.Response)
	if err == nil {
		t.Response, err = harness.ParseTargetResponse(resp)
	}
	if err != nil {
		ve := &harness.ValidationError{}
		ve.Merge("response", err)
		return t, ve
	}
	return t, nil
}

// jsonValue returns v as JSON decodes it (maps of strings, float64
// numbers), the form the cache gives back, so that a target read from
// its file and one read from the cache are equal.
func jsonValue(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// readTargets reads the target files of a directory into o.
func readTargets(root fs.FS, o *outline, fail func(rel string, data []byte, err error)) error {
	files, err := yamlFiles(root, targetsDir)
	if err != nil {
		return err
	}
	for _, rel := range files {
		data, err := readDefFile(root, rel)
		if err != nil {
			fail(rel, nil, err)
			continue
		}
		t, err := decodeTarget(data)
		if err == nil {
			err = checkFileID(&t.ID, strings.TrimSuffix(rel[len(targetsDir)+1:], yamlExt))
		}
		if err == nil {
			err = o.v.Target(&t)
		}
		if err != nil {
			fail(rel, data, err)
			continue
		}
		o.snap.Targets = append(o.snap.Targets, t)
		o.hashes[rel] = hashOf(data)
	}
	return nil
}

// targetRow is a target in the cache; headers, body, response and
// signature are JSON.
type targetRow struct {
	bun.BaseModel `bun:"table:def_targets"`
	Dir           string `bun:"dir,pk"` // the definitions directory (Catalog.key)
	ID            string `bun:"id,pk"`
	Description   string `bun:"description,notnull"`
	URL           string `bun:"url,notnull"`
	Method        string `bun:"method,notnull"`
	Headers       string `bun:"headers,notnull"`
	Body          string `bun:"body,notnull"`
	Response      string `bun:"response,notnull"`
	Signature     string `bun:"signature,notnull"` // "" without one
}

func toTargetRow(dir string, t harness.TargetDefinition) (*targetRow, error) {
	r := &targetRow{Dir: dir, ID: t.ID, Description: t.Description, URL: t.URL, Method: t.Method}
	for _, f := range []struct {
		dst *string
		v   any
	}{{&r.Headers, t.Headers}, {&r.Body, t.Body}, {&r.Response, t.Response}} {
		b, err := json.Marshal(f.v)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", t.ID, err)
		}
		*f.dst = string(b)
	}
	if t.Signature != nil {
		b, err := json.Marshal(t.Signature)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", t.ID, err)
		}
		r.Signature = string(b)
	}
	return r, nil
}

func (r *targetRow) target() (harness.TargetDefinition, error) {
	t := harness.TargetDefinition{ID: r.ID, Description: r.Description, URL: r.URL, Method: r.Method}
	err := json.Unmarshal([]byte(r.Headers), &t.Headers)
	if err == nil {
		err = json.Unmarshal([]byte(r.Body), &t.Body)
	}
	if err == nil {
		err = json.Unmarshal([]byte(r.Response), &t.Response)
	}
	if err == nil && r.Signature != "" {
		err = json.Unmarshal([]byte(r.Signature), &t.Signature)
	}
	if err != nil {
		return t, fmt.Errorf("target %s: %w", r.ID, err)
	}
	if t.Headers == nil {
		t.Headers = map[string]string{}
	}
	return t, nil
}

// targetsTable is catalog migration 7: the cache of targets/*.yaml.
func targetsTable(text string) func(ctx context.Context, tx bun.Tx) error {
	return func(ctx context.Context, tx bun.Tx) error {
		q := `CREATE TABLE "def_targets" ("dir" VARCHAR NOT NULL, "id" VARCHAR NOT NULL, "description" VARCHAR NOT NULL, "url" VARCHAR NOT NULL, "method" VARCHAR NOT NULL, "headers" TEXT NOT NULL, "body" TEXT NOT NULL, "response" TEXT NOT NULL, "signature" TEXT NOT NULL, PRIMARY KEY ("dir", "id"))`
		return sqldb.ExecAll(ctx, tx, strings.ReplaceAll(q, "VARCHAR", text))
	}
}

// replaceTargets replaces the targets of the cache of the definitions
// directory dir.
func replaceTargets(ctx context.Context, tx bun.IDB, dir string, ts []harness.TargetDefinition) error {
	if _, err := tx.NewDelete().Model((*targetRow)(nil)).Where("dir = ?", dir).Exec(ctx); err != nil {
		return err
	}
	rows := make([]*targetRow, len(ts))
	for i, t := range ts {
		r, err := toTargetRow(dir, t)
		if err != nil {
			return err
		}
		rows[i] = r
	}
	return insertBatches(ctx, tx, rows)
}

// Targets lists every black-box target, ordered by id. Header values,
// the URL and the signing secret hold the ${VAR} references of the file,
// never the variables' values.
func (c *Catalog) Targets(ctx context.Context) ([]harness.TargetDefinition, error) {
	if m := c.mem.Load(); m != nil {
		return m.targetList()
	}
	var rows []targetRow
	if err := c.db.NewSelect().Model(&rows).Where("dir = ?", c.key).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("list targets: %w", err)
	}
	out := make([]harness.TargetDefinition, len(rows))
	for i := range rows {
		t, err := rows[i].target()
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// Target returns one black-box target, or an error wrapping
// harness.ErrNotFound.
func (c *Catalog) Target(ctx context.Context, id string) (harness.TargetDefinition, error) {
	if m := c.mem.Load(); m != nil {
		return m.target(id)
	}
	var row targetRow
	err := c.db.NewSelect().Model(&row).Where("dir = ? AND id = ?", c.key, id).Scan(ctx)
	if err := wrapNotFound(err, "target", id); err != nil {
		return harness.TargetDefinition{}, err
	}
	return row.target()
}

// targetRows are the rows of a loaded catalog's targets, sorted by id.
func targetRows(ts []harness.TargetDefinition) ([]*targetRow, error) {
	rows := make([]*targetRow, len(ts))
	for i, t := range ts {
		r, err := toTargetRow("", t)
		if err != nil {
			return nil, err
		}
		rows[i] = r
	}
	slices.SortFunc(rows, func(a, b *targetRow) int { return strings.Compare(a.ID, b.ID) })
	return rows, nil
}

func (m *memDefs) targetList() ([]harness.TargetDefinition, error) {
	rows, err := rowsOf[targetRow](m.targets)
	if err != nil {
		return nil, err
	}
	out := make([]harness.TargetDefinition, len(rows))
	for i := range rows {
		if out[i], err = rows[i].target(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m *memDefs) target(id string) (harness.TargetDefinition, error) {
	all, err := m.targetList()
	if err != nil {
		return harness.TargetDefinition{}, err
	}
	if i := slices.IndexFunc(all, func(t harness.TargetDefinition) bool { return t.ID == id }); i >= 0 {
		return all[i], nil
	}
	return harness.TargetDefinition{}, notFound("target", id)
}
