package catalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gauntlet-eval/gauntlet/harness"
	"golang.org/x/sync/semaphore"
)

// The layout of a definitions directory. Paths are relative
// to the directory and use forward slashes.
const (
	evaluatorsDir = "evaluators"
	toolsDir      = "tools"
	domainsDir    = "domains"
	domainFile    = "domain.yaml"
	yamlExt       = ".yaml"
)

func evaluatorPath(id string) string { return evaluatorsDir + "/" + id + yamlExt }
func toolPath(id string) string      { return toolsDir + "/" + id + yamlExt }
func domainPath(id string) string    { return domainsDir + "/" + id + "/" + domainFile }
func domainDir(id string) string     { return domainsDir + "/" + id }
func levelPath(domainID string, level int) string {
	return domainsDir + "/" + domainID + "/level-" + strconv.Itoa(level) + yamlExt
}

// parseLevelName reads n from "level-<n>.yaml".
func parseLevelName(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "level-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, yamlExt)
	// Digits only: Atoi would also take "+1" and "-0", names that
	// levelPath does not give back.
	if !ok || s == "" || (len(s) > 1 && s[0] == '0') || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > harness.MaxLevel {
		return 0, false
	}
	return n, true
}

// domainDoc is the form of domain.yaml.
type domainDoc struct {
	ID           string `yaml:"id"`
	Name         string `yaml:"name"`
	Description  string `yaml:"description,omitempty"`
	EvaluatorID  string `yaml:"evaluator_id,omitempty"`
	Enabled      *bool  `yaml:"enabled"`
	SystemPrompt string `yaml:"system_prompt,omitempty"`
	Icon         string `yaml:"icon,omitempty"`
	Color        string `yaml:"color,omitempty"`
}

// levelDoc is the form of level-<n>.yaml: the level's configuration and
// its tests, in order.
type levelDoc struct {
	SystemPrompt     string          `yaml:"system_prompt,omitempty"`
	SystemPromptMode string          `yaml:"system_prompt_mode,omitempty"`
	PassThreshold    *float64        `yaml:"pass_threshold,omitempty"`
	Tools            []string        `yaml:"tools,omitempty"`
	Params           *harness.Params `yaml:"params,omitempty"`
	Tests            []harness.Test  `yaml:"tests"`
}

// marshal writes a definition file with the package's own YAML emitter
// (yamlenc.go): stable, readable, and read back unchanged by the parser.
func marshal(v any) ([]byte, error) {
	b, err := encodeYAML(v)
	if err != nil {
		return nil, fmt.Errorf("encode yaml: %w", err)
	}
	return b, nil
}

// unmarshal decodes a definitions file strictly (see decodeStrict).
func unmarshal(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("file is empty")
	}
	return decodeStrict(data, v)
}

func encodeDomain(d harness.Domain) ([]byte, error) {
	enabled := d.Enabled
	return marshal(domainDoc{
		ID: d.ID, Name: d.Name, Description: d.Description, EvaluatorID: d.EvaluatorID,
		Enabled: &enabled, SystemPrompt: d.SystemPrompt, Icon: d.Icon, Color: d.Color,
	})
}

func decodeDomain(data []byte) (harness.Domain, error) {
	var doc domainDoc
	if err := unmarshal(data, &doc); err != nil {
		return harness.Domain{}, err
	}
	d := harness.Domain{
		ID: doc.ID, Name: doc.Name, Description: doc.Description, EvaluatorID: doc.EvaluatorID,
		Enabled: doc.Enabled == nil || *doc.Enabled, SystemPrompt: doc.SystemPrompt, Icon: doc.Icon, Color: doc.Color,
	}
	return d, nil
}

