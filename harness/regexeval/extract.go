package regexeval

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2"
)

// ErrMatchTimeout reports that a regexp2 match ran past the match timeout.
// Extract and Evaluate return an error wrapping it: a timeout says nothing
// about the model's answer, so the test is an error, never a failure.
var ErrMatchTimeout = errors.New("regex match timed out")

// defaultMatchTimeout bounds a regexp2 match when Options.MatchTimeout is 0.
const defaultMatchTimeout = time.Second

// maxCached bounds a pattern cache. Patterns come from evaluator records and
// regex-typed expected answers, so a real catalogue stays far below it; past
// it, patterns are compiled for each use instead of growing the cache.
const maxCached = 4096

// Engine names, as recorded in details.regex_engine.
const (
	engineStdlib  = "stdlib"
	engineRegexp2 = "regexp2"
)

// pattern is a compiled pattern on one of the two engines: the standard
// library when the pattern is RE2, else regexp2.
type pattern struct {
	std *regexp.Regexp
	re2 *regexp2.Regexp
	// group is the submatch to extract: the named group "answer", else the
	// first unnamed group, else the first group, else 0 (the whole match).
	// The numbering is regexp2's (.NET: unnamed groups first, then named
	// ones), which the stdlib path reproduces, so both engines extract the
	// same group.
	group   int
	timeout time.Duration
}

func (p *pattern) engine() string {
	if p.std != nil {
		return engineStdlib
	}
	return engineRegexp2
}

// compile compiles expr with the standard library when it accepts the
// pattern (linear-time matching, no timeout needed), else with regexp2 in
// its RE2 compatibility mode, so that \d, \s, \w, $ and [[:alpha:]] mean
// the same on both engines.
func compile(expr string, timeout time.Duration, forceRegexp2 bool) (*pattern, error) {
	if !forceRegexp2 {
		if re, err := regexp.Compile(expr); err == nil {
			return &pattern{std: re, group: stdGroup(re)}, nil
		}
	}
	re, err := regexp2.Compile(expr, regexp2.RE2)
	if err != nil {
		// The RE2 mode only adds syntax; this is a safety net so that
		// everything harness.CompileRegex accepts on write also runs.
		var err2 error
		if re, err2 = regexp2.Compile(expr, regexp2.None); err2 != nil {
			return nil, fmt.Errorf("invalid pattern: %w", err)
		}
	}
	re.MatchTimeout = timeout
	return &pattern{re2: re, group: re2Group(re), timeout: timeout}, nil
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
	if p.std != nil {
		locs := p.std.FindAllStringSubmatchIndex(text, -1)
		for i := len(locs) - 1; i >= 0; i-- {
			s, e := locs[i][2*p.group], locs[i][2*p.group+1]
			if s < 0 {
				continue
			}
			if v := strings.TrimSpace(text[s:e]); v != "" {
				return v, true, nil
			}
		}
		return "", false, nil
	}
	// regexp2's timeout bounds one match call; the deadline bounds the scan
	// over all matches.
	deadline := time.Now().Add(p.timeout)
	var last string
	found := false
	m, err := p.re2.FindStringMatch(text)
	for m != nil && err == nil {
		if g := m.GroupByNumber(p.group); g != nil && len(g.Captures) > 0 {
			if v := strings.TrimSpace(g.String()); v != "" {
				last, found = v, true
			}
		}
		if time.Now().After(deadline) {
			return "", false, p.timeoutError()
		}
		m, err = p.re2.FindNextMatch(m)
	}
	if err != nil {
		return "", false, p.matchError(err)
	}
	return last, found, nil
}

// match reports whether the pattern matches anywhere in text.
func (p *pattern) match(text string) (bool, error) {
	if p.std != nil {
		return p.std.MatchString(text), nil
	}
	ok, err := p.re2.MatchString(text)
	if err != nil {
		return false, p.matchError(err)
	}
	return ok, nil
}

func (p *pattern) timeoutError() error {
	return fmt.Errorf("%w after %v (regexp2)", ErrMatchTimeout, p.timeout)
}

// matchError maps a regexp2 error, whose text quotes the whole input, to a
// short one.
func (p *pattern) matchError(err error) error {
	if strings.HasPrefix(err.Error(), "match timeout") {
		return p.timeoutError()
	}
	return fmt.Errorf("regexp2: %w", err)
}

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
