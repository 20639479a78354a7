package judge

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness/textjson"
)

// Verdict is a judge's verdict, read from its reply by ParseVerdict.
type Verdict struct {
	// Score is between 0 and 1.
	Score float64
	// Reasoning is the reasoning field of a JSON verdict ("reasoning",
	// "reason", "explanation", "rationale", "justification", "feedback");
	// empty for other forms.
	Reasoning string
	// Text is the part of the reply the score was read from: `{"score":
	// 0.8, ...}`, "Score: 0.8", "8/10", "B", "PASS".
	Text string
}

// Grade letters and their scores. Modifiers are ignored: B+ and B- are B.
var grades = map[byte]float64{'A': 1, 'B': 0.75, 'C': 0.5, 'D': 0.25, 'F': 0}

// ParseVerdict reads a judge's verdict from its reply. It accepts:
//
//   - a JSON object with "score" (a number from 0 to 1, or a string in one
//     of the forms below), "grade", "rating", "verdict", or "pass"/"passed"
//     (true or false), alone, fenced or amid text; the last such object
//     wins;
//   - a labelled value: "Score: 0.8", "Final score = 8/10", "**Grade:** B",
//     "Rating: 4 out of 5", "Verdict: PASS";
//   - a line that is only a value: "0.8", "8/10", "80%", "B", "FAIL".
//
// Values are a number from 0 to 1, a fraction "a/b" or "a out of b" (a at
// most b), a percentage (at most 100%), a grade letter (A = 1, B = 0.75,
// C = 0.5, D = 0.25, F = 0; + and - ignored; upper case unless labelled
// "grade"), or PASS (1) / FAIL (0), any case. A bare number above 1
// ("Score: 8") is ambiguous and not accepted. Without a JSON verdict, the
// lines are read from the last to the first and the first line with a
// verdict decides — within a line, its last labelled value — since judges
// conclude at the end.
//
// It reports false when the reply holds no verdict.
func ParseVerdict(reply string) (Verdict, bool) {
	if v, ok := jsonVerdict(reply); ok {
		return v, true
	}
	lines := strings.Split(reply, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if v, ok := lineVerdict(lines[i]); ok {
			return v, true
		}
	}
	return Verdict{}, false
}

// jsonVerdict finds the last JSON object of the reply that holds a
// verdict, among the objects textjson.Objects finds (nested objects are
// not candidates of their own).
func jsonVerdict(s string) (Verdict, bool) {
	var best Verdict
	found := false
	for o := range textjson.Objects(s) {
		dec := json.NewDecoder(strings.NewReader(o.Text))
		dec.UseNumber()
		var obj map[string]any
		if dec.Decode(&obj) != nil {
			continue
		}
		if v, ok := objectVerdict(obj); ok {
			v.Text = o.Text
			best, found = v, true
		}
	}
	return best, found
}

var (
	verdictKeys   = []string{"score", "final_score", "grade", "rating", "verdict", "pass", "passed"}
	reasoningKeys = []string{"reasoning", "reason", "explanation", "rationale", "justification", "feedback"}
)

func objectVerdict(obj map[string]any) (Verdict, bool) {
	lower := make(map[string]any, len(obj))
	for k, v := range obj {
		lower[strings.ToLower(k)] = v
	}
	var v Verdict
	found := false
	for _, k := range verdictKeys {
		val, ok := lower[k]
		if !ok {
			continue
		}
		switch x := val.(type) {
		case json.Number:
			f, err := x.Float64()
			if err == nil && f >= 0 && f <= 1 {
				v.Score, found = f, true
			}
		case string:
			if f, ok := wholeValue(x, true); ok {
				v.Score, found = f, true
			}
		case bool:
			v.Score, found = 0, true
			if x {
				v.Score = 1
			}
		}
		if found {
			break
		}
	}
	if !found {
		return Verdict{}, false
	}
	for _, k := range reasoningKeys {
		if r, ok := lower[k].(string); ok && strings.TrimSpace(r) != "" {
			v.Reasoning = strings.TrimSpace(r)
			break
		}
	}
	return v, true
}

// labelRE finds a verdict label and the separator after it, with any
// Markdown emphasis around them.
var labelRE = regexp.MustCompile(`(?i)\b(final\s+score|overall\s+score|score|grade|rating|verdict)\b[*_\x60\s]*(?:is\b|of\b|=|:|-)?[*_\x60\s]*`)