func encodeLevel(l harness.LevelConfig, tests []harness.Test) ([]byte, error) {
	doc := levelDoc{
		SystemPrompt:     l.SystemPrompt,
		SystemPromptMode: string(l.SystemPromptMode),
		Tools:            l.Tools,
		Tests:            make([]harness.Test, len(tests)),
	}
	if l.Params != nil && !l.Params.IsZero() {
		doc.Params = l.Params
	}
	if doc.SystemPromptMode == string(harness.PromptAppend) {
		doc.SystemPromptMode = ""
	}
	if l.PassThreshold != harness.DefaultPassThreshold {
		pt := l.PassThreshold
		doc.PassThreshold = &pt
	}
	for i, t := range tests {
		if len(t.Tools) == 0 {
			t.Tools = nil
		}
		if len(t.Expected.Arguments) == 0 {
			t.Expected.Arguments = nil
		}
		doc.Tests[i] = t
	}
	return marshal(doc)
}

func decodeLevel(data []byte, domainID string, level int) (harness.LevelConfig, []harness.Test, error) {
	doc, ok := levelDoc{}, false
	if len(data) >= chunkMin {
		doc, ok = decodeTestsChunked(data)
	}
	if !ok {
		if err := unmarshal(data, &doc); err != nil {
			return harness.LevelConfig{}, nil, err
		}
	}
	l := harness.LevelConfig{
		DomainID:         domainID,
		Level:            level,
		SystemPrompt:     doc.SystemPrompt,
		SystemPromptMode: harness.PromptMode(doc.SystemPromptMode),
		PassThreshold:    harness.DefaultPassThreshold,
		Tools:            doc.Tools,
		Params:           doc.Params,
	}
	if doc.PassThreshold != nil {
		l.PassThreshold = *doc.PassThreshold
	}
	for i := range doc.Tests {
		t := &doc.Tests[i]
		t.DomainID, t.Level = domainID, level
		if t.ID == "" {
			t.ID = fmt.Sprintf("%s-l%d-%d", domainID, level, i+1)
		}
	}
	return l, doc.Tests, nil
}

func encodeEvaluator(e harness.EvaluatorConfig) ([]byte, error) { return marshal(e) }

func decodeEvaluator(data []byte) (harness.EvaluatorConfig, error) {
	var e harness.EvaluatorConfig
	err := unmarshal(data, &e)
	return e, err
}

func encodeTool(t harness.ToolDefinition) ([]byte, error) { return marshal(t) }

func decodeTool(data []byte) (harness.ToolDefinition, error) {
	var t harness.ToolDefinition
	err := unmarshal(data, &t)
	return t, err
}

// FileError is a definitions file that could not be loaded, and why. A
// file may have several, one per problem found (each unknown key, say).
type FileError struct {
	// File is the path relative to the definitions directory.
	File string `json:"file"`
	// Line is the line of the file the error is at, from 1; absent (0)
	// when the error is about the whole file.
	Line int `json:"line,omitempty"`
	// Key is the key the format does not know, for that error.
	Key   string `json:"key,omitempty"`
	Error string `json:"error"`
}

// String returns "file:line: error", or "file: error" without a line.
func (fe FileError) String() string {
	if fe.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", fe.File, fe.Line, fe.Error)
	}
	return fe.File + ": " + fe.Error
}

// fileErrors turns the error of one file into its FileErrors: one per
// problem of a strict decode; a validation error at the line of its first
// field found in data.
func fileErrors(rel string, data []byte, err error) []FileError {
	var probs Problems
	if errors.As(err, &probs) {
		out := make([]FileError, len(probs))
		for i, p := range probs {
			out[i] = FileError{File: rel, Line: p.Line, Key: p.Key, Error: p.Message}
		}
		return out
	}
	fe := FileError{File: rel, Error: err.Error()}
	var ve *harness.ValidationError
	if data != nil && errors.As(err, &ve) {
		for _, f := range ve.Fields {
			if fe.Line = lineOfField(data, f.Field); fe.Line > 0 {
				break
			}
		}
	}
	return []FileError{fe}
}

func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// loaded is what reading a definitions directory produced: the valid
// definitions, the hash of every file they came from, and the files that
// were refused.
type loaded struct {
	snap   harness.Snapshot
	hashes map[string]string
	errs   []FileError
}

