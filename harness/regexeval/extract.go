package regexeval

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// ErrMatchTimeout reports that a regexp2 match ran past the match timeout.
// Extract and Evaluate return an error wrapping it: a timeout says nothing
// about the model's answer, so the test is an error, never a failure. It
// is harness.ErrMatchTimeout.
var ErrMatchTimeout = harness.ErrMatchTimeout

// defaultMatchTimeout bounds a regexp2 match when Options.MatchTimeout is 0.
const defaultMatchTimeout = harness.DefaultMatchTimeout

// maxCached bounds a pattern cache. Patterns come from evaluator records and
// regex-typed expected answers, so a real catalogue stays far below it; past
// it, patterns are compiled for each use instead of growing the cache.
const maxCached = 4096

// Engine names, as recorded in details.regex_engine.
const (
	engineStdlib  = harness.RegexEngineStdlib
	engineRegexp2 = harness.RegexEngineRegexp2
)

// pattern is a compiled pattern (harness.CompileRegex's rules: the
// standard library when the pattern is RE2, else regexp2) and the group it
// extracts.
type pattern struct {
	re *harness.Regex
	// group is the submatch to extract: the named group "answer", else the
	// first unnamed group, else the first group, else 0 (the whole match).
	// The numbering is the engine's; the rule picks the same group on both
	// (regexp2 numbers unnamed groups before named ones, and the first
	// unnamed group is picked on the standard library too).
	group int
}

func (p *pattern) engine() string { return p.re.Engine() }

// compile compiles expr by harness.RegexOptions' rules and picks the
// group to extract.
func compile(expr string, timeout time.Duration, forceRegexp2 bool) (*pattern, error) {
	re, err := harness.RegexOptions{MatchTimeout: timeout, ForceRegexp2: forceRegexp2}.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("invalid pattern: %w", err)
	}
	if std := re.Stdlib(); std != nil {
		return &pattern{re: re, group: stdGroup(std)}, nil
	}
	return &pattern{re: re, group: re2Group(re.Regexp2())}, nil
}

func stdGroup(re *regexp.Regexp) int {
	if i := re.SubexpIndex("answer"); i > 0 {
		return i
	}
	names := re.SubexpNames()
	for i := 1; i < len(names); i++ {
		if names[i] == "" {
			return i
		}
	}
	if len(names) > 1 {
		return 1
	}
	return 0
}

func re2Group(re *regexp2.Regexp) int {
	if i := re.GroupNumberFromName("answer"); i > 0 {
		return i
	}
	best := 0
	for _, n := range re.GetGroupNumbers() {
		if n > 0 && (best == 0 || n < best) {
			best = n
		}
	}
	return best
}

// extract runs the pattern over text and returns the extraction of the
// last match whose extracted text is not empty once trimmed. Matches that
// extract nothing (an optional group that did not take part, an empty
// match) are skipped: with "last match wins", a pattern that can match the
// empty string would otherwise always extract "" at the end of the text.
func (p *pattern) extract(text string) (string, bool, error) {
	var last string
	found := false
	err := p.re.Matches(text, p.group, func(s string, ok bool) bool {
		if v := strings.TrimSpace(s); ok && v != "" {
			last, found = v, true
		}
		return true
	})
	if err != nil {
		return "", false, err
	}
	return last, found, nil
}

// match reports whether the pattern matches anywhere in text.
func (p *pattern) match(text string) (bool, error) { return p.re.MatchString(text) }

// cache holds compiled patterns. It is safe for concurrent use.
type cache struct {
	timeout      time.Duration
	forceRegexp2 bool
	m            sync.Map // pattern string → *cached
	n            atomic.Int64
}

type cached struct {
	p   *pattern
	err error
}

func (c *cache) get(expr string) (*pattern, error) {
	if v, ok := c.m.Load(expr); ok {
		e := v.(*cached)
		return e.p, e.err
	}
	p, err := compile(expr, c.timeout, c.forceRegexp2)
	if c.n.Load() < maxCached {
		if _, loaded := c.m.LoadOrStore(expr, &cached{p, err}); !loaded {
			c.n.Add(1)
		}
	}
	return p, err
}

// extract applies extraction rules to text: with an empty pattern the whole
// trimmed text is the answer.
func (c *cache) extract(expr, text string) (answer string, ok bool, engine string, err error) {
	text = strings.TrimSpace(text)
	if expr == "" {
		return text, text != "", "", nil
	}
	p, err := c.get(expr)
	if err != nil {
		return "", false, "", err
	}
	answer, ok, err = p.extract(text)
	return answer, ok, p.engine(), err
}

// Extract pulls an answer out of text with pattern, as the evaluator does:
// leading and trailing white space of text is removed, and the extraction
// is the named group "answer", else the first capturing group (the first
// unnamed one when there are any), else the whole match. When the pattern
// matches several times the last match wins; matches that extract only
// white space are skipped. An empty pattern extracts the whole trimmed
// text.
//
// A pattern the standard library accepts is matched there in linear time;
// any other pattern (look-arounds, back-references...) runs on regexp2 with
// a 1 s match timeout, reported as an error wrapping ErrMatchTimeout.
// An invalid pattern is an error too. Compiled patterns are cached.
func Extract(pattern, text string) (string, bool, error) {
	answer, ok, _, err := defaultEvaluator.patterns.extract(pattern, text)
	return answer, ok, err
}
