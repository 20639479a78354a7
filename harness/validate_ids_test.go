package harness

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestIDRulesMatchTheirPatterns checks the id rules, written as loops,
// against the patterns they document, on edge cases and on random
// strings over an alphabet of allowed and refused bytes.
func TestIDRulesMatchTheirPatterns(t *testing.T) {
	t.Parallel()
	rules := []struct {
		name    string
		pattern *regexp.Regexp
		loop    func(string) bool
	}{
		{"ValidID", regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`), ValidID},
		{"ValidAgentID", regexp.MustCompile(`^[a-zA-Z0-9_]{1,128}$`), ValidAgentID},
		{"ValidFunctionName", regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`), ValidFunctionName},
	}
	cases := []string{"", "a", "_", ".", "-", "a.b-c_d", ".a", "-a", "a\n", "a b", "é", "a\x00",
		strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("a", 128), strings.Repeat("a", 129),
		"Z9", "z.", "a-", "a/b", "a:b", "ÄB"}
	const alphabet = "aZ09_.-/ é\x00\n"
	rng := rand.New(rand.NewPCG(3, 5))
	for range 3000 {
		var b strings.Builder
		for n := rng.IntN(140); n > 0; n-- {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, r := range rules {
		for _, c := range cases {
			if got, want := r.loop(c), r.pattern.MatchString(c); got != want {
				t.Errorf("%s(%q) = %v, its pattern says %v", r.name, c, got, want)
			}
		}
	}
}