// lineVerdict reads the verdict of one line: the whole line as a value,
// else its last labelled value.
func lineVerdict(line string) (Verdict, bool) {
	if f, ok := wholeValue(stripLine(line), false); ok {
		return Verdict{Score: f, Text: strings.TrimSpace(line)}, true
	}
	ms := labelRE.FindAllStringSubmatchIndex(line, -1)
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		label := strings.ToLower(line[m[2]:m[3]])
		rest := line[m[1]:]
		f, n, ok := leadingValue(rest, label == "grade")
		if !ok {
			continue
		}
		after := rest[n:]
		if isGrade(rest[:n]) && label != "grade" && !onlyPunct(after) {
			// "Verdict: A response that..." is not grade A.
			continue
		}
		return Verdict{Score: f, Text: strings.TrimSpace(line[m[0]:m[1]] + rest[:n])}, true
	}
	return Verdict{}, false
}

// stripLine drops Markdown list, quote and heading marks and emphasis
// around a line.
func stripLine(s string) string {
	for {
		t := strings.TrimLeft(strings.TrimSpace(s), "#>*_`")
		t = strings.TrimPrefix(strings.TrimPrefix(t, "- "), "+ ")
		if t == s {
			return s
		}
		s = t
	}
}

var (
	fractionRE = regexp.MustCompile(`(?i)^(\d+(?:\.\d+)?)\s*(?:/|out\s+of\b)\s*(\d+(?:\.\d+)?)`)
	percentRE  = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*%`)
	numberRE   = regexp.MustCompile(`^(?:\d+(?:\.\d+)?|\.\d+)`)
	passFailRE = regexp.MustCompile(`(?i)^(?:pass(?:ed|es)?|fail(?:ed|s)?)\b`)
	gradeRE    = regexp.MustCompile(`^[A-DFa-df][+-]?`)
	punctRE    = regexp.MustCompile("^[\\s*_`.,;:!)\\]]*$")
)

// wholeValue reads s as a value and nothing else but trailing punctuation
// and emphasis.
func wholeValue(s string, lowerGrades bool) (float64, bool) {
	s = strings.TrimSpace(s)
	f, n, ok := leadingValue(s, lowerGrades)
	if !ok || !onlyPunct(s[n:]) {
		return 0, false
	}
	return f, true
}

// leadingValue reads the value at the start of s and reports how many
// bytes it took.
func leadingValue(s string, lowerGrades bool) (float64, int, bool) {
	if m := fractionRE.FindStringSubmatch(s); m != nil {
		a, _ := strconv.ParseFloat(m[1], 64)
		b, _ := strconv.ParseFloat(m[2], 64)
		if b > 0 && a <= b {
			return a / b, len(m[0]), true
		}
		return 0, 0, false
	}
	if m := percentRE.FindStringSubmatch(s); m != nil {
		p, _ := strconv.ParseFloat(m[1], 64)
		if p <= 100 {
			return p / 100, len(m[0]), true
		}
		return 0, 0, false
	}
	if m := numberRE.FindString(s); m != "" {
		rest := s[len(m):]
		if rest != "" && (isWordByte(rest[0]) || rest[0] == '.' && len(rest) > 1 && isDigit(rest[1])) {
			return 0, 0, false
		}
		f, err := strconv.ParseFloat(m, 64)
		if err != nil || f > 1 {
			return 0, 0, false
		}
		return f, len(m), true
	}
	if m := passFailRE.FindString(s); m != "" {
		if strings.HasPrefix(strings.ToLower(m), "pass") {
			return 1, len(m), true
		}
		return 0, len(m), true
	}
	if m := gradeRE.FindString(s); m != "" {
		if len(s) > len(m) && isWordByte(s[len(m)]) {
			return 0, 0, false
		}
		c := m[0]
		if c >= 'a' && c <= 'z' {
			if !lowerGrades {
				return 0, 0, false
			}
			c -= 'a' - 'A'
		}
		return grades[c], len(m), true
	}
	return 0, 0, false
}

func isGrade(s string) bool { return gradeRE.MatchString(s) && len(s) <= 2 }

func onlyPunct(s string) bool { return punctRE.MatchString(s) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordByte(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}
