package harness_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-eval/gauntlet/harness"
)

func TestCompileRegexEngines(t *testing.T) {
	tests := []struct {
		pattern string
		engine  string
	}{
		{`Answer:\s*(\d+)`, harness.RegexEngineStdlib},
		{`(?P<answer>\w+)`, harness.RegexEngineStdlib},
		{`(?<answer>\w+)`, harness.RegexEngineStdlib},
		{`\Qa.b\E`, harness.RegexEngineStdlib},
		{`(\d+)(?= apples)`, harness.RegexEngineRegexp2},
		{`(\w)\1`, harness.RegexEngineRegexp2},
		{`(?>a+)b`, harness.RegexEngineRegexp2},
		{`(\d+)\Z`, harness.RegexEngineRegexp2},
	}
	for _, tt := range tests {
		re, err := harness.CompileRegex(tt.pattern)
		if err != nil {
			t.Errorf("CompileRegex(%q): %v", tt.pattern, err)
			continue
		}
		if re.Engine() != tt.engine || re.String() != tt.pattern {
			t.Errorf("CompileRegex(%q) runs on %s (%q), want %s", tt.pattern, re.Engine(), re.String(), tt.engine)
		}
		if (re.Stdlib() != nil) != (tt.engine == harness.RegexEngineStdlib) || (re.Regexp2() != nil) == (re.Stdlib() != nil) {
			t.Errorf("CompileRegex(%q): Stdlib %v, Regexp2 %v", tt.pattern, re.Stdlib(), re.Regexp2())
		}
	}
	re, err := harness.RegexOptions{ForceRegexp2: true, MatchTimeout: time.Minute}.Compile(`\d+`)
	if err != nil || re.Engine() != harness.RegexEngineRegexp2 || re.Regexp2().MatchTimeout != time.Minute {
		t.Errorf("ForceRegexp2: %v, %v", re, err)
	}
	if re, _ := harness.CompileRegex(`(?=a)a`); re.Regexp2().MatchTimeout != harness.DefaultMatchTimeout {
		t.Errorf("default timeout = %v", re.Regexp2().MatchTimeout)
	}
}

func TestCompileRegexRefuses(t *testing.T) {
	for _, p := range []string{`(`, `[a-`, `(?<answer>x`, `*x`, `a++`, strings.Repeat("a", harness.MaxRegexLength+1)} {
		if re, err := harness.CompileRegex(p); err == nil {
			t.Errorf("CompileRegex(%.20q) = %v", p, re)
		}
	}
	if _, err := harness.CompileRegex(strings.Repeat("a", harness.MaxRegexLength)); err != nil {
		t.Errorf("a pattern of MaxRegexLength bytes: %v", err)
	}
	_, err := harness.CompileRegex(strings.Repeat("a", harness.MaxRegexLength+1))
	if err == nil || !strings.Contains(err.Error(), "at most 65536") {
		t.Errorf("too long: %v", err)
	}
}

func TestRegexMatches(t *testing.T) {
	type match struct {
		text string
		ok   bool
	}
	tests := []struct {
		name    string
		pattern string
		force   bool
		group   int
		text    string
		want    []match
	}{
		{"stdlib whole match", `\d+`, false, 0, "1 22 333", []match{{"1", true}, {"22", true}, {"333", true}}},
		{"regexp2 whole match", `\d+`, true, 0, "1 22 333", []match{{"1", true}, {"22", true}, {"333", true}}},
		{"stdlib optional group", `a(b)?`, false, 1, "ab a", []match{{"b", true}, {"", false}}},
		{"regexp2 optional group", `a(b)?`, true, 1, "ab a", []match{{"b", true}, {"", false}}},
		{"stdlib missing group", `a`, false, 3, "aa", []match{{"", false}, {"", false}}},
		{"regexp2 missing group", `a`, true, 3, "aa", []match{{"", false}, {"", false}}},
		{"no match", `x`, false, 0, "abc", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re, err := harness.RegexOptions{ForceRegexp2: tt.force}.Compile(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			var got []match
			if err := re.Matches(tt.text, tt.group, func(s string, ok bool) bool {
				got = append(got, match{s, ok})
				return true
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("match %d = %v, want %v", i, got[i], tt.want[i])
				}
			}
			// yield returning false stops the scan.
			n := 0
			_ = re.Matches(tt.text, tt.group, func(string, bool) bool { n++; return false })
			if n > 1 {
				t.Errorf("the scan went on after yield returned false: %d calls", n)
			}
		})
	}
}

// A catastrophic pattern on regexp2 ends in an error wrapping
// ErrMatchTimeout, from MatchString and from Matches.
func TestRegexTimeout(t *testing.T) {
	re, err := harness.RegexOptions{MatchTimeout: 20 * time.Millisecond}.Compile(`(?=a)(a+)+$`)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("a", 64) + "!"
	if _, err := re.MatchString(text); !errors.Is(err, harness.ErrMatchTimeout) {
		t.Errorf("MatchString: %v, want ErrMatchTimeout", err)
	} else if strings.Contains(err.Error(), text) {
		t.Errorf("the error quotes the input: %v", err)
	}
	if err := re.Matches(text, 1, func(string, bool) bool { return true }); !errors.Is(err, harness.ErrMatchTimeout) {
		t.Errorf("Matches: %v, want ErrMatchTimeout", err)
	}
	// The standard library needs no timeout.
	re, _ = harness.CompileRegex(`(a+)+$`)
	if ok, err := re.MatchString(text); ok || err != nil {
		t.Errorf("stdlib: %v, %v", ok, err)
	}
}