// refSet answers harness.Lookup over sets of ids.
type refSet struct {
	domains, evaluators, tools map[string]bool
}

func newRefSet() *refSet {
	return &refSet{domains: map[string]bool{}, evaluators: map[string]bool{}, tools: map[string]bool{}}
}

func (r *refSet) HasDomain(id string) bool    { return r.domains[id] }
func (r *refSet) HasEvaluator(id string) bool { return r.evaluators[id] }
func (r *refSet) HasTool(id string) bool      { return r.tools[id] }

// readDir loads a whole definitions directory into memory (for Load and
// Check; a database-backed catalog streams it, see syncDB).
func readDir(root fs.FS, reg *harness.Registry) (*loaded, error) {
	o, err := readOutline(root, reg)
	if err != nil {
		return nil, err
	}
	sink := newMemSink()
	errs, err := readLevels(root, o, sink)
	if err != nil {
		return nil, err
	}
	out := &loaded{snap: o.snap, hashes: o.hashes, errs: append(o.errs, errs...)}
	out.snap.Levels, out.snap.Tests = sink.levels, sink.tests
	for rel, h := range sink.hashes {
		out.hashes[rel] = h
	}
	return out, nil
}

// outline is what reading a directory's evaluators, tools and domain
// files produced: those definitions, the hashes of the files that loaded,
// the errors of the evaluators and tools, and the domain folders, in
// order, for readLevels.
type outline struct {
	snap    harness.Snapshot // Domains, Evaluators and Tools only
	hashes  map[string]string
	errs    []FileError
	refs    *refSet
	v       harness.Validator
	folders []domainFolder
}

// domainFolder is a folder of domains/: its domain file's errors (kept
// here so that they are reported before its levels'), whether it loaded,
// and the numbers of its level files, ascending.
type domainFolder struct {
	id     string
	ok     bool
	errs   []FileError
	levels []int
}

// readDefFile reads a definitions file; a file that cannot be read is an
// error to report as the file's.
func readDefFile(root fs.FS, rel string) ([]byte, error) {
	data, err := fs.ReadFile(root, rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("file is missing")
	case err != nil:
		// Not the error's text: it holds the server's absolute path.
		return nil, fmt.Errorf("cannot read the file (%v)", errors.Unwrap(err))
	}
	return data, nil
}

