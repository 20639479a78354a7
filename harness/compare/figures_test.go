package compare

import "testing"

// TestLatenciesP50: the nearest-rank median, the smallest duration at
// least half of them do not exceed, whatever the order they came in.
func TestLatenciesP50(t *testing.T) {
	for _, c := range []struct {
		in   []int64
		want int64
	}{
		{[]int64{5}, 5},
		{[]int64{30, 10}, 10},
		{[]int64{30, 10, 20}, 20},
		{[]int64{40, 10, 30, 20}, 20},
		{[]int64{7, 7, 7, 100, 100}, 7},
		{[]int64{100, 7, 100, 7, 100}, 100},
	} {
		var l Latencies
		for _, ms := range c.in {
			l.Add(ms)
		}
		if got, ok := l.P50(); !ok || got != c.want {
			t.Errorf("P50 of %v = %d, %v; want %d", c.in, got, ok, c.want)
		}
	}
	var none Latencies
	if _, ok := none.P50(); ok {
		t.Error("P50 of nothing is ok")
	}
}
