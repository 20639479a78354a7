package suggest

import "testing"

func TestNearest(t *testing.T) {
	known := []string{"evaluator_id", "list", "nested", "system_prompt", "system_prompt_mode", "tools"}
	for _, tt := range []struct {
		key, want string
		ok        bool
	}{
		{"tool", "tools", true},
		{"Tools", "tools", true},
		{"evaluatr_id", "evaluator_id", true},
		{"nest", "nested", true},          // a tie with "list": the one containing the key
		{"prompt", "system_prompt", true}, // part of a key: the shortest
		{"sytem_prompt_mod", "system_prompt_mode", true},
		{"zzzzzzzz", "", false},
		{"ab", "", false},
	} {
		got, ok := Nearest(tt.key, known)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Nearest(%q) = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.ok)
		}
	}
	if _, ok := Nearest("x", nil); ok {
		t.Error("a suggestion out of no known keys")
	}
}