// readOutline reads the evaluators, tools and domain files of a
// directory. Each file is decoded and validated on its own, in dependency
// order (evaluators, tools, domains); a file that fails is reported and
// contributes nothing, and the files that depend on it fail in turn.
func readOutline(root fs.FS, reg *harness.Registry) (*outline, error) {
	out := &outline{hashes: map[string]string{}, refs: newRefSet()}
	out.v = harness.Validator{Registry: reg, Refs: out.refs}
	v := out.v
	fail := func(rel string, data []byte, err error) {
		out.errs = append(out.errs, fileErrors(rel, data, err)...)
	}
	read := func(rel string) ([]byte, bool) {
		data, err := readDefFile(root, rel)
		if err != nil {
			fail(rel, nil, err)
			return nil, false
		}
		return data, true
	}
	stem := func(rel string) string { return strings.TrimSuffix(path.Base(rel), yamlExt) }

	files, err := yamlFiles(root, evaluatorsDir)
	if err != nil {
		return nil, err
	}
	for _, rel := range files {
		data, ok := read(rel)
		if !ok {
			continue
		}
		e, err := decodeEvaluator(data)
		if err == nil {
			err = checkFileID(&e.ID, stem(rel))
		}
		if err == nil {
			err = v.Evaluator(&e)
		}
		if err == nil {
			err = checkStorable("config", e.Config)
		}
		if err != nil {
			fail(rel, data, err)
			continue
		}
		out.refs.evaluators[e.ID] = true
		out.snap.Evaluators = append(out.snap.Evaluators, e)
		out.hashes[rel] = hashOf(data)
	}

	if files, err = yamlFiles(root, toolsDir); err != nil {
		return nil, err
	}
	for _, rel := range files {
		data, ok := read(rel)
		if !ok {
			continue
		}
		t, err := decodeTool(data)
		if err == nil {
			err = checkFileID(&t.ID, stem(rel))
		}
		if err == nil {
			err = v.Tool(&t)
		}
		if err != nil {
			fail(rel, data, err)
			continue
		}
		out.refs.tools[t.ID] = true
		out.snap.Tools = append(out.snap.Tools, t)
		out.hashes[rel] = hashOf(data)
	}

	// Targets: nothing else refers to one.
	if err := readTargets(root, out, fail); err != nil {
		return nil, err
	}

	// Prices: a file of their own, which nothing else depends on.
	if p, data, errs := readPricing(root); errs != nil {
		out.errs = append(out.errs, errs...)
	} else if p != nil {
		out.snap.Pricing = p
		out.hashes[pricingFile] = hashOf(data)
	}

	entries, err := fs.ReadDir(root, domainsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read definitions: %w", err)
	}
	for _, ent := range entries {
		if !ent.IsDir() || strings.HasPrefix(ent.Name(), ".") {
			continue
		}
		id := ent.Name()
		levels, err := levelFiles(root, id)
		if err != nil {
			return nil, err
		}
		drel := domainPath(id)
		if len(levels) == 0 {
			// A folder with no definition file at all (notes left behind
			// by a deleted domain, say) is not a domain.
			if _, err := fs.Stat(root, drel); errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
		f := domainFolder{id: id, levels: levels}
		data, err := readDefFile(root, drel)
		if err == nil {
			var d harness.Domain
			d, err = decodeDomain(data)
			if err == nil {
				err = checkFileID(&d.ID, id)
			}
			if err == nil {
				err = v.Domain(&d)
			}
			if err == nil {
				f.ok = true
				out.refs.domains[d.ID] = true
				out.snap.Domains = append(out.snap.Domains, d)
				out.hashes[drel] = hashOf(data)
			}
		}
		if err != nil {
			f.errs = fileErrors(drel, data, err)
		}
		out.folders = append(out.folders, f)
	}
	return out, nil
}

// levelFile is one level file of a directory.
type levelFile struct {
	rel    string
	domain string
	level  int
}

// levelSink takes the level files of a directory as readLevels reads
// them, in order: each file's level and tests, or that it holds it
// already.
type levelSink interface {
	// holds reports whether the sink holds the file as it is: it is then
	// neither read nor added, only kept. It is called ahead of the file's
	// turn, from another goroutine than the other methods, and must not
	// change the sink.
	holds(f levelFile) bool
	// keep takes a file the sink holds, in its turn.
	keep(f levelFile)
	// defined returns, of ids, those a file given to the sink before
	// defines, each with that file's path.
	defined(ids []string) (map[string]string, error)
	// add takes a valid file's level and tests. When some of the ids are
	// defined by another file it adds nothing and returns a *dupError.
	add(f levelFile, hash string, l harness.LevelConfig, tests []harness.Test) error
}

// dupError is the ids of a file defined by other files, each with that
// file's path.
type dupError struct{ files map[string]string }

func (e *dupError) Error() string {
	return fmt.Sprintf("%d test ids defined in other files", len(e.files))
}

// decodeBudget bounds the bytes of the level files decoded at once by a
// sync (a larger file is decoded alone). A variable for the tests.
var decodeBudget int64 = 2 << 20

// readItem is one step of readLevels, in the directory's order: the
// errors of a domain file, or a level file.
type readItem struct {
	errs  []FileError
	level *levelFile
	// skipped is set for a level file of a domain that did not load.
	skipped bool
}

// readItems lists the steps of readLevels.
func readItems(o *outline) []readItem {
	var items []readItem
	for _, folder := range o.folders {
		if len(folder.errs) > 0 {
			items = append(items, readItem{errs: folder.errs})
		}
		for _, lv := range folder.levels {
			f := levelFile{rel: levelPath(folder.id, lv), domain: folder.id, level: lv}
			items = append(items, readItem{level: &f, skipped: !folder.ok})
		}
	}
	return items
}

// decoded is a level file read, decoded and checked on its own (without
// the test ids of other files).
type decoded struct {
	kept    bool // the sink holds it: not read
	data    []byte
	hash    string
	ok      bool // decoded: l and tests are set
	l       harness.LevelConfig
	tests   []harness.Test
	err     error // the file's error, if any
	readErr bool  // err is a failure to read it
}

func decodeFile(root fs.FS, v harness.Validator, f levelFile) *decoded {
	d := &decoded{}
	data, err := readDefFile(root, f.rel)
	if err != nil {
		d.err, d.readErr = err, true
		return d
	}
	d.data, d.hash = data, hashOf(data)
	if d.l, d.tests, d.err = decodeLevel(data, f.domain, f.level); d.err != nil {
		return d
	}
	d.ok = true
	d.err = checkLevel(v, &d.l, d.tests, nil)
	return d
}

// readLevels reads the level files of every domain folder of o, in
// order, into sink. It returns the errors of the domain files and of the
// level files that did not load: a level of a domain that did not load,
// a file that fails to decode or validate, or one defining a test id a
// file read before it defines. An error of the sink ends the reading.
//
// Files are decoded and checked by several goroutines, a few files ahead
// of the one the sink takes (decoding is most of a sync's work); the sink
// takes them one at a time, in order, so that at most a few files are
// held at once. The files being decoded at once total at most
// decodeBudget bytes (or are one file): the YAML parser allocates about
// fifty times a file's size while it decodes it.
func readLevels(root fs.FS, o *outline, sink levelSink) ([]FileError, error) {
	items := readItems(o)
	workers := min(runtime.GOMAXPROCS(0), 4)
	ctx, cancel := context.WithCancel(context.Background())
	out := make([]chan *decoded, len(items))
	for i := range out {
		out[i] = make(chan *decoded, 1)
	}
	type job struct {
		i      int
		weight int64
	}
	jobs := make(chan job)
	ahead := make(chan struct{}, 2*workers) // files decoded but not yet taken
	budget := semaphore.NewWeighted(decodeBudget)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(jobs)
		for i, it := range items {
			if it.level == nil || it.skipped {
				continue
			}
			select {
			case ahead <- struct{}{}:
			case <-ctx.Done():
				return
			}
			if sink.holds(*it.level) {
				out[i] <- &decoded{kept: true} // not read
				continue
			}
			weight := int64(1)
			if fi, err := fs.Stat(root, it.level.rel); err == nil {
				weight = min(max(fi.Size(), 1), decodeBudget)
			}
			if budget.Acquire(ctx, weight) != nil {
				return
			}
			select {
			case jobs <- job{i, weight}:
			case <-ctx.Done():
				budget.Release(weight)
				return
			}
		}
	})
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				d := decodeFile(root, o.v, *items[j.i].level)
				budget.Release(j.weight)
				out[j.i] <- d
			}
		})
	}
	defer func() {
		cancel()
		wg.Wait()
	}()

	var errs []FileError
	fail := func(rel string, data []byte, err error) {
		errs = append(errs, fileErrors(rel, data, err)...)
	}
	for i, it := range items {
		switch {
		case it.level == nil:
			errs = append(errs, it.errs...)
			continue
		case it.skipped:
			fail(it.level.rel, nil, fmt.Errorf("skipped: %s did not load", domainPath(it.level.domain)))
			continue
		}
		d := <-out[i]
		<-ahead
		if err := takeLevel(o.v, sink, *it.level, d, fail); err != nil {
			return nil, err
		}
	}
	return errs, nil
}

