// Package kbtext makes knowledge-base text for the agent packages' tests
// and benchmarks: filler that buries one fact, so that retrieval has to
// find it by its rare words.
package kbtext

import (
	"math/rand/v2"
	"strings"
)

// Filler returns about size bytes of text in paragraphs, made of a
// fixed vocabulary that includes the common words of the questions asked
// of it ("what", "launch", "code", "project"...), so that only rare words
// single a passage out.
func Filler(size int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	common := strings.Fields(`the a of and to in is was for on with as by at from that this it be are
		what which launch code project team report system data value plan harbour market river city`)
	vocab := make([]string, 0, 3000)
	vocab = append(vocab, common...)
	syll := strings.Fields("ka lo mi ne ru sa te vo pri stel dan gor fen bal cor")
	for len(vocab) < cap(vocab) {
		n := 2 + r.IntN(3)
		var w strings.Builder
		for range n {
			w.WriteString(syll[r.IntN(len(syll))])
		}
		vocab = append(vocab, w.String())
	}
	var b strings.Builder
	b.Grow(size + 1024)
	for b.Len() < size {
		sentences := 3 + r.IntN(4)
		for s := range sentences {
			words := 8 + r.IntN(12)
			for i := range words {
				var w string
				if r.IntN(3) == 0 {
					w = common[r.IntN(len(common))]
				} else {
					w = vocab[r.IntN(len(vocab))]
				}
				if i == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				} else {
					b.WriteByte(' ')
				}
				b.WriteString(w)
			}
			b.WriteByte('.')
			if s < sentences-1 {
				b.WriteByte(' ')
			}
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// Fact is the paragraph the questions of the tests ask about.
const Fact = "Project Zephyrine's launch code is 7741-ALPHA; the harbour pilots chose it in the spring."
