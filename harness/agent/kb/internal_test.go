package kb

import "testing"

func TestCompleteRunes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"abc", 3}, {"ab\xe2\x9c", 2}, {"ab\xe2\x9c\x93", 5}, {"\xf0\x9f\x8e", 0}, {"a\xf0", 1}, {"", 0},
	} {
		if got := completeRunes([]byte(tc.in)); got != tc.want {
			t.Errorf("completeRunes(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