// takeLevel gives a decoded file to the sink, or reports its errors
// through fail, those of its ids other files define included. The error
// is the sink's.
func takeLevel(v harness.Validator, sink levelSink, f levelFile, d *decoded, fail func(string, []byte, error)) error {
	switch {
	case d.kept:
		sink.keep(f)
		return nil
	case d.readErr:
		fail(f.rel, nil, d.err)
		return nil
	case !d.ok:
		fail(f.rel, d.data, d.err)
		return nil
	case d.err != nil:
		// The ids defined elsewhere are reported too, beside the rest.
		dups, err := sink.defined(testIDs(d.tests))
		if err != nil {
			return err
		}
		fail(f.rel, d.data, checkLevel(v, &d.l, d.tests, dups))
		return nil
	}
	err := sink.add(f, d.hash, d.l, d.tests)
	var dup *dupError
	if errors.As(err, &dup) {
		fail(f.rel, d.data, checkLevel(v, &d.l, d.tests, dup.files))
		return nil
	}
	return err
}

func testIDs(tests []harness.Test) []string {
	ids := make([]string, len(tests))
	for i := range tests {
		ids[i] = tests[i].ID
	}
	return ids
}

// memSink holds the level files given to it in memory: readDir's sink.
// With countOnly it keeps only the test ids (to find repeated ones) and
// counts the levels and tests: Check's sink.
type memSink struct {
	countOnly       bool
	levels          []harness.LevelConfig
	tests           []harness.Test
	nLevels, nTests int
	hashes          map[string]string
	// file is the file that defines each test id.
	file map[string]string
}

