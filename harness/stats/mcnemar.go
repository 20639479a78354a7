package stats

import "math"

// McNemar returns the two-sided p-value of the exact McNemar test for paired
// pass/fail outcomes, where b pairs went from pass to fail and c from fail
// to pass (the discordant pairs; pairs that agree carry no information
// about a difference). Under "no difference" each discordant pair is
// equally likely to go either way, so X = min(b, c) is binomial with b+c
// trials and probability ½, and
//
//	p = min(1, 2 · P(X ≤ min(b, c)))
//
// with p = 1 when b + c = 0. It is computed in floating point without
// overflow or underflow for any b + c (in log space beyond 1,000 pairs).
// Negative counts are taken as 0.
func McNemar(b, c int) float64 {
	b, c = max(b, 0), max(c, 0)
	n := b + c
	if n == 0 {
		return 1
	}
	return min(1, 2*binomLowerTail(min(b, c), n))
}

// binomLowerTail returns P(X ≤ k) for X ~ Bin(n, ½), k ≤ n/2.
func binomLowerTail(k, n int) float64 {
	if n <= 1000 {
		// 2^-n is representable down to n = 1074; the terms grow
		// from i = 0 to k, so the sum is accurate.
		term := math.Ldexp(1, -n)
		sum := term
		for i := range k {
			term *= float64(n-i) / float64(i+1)
			sum += term
		}
		return sum
	}
	// Largest term first (i = k, as k ≤ n/2), in logs, then the smaller
	// ones relative to it going down: C(n,i−1)/C(n,i) = i/(n−i+1).
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x)); return v }
	logTop := lg(n+1) - lg(k+1) - lg(n-k+1) - float64(n)*math.Ln2
	rel, sum := 1.0, 1.0
	for i := k; i > 0; i-- {
		rel *= float64(i) / float64(n-i+1)
		sum += rel
		if rel < 1e-18*sum {
			break
		}
	}
	return math.Exp(logTop + math.Log(sum))
}
