package regexeval

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestExtract(t *testing.T) {
	cases := []struct {
		name    string
		pattern string
		text    string
		want    string
		ok      bool
		engine  string
	}{
		{"named group", `(?<label>\w+): (?<answer>\d+)`, "Answer: 42", "42", true, engineStdlib},
		{"python named group", `(?P<answer>\d+)`, "x 7", "7", true, engineStdlib},
		{"group 1", `Answer: (\d+)`, "Working... Answer: 42.", "42", true, engineStdlib},
		{"first unnamed group before named ones", `(?<label>[A-Z]\w*): (\d+)`, "Total: 12", "12", true, engineStdlib},
		{"only named groups: the first", `(?<a>x)(?<b>y)`, "xy", "x", true, engineStdlib},
		{"whole match", `\d+ apples`, "I have 3 apples", "3 apples", true, engineStdlib},
		{"last match wins", `Answer: (\d+)`, "Answer: 1\nno, wait\nAnswer: 2", "2", true, engineStdlib},
		{"empty matches skipped", `(\d*)`, "it is 42.", "42", true, engineStdlib},
		{"optional group not taking part skipped", `(?:Answer: (\d+)|done)`, "Answer: 5 done", "5", true, engineStdlib},
		{"no match", `Answer: (\d+)`, "I don't know", "", false, engineStdlib},
		{"extraction is trimmed", `Answer:(.*)`, "Answer:   Paris  ", "Paris", true, engineStdlib},
		{"dollar before a trailing newline", `(\d+)$`, "The answer is 42\n\n", "42", true, engineStdlib},
		{"empty pattern: whole trimmed text", ``, "  Paris \n", "Paris", true, ""},
		{"empty pattern, empty text", ``, " \n", "", false, ""},
		{"look-ahead forces regexp2", `(\d+)(?= apples)`, "3 pears and 5 apples", "5", true, engineRegexp2},
		{"back-reference forces regexp2", `(\w)\1`, "abba", "b", true, engineRegexp2},
		{"regexp2: named group", `(?<answer>\d+)(?=!)`, "1! 2! 3", "2", true, engineRegexp2},
		{"regexp2: last match wins", `(?<=Answer: )(\d+)`, "Answer: 1 Answer: 2", "2", true, engineRegexp2},
		{"regexp2: \\d is ASCII as in RE2", `(?=\d)(\d+)`, "٤٢ or 42", "42", true, engineRegexp2},
		{"regexp2: posix class as in RE2", `(?=.)([[:alpha:]]+)`, "ab:c", "c", true, engineRegexp2},
		{"regexp2: \\Z", `(\d+)\Z`, "1 2 3", "3", true, engineRegexp2},
		{"regexp2: no match", `(?<=x)\d`, "abc", "", false, engineRegexp2},
	}
	c := &cache{timeout: time.Second}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, engine, err := c.extract(tc.pattern, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || ok != tc.ok || engine != tc.engine {
				t.Errorf("extract(%q, %q) = %q, %v, %s; want %q, %v, %s", tc.pattern, tc.text, got, ok, engine,
					tc.want, tc.ok, tc.engine)
			}
		})
	}
}

// Patterns both engines accept extract the same thing on either, so which
// engine runs a pattern is a matter of speed, not of results.
func TestExtractEnginesAgree(t *testing.T) {
	patterns := []string{
		`Answer: (\d+)`, `(?i)answer:\s*(?<answer>[a-d])`, `(?<label>\w+)=(\d+)`, `(\w+)\s+(\w+)`,
		`(\d+)$`, `^(\S+)`, `(?m)^- (.+)$`, `(?s)<a>(.*?)</a>`, `[[:digit:]]+`, `(a|ab)(c|bcd)(d*)`,
		`\b(\w{3})\b`, `(\d*)`, `(?:x(\d))?y`, `\$(\d+(?:\.\d\d)?)`, `(?i)(yes|no)\b`,
	}
	texts := []string{
		"Answer: 42", "answer: B\nAnswer: c", "x=1 y=2 z=3", "hello big world", "abcd", "1 2 3\n",
		"- one\n- two\n", "<a>1</a><a>2</a>", "xy x1y", "it costs $12.50, not $3", "No. Yes! no way",
		"", "   ", "abc def ghi",
	}
	std := &cache{timeout: time.Second}
	re2 := &cache{timeout: time.Second, forceRegexp2: true}
	for _, p := range patterns {
		for _, s := range texts {
			a, aok, ae, err1 := std.extract(p, s)
			b, bok, be, err2 := re2.extract(p, s)
			if err1 != nil || err2 != nil {
				t.Fatalf("%q on %q: %v, %v", p, s, err1, err2)
			}
			if ae != engineStdlib || be != engineRegexp2 {
				t.Fatalf("%q: engines %s and %s", p, ae, be)
			}
			if a != b || aok != bok {
				t.Errorf("%q on %q: stdlib %q (%v), regexp2 %q (%v)", p, s, a, aok, b, bok)
			}
		}
	}
}

func TestExtractCatastrophic(t *testing.T) {
	const text = "aaaaaaaaaaaaaaaaaaaaaaaaaaaa!"
	t.Run("RE2 pattern runs in linear time on the standard library", func(t *testing.T) {
		c := &cache{timeout: 50 * time.Millisecond}
		start := time.Now()
		_, ok, engine, err := c.extract(`(a+)+$`, text)
		if ok || err != nil || engine != engineStdlib {
			t.Fatalf("ok=%v err=%v engine=%s", ok, err, engine)
		}
		// Backtracking would take minutes; 10 s is slack for a busy CI.
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
	})
	for _, tc := range []struct {
		name    string
		pattern string
		force   bool
	}{
		{"look-ahead pattern on regexp2 times out", `(?=a)(a+)+$`, false},
		{"forced regexp2 times out", `(a+)+$`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cache{timeout: 50 * time.Millisecond, forceRegexp2: tc.force}
			start := time.Now()
			got, ok, engine, err := c.extract(tc.pattern, text)
			d := time.Since(start)
			if !errors.Is(err, ErrMatchTimeout) || ok || got != "" || engine != engineRegexp2 {
				t.Fatalf("got %q, %v, %s, %v; want a timeout on regexp2", got, ok, engine, err)
			}
			if strings.Contains(err.Error(), text) {
				t.Errorf("error quotes the input: %v", err)
			}
			// regexp2's clock ticks every 100 ms; backtracking would take
			// minutes, and 10 s is slack for a busy CI.
			if d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestExtractInvalidPattern(t *testing.T) {
	if _, _, err := Extract(`(unclosed`, "x"); err == nil {
		t.Fatal("no error for an invalid pattern")
	}
	// A cached failure fails again.
	if _, _, err := Extract(`(unclosed`, "x"); err == nil {
		t.Fatal("no error the second time")
	}
}

func TestCacheBounded(t *testing.T) {
	c := &cache{timeout: time.Second}
	for i := range maxCached + 10 {
		if _, err := c.get("x" + strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.n.Load(); n != maxCached {
		t.Fatalf("cache holds %d patterns, want %d", n, maxCached)
	}
	// Past the bound, patterns still compile.
	if _, ok, _, _ := c.extract("b+", "abbb"); !ok {
		t.Fatal("no extraction past the bound")
	}
}