func newMemSink() *memSink {
	return &memSink{hashes: map[string]string{}, file: map[string]string{}}
}

func (m *memSink) holds(levelFile) bool { return false }

func (m *memSink) keep(levelFile) {}

func (m *memSink) defined(ids []string) (map[string]string, error) {
	var out map[string]string
	for _, id := range ids {
		if rel, ok := m.file[id]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[id] = rel
		}
	}
	return out, nil
}

func (m *memSink) add(f levelFile, hash string, l harness.LevelConfig, tests []harness.Test) error {
	if dups, _ := m.defined(testIDs(tests)); dups != nil {
		return &dupError{files: dups}
	}
	for _, t := range tests {
		m.file[t.ID] = f.rel
	}
	m.nLevels++
	m.nTests += len(tests)
	m.hashes[f.rel] = hash
	if !m.countOnly {
		m.levels = append(m.levels, l)
		m.tests = append(m.tests, tests...)
	}
	return nil
}

// checkLevel validates a level file's configuration and tests; test ids
// must be unique within the file, and none of them in elsewhere (the ids
// other files define, each with its file).
func checkLevel(v harness.Validator, l *harness.LevelConfig, tests []harness.Test, elsewhere map[string]string) error {
	ve := &harness.ValidationError{}
	ve.Merge("", v.Level(l))
	if math.IsNaN(l.PassThreshold) {
		ve.Add("pass_threshold", "must be between 0 and 1")
	}
	inFile := map[string]bool{}
	for i := range tests {
		t := &tests[i]
		field := "tests[" + strconv.Itoa(i) + "]"
		ve.Merge(field, v.Test(t))
		ve.Merge(field+".expected", checkStorable("", t.Expected))
		if other, dup := elsewhere[t.ID]; dup {
			ve.Add(field+".id", "test %q is already defined in %s", t.ID, other)
		} else if inFile[t.ID] {
			ve.Add(field+".id", "test %q is defined twice in this file", t.ID)
		}
		inFile[t.ID] = true
	}
	return ve.Err()
}

// checkStorable refuses a value the cache cannot hold: it keeps maps and
// expected answers as JSON, which has no NaN or infinity, while YAML does
// (.nan, .inf). Without this check one such file made the whole sync fail.
func checkStorable(field string, v any) error {
	if _, err := json.Marshal(v); err != nil {
		return harness.Invalid(field, "cannot be stored: %v", err)
	}
	return nil
}

