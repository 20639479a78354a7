// Package suggest finds the known name nearest a mistyped one, for the
// "did you mean" of an unknown-key error: one rule for the definition
// files and for module configs.
package suggest

import "strings"

// Nearest returns the known key a typo or two away from key (an edit
// distance of at most 2, or a third of its length), compared without
// case, else the shortest known key that contains it (3 letters or more):
// the suggestion of an "unknown key" message. It reports false when no
// known key is near.
func Nearest(key string, known []string) (string, bool) {
	lk := strings.ToLower(key)
	best, bestD := "", -1
	better := func(k string, d int) bool {
		switch {
		case bestD < 0 || d < bestD:
			return true
		case d > bestD:
			return false
		}
		// A tie: the key that contains the typed one ("nest" is nearer
		// "nested" than "list"), then the first in order.
		kc, bc := strings.Contains(strings.ToLower(k), lk), strings.Contains(strings.ToLower(best), lk)
		return kc && !bc || kc == bc && k < best
	}
	for _, k := range known {
		if d := editDistance(lk, strings.ToLower(k)); better(k, d) {
			best, bestD = k, d
		}
	}
	if bestD >= 0 && bestD <= max(2, len(key)/3) && bestD < len(key) {
		return best, true
	}
	if len(key) < 3 {
		return "", false
	}
	best = ""
	for _, k := range known {
		if strings.Contains(strings.ToLower(k), lk) && (best == "" || len(k) < len(best)) {
			best = k
		}
	}
	return best, best != ""
}

// editDistance is the Levenshtein distance between a and b, in bytes. Keys
// are short; a long one is cut, so the cost stays bounded.
func editDistance(a, b string) int {
	const maxLen = 64
	a, b = a[:min(len(a), maxLen)], b[:min(len(b), maxLen)]
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
