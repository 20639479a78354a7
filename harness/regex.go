package harness

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/dlclark/regexp2"
)

// The rules for patterns that users write (an evaluator record's
// extraction_regex, an expected answer of type regex) live here, so that a
// pattern accepted when a record is written is the pattern that runs, on
// the same engine, with the same bounds.

// DefaultMatchTimeout bounds a regexp2 match, and a scan over all the
// matches of a text, when RegexOptions.MatchTimeout is zero. It is
// wall-clock time, so that a busy machine does not time out an honest
// match.
const DefaultMatchTimeout = time.Second

// MaxRegexLength is the longest pattern CompileRegex accepts, in bytes.
const MaxRegexLength = 64 << 10

// The engines a Regex runs on, as Regex.Engine names them.
const (
	// RegexEngineStdlib is Go's regexp: RE2 syntax, linear-time matching.
	RegexEngineStdlib = "stdlib"
	// RegexEngineRegexp2 is github.com/dlclark/regexp2: look-around,
	// back-references and other backtracking syntax, bounded by a match
	// timeout.
	RegexEngineRegexp2 = "regexp2"
)

// ErrMatchTimeout reports that a regexp2 match ran past its match timeout.
// A timeout says nothing about the text matched: a test whose answer hit
// it is an error, never a failure.
var ErrMatchTimeout = errors.New("regex match timed out")

// RegexOptions are the bounds and choices of CompileRegex. The zero value
// is CompileRegex.
type RegexOptions struct {
	// MatchTimeout bounds one regexp2 match, and a scan over all the
	// matches of a text (Regex.Matches); zero means DefaultMatchTimeout.
	// regexp2's clock is coarse: a timeout may fire up to about 100 ms
	// late. Patterns on the standard library need none.
	MatchTimeout time.Duration
	// ForceRegexp2 compiles every pattern with regexp2, even one the
	// standard library runs: for tests and benchmarks of that engine.
	ForceRegexp2 bool
}

// CompileRegex compiles a user's pattern with the zero RegexOptions; see
// RegexOptions.Compile.
func CompileRegex(pattern string) (*Regex, error) {
	return RegexOptions{}.Compile(pattern)
}

// Compile compiles a user's pattern. A pattern Go's regexp accepts runs
// there, in linear time. Any other (look-around, back-references, atomic
// groups, \Z...) is compiled with regexp2 in its RE2 compatibility mode, so
// that \d, \w, \s, $, [[:alpha:]] and (?P<name>...) mean what they mean in
// RE2 whichever engine runs the pattern, else in regexp2's default .NET
// mode, a superset; regexp2 matches are bounded by the match timeout.
// A pattern longer than MaxRegexLength is refused. The error of a
// pattern that does not compile is regexp2's in its RE2 mode.
func (o RegexOptions) Compile(pattern string) (*Regex, error) {
	if len(pattern) > MaxRegexLength {
		return nil, fmt.Errorf("pattern is %d bytes long; at most %d are allowed", len(pattern), MaxRegexLength)
	}
	timeout := o.MatchTimeout
	if timeout <= 0 {
		timeout = DefaultMatchTimeout
	}
	if !o.ForceRegexp2 {
		if re, err := regexp.Compile(pattern); err == nil {
			return &Regex{pattern: pattern, std: re}, nil
		}
	}
	re, err := regexp2.Compile(pattern, regexp2.RE2)
	if err != nil {
		var err2 error
		if re, err2 = regexp2.Compile(pattern, regexp2.None); err2 != nil {
			return nil, err
		}
	}
	re.MatchTimeout = timeout
	return &Regex{pattern: pattern, re2: re, timeout: timeout}, nil
}

// Regex is a compiled user pattern, on one of two engines (see
// RegexOptions.Compile). It is safe for concurrent use.
type Regex struct {
	pattern string
	std     *regexp.Regexp
	re2     *regexp2.Regexp
	timeout time.Duration
}

// String returns the pattern.
func (r *Regex) String() string { return r.pattern }

// Engine returns RegexEngineStdlib or RegexEngineRegexp2.
func (r *Regex) Engine() string {
	if r.std != nil {
		return RegexEngineStdlib
	}
	return RegexEngineRegexp2
}

// Stdlib returns the compiled pattern on Go's regexp, or nil when it runs
// on regexp2.
func (r *Regex) Stdlib() *regexp.Regexp { return r.std }

// Regexp2 returns the compiled pattern on regexp2, or nil when it runs on
// Go's regexp. Its MatchTimeout is set.
func (r *Regex) Regexp2() *regexp2.Regexp { return r.re2 }

// MatchString reports whether the pattern matches anywhere in s. The error
// wraps ErrMatchTimeout when a regexp2 match ran past the timeout.
func (r *Regex) MatchString(s string) (bool, error) {
	if r.std != nil {
		return r.std.MatchString(s), nil
	}
	ok, err := r.re2.MatchString(s)
	if err != nil {
		return false, r.matchError(err)
	}
	return ok, nil
}

// Matches calls yield for each successive non-overlapping match of the
// pattern in s, with the text of capturing group number group and whether
// that group took part in the match, until yield returns false. Groups
// are numbered as the engine numbers them (Stdlib().SubexpIndex,
// Regexp2().GroupNumberFromName); 0 is the whole match, and a number the
// pattern does not have never takes part. On regexp2 the whole scan is
// bounded by the match timeout: past it, Matches returns an error wrapping
// ErrMatchTimeout.
func (r *Regex) Matches(s string, group int, yield func(text string, ok bool) bool) error {
	if r.std != nil {
		g := group
		if g < 0 || g > r.std.NumSubexp() {
			g = -1
		}
		for _, loc := range r.std.FindAllStringSubmatchIndex(s, -1) {
			if g < 0 || loc[2*g] < 0 {
				if !yield("", false) {
					return nil
				}
				continue
			}
			if !yield(s[loc[2*g]:loc[2*g+1]], true) {
				return nil
			}
		}
		return nil
	}
	// regexp2's timeout bounds one match call; the deadline bounds the
	// scan over all matches.
	deadline := time.Now().Add(r.timeout)
	m, err := r.re2.FindStringMatch(s)
	for m != nil && err == nil {
		text, ok := "", false
		if g := m.GroupByNumber(group); g != nil && len(g.Captures) > 0 {
			text, ok = g.String(), true
		}
		if !yield(text, ok) {
			return nil
		}
		if time.Now().After(deadline) {
			return r.timeoutError()
		}
		m, err = r.re2.FindNextMatch(m)
	}
	if err != nil {
		return r.matchError(err)
	}
	return nil
}

func (r *Regex) timeoutError() error {
	return fmt.Errorf("%w after %v (regexp2)", ErrMatchTimeout, r.timeout)
}

// matchError maps a regexp2 error, whose text quotes the whole input, to
// a short one.
func (r *Regex) matchError(err error) error {
	if strings.HasPrefix(err.Error(), "match timeout") {
		return r.timeoutError()
	}
	return errors.New("regexp2: match failed")
}