// checkFileID fills an id missing from a file with the file's name, and
// refuses an id that differs from it.
func checkFileID(id *string, want string) error {
	if *id == "" {
		*id = want
		return nil
	}
	if *id != want {
		return harness.Invalid("id", "%q does not match the file name %q", *id, want)
	}
	return nil
}

// yamlFiles lists the .yaml files directly under root/dir, sorted, as
// relative slash paths. Hidden files are ignored.
func yamlFiles(root fs.FS, dir string) ([]string, error) {
	entries, err := fs.ReadDir(root, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read definitions: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), yamlExt) && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, dir+"/"+e.Name())
		}
	}
	return out, nil
}

// levelFiles lists the level numbers of a domain directory, ascending.
func levelFiles(root fs.FS, domainID string) ([]int, error) {
	entries, err := fs.ReadDir(root, domainDir(domainID))
	if err != nil {
		return nil, fmt.Errorf("read definitions: %w", err)
	}
	var out []int
	for _, e := range entries {
		if n, ok := parseLevelName(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

// render encodes a whole snapshot into the files of the layout.
func render(s *harness.Snapshot) (map[string][]byte, error) {
	files := map[string][]byte{}
	put := func(rel string, data []byte, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		files[rel] = data
		return nil
	}
	for _, e := range s.Evaluators {
		b, err := encodeEvaluator(e)
		if err := put(evaluatorPath(e.ID), b, err); err != nil {
			return nil, err
		}
	}
	for _, t := range s.Tools {
		b, err := encodeTool(t)
		if err := put(toolPath(t.ID), b, err); err != nil {
			return nil, err
		}
	}
	for _, t := range s.Targets {
		b, err := encodeTarget(t)
		if err := put(targetPath(t.ID), b, err); err != nil {
			return nil, err
		}
	}
	if s.Pricing != nil {
		b, err := encodePricing(s.Pricing)
		if err := put(pricingFile, b, err); err != nil {
			return nil, err
		}
	}
	for _, d := range s.Domains {
		b, err := encodeDomain(d)
		if err := put(domainPath(d.ID), b, err); err != nil {
			return nil, err
		}
	}
	type key struct {
		domain string
		level  int
	}
	levels := map[key]harness.LevelConfig{}
	for _, l := range s.Levels {
		levels[key{l.DomainID, l.Level}] = l
	}
	tests := map[key][]harness.Test{}
	for _, t := range s.Tests {
		k := key{t.DomainID, t.Level}
		tests[k] = append(tests[k], t)
		if _, ok := levels[k]; !ok {
			levels[k] = defaultLevel(t.DomainID, t.Level)
		}
	}
	for k, l := range levels {
		b, err := encodeLevel(l, tests[k])
		if err := put(levelPath(k.domain, k.level), b, err); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// layoutFiles lists every file of the layout present under root.
func layoutFiles(root fs.FS) ([]string, error) {
	var out []string
	for _, dir := range []string{evaluatorsDir, toolsDir, targetsDir} {
		files, err := yamlFiles(root, dir)
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	if _, err := fs.Stat(root, pricingFile); err == nil {
		out = append(out, pricingFile)
	}
	entries, err := fs.ReadDir(root, domainsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read definitions: %w", err)
	}
	for _, ent := range entries {
		if !ent.IsDir() || strings.HasPrefix(ent.Name(), ".") {
			continue
		}
		if _, err := fs.Stat(root, domainPath(ent.Name())); err == nil {
			out = append(out, domainPath(ent.Name()))
		}
		levels, err := levelFiles(root, ent.Name())
		if err != nil {
			return nil, err
		}
		for _, n := range levels {
			out = append(out, levelPath(ent.Name(), n))
		}
	}
	return out, nil
}

func defaultLevel(domainID string, level int) harness.LevelConfig {
	return harness.LevelConfig{
		DomainID: domainID, Level: level,
		SystemPromptMode: harness.PromptAppend, PassThreshold: harness.DefaultPassThreshold,
	}
}
