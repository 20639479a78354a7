package telegram

import (
	"fmt"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// MaxShownSources is how many knowledge-base chunks SourcesLine names at
// most: a citation, not a listing of the knowledge base.
const MaxShownSources = 3

// SourcesLine is the line a reply ends with when config.show_sources is
// set: the knowledge-base chunks the agent drew on, best first, by file
// and part (the chunk number from 1, as the model saw it), such as
// "Sources: faq.md (part 2), guide.pdf (parts 5 and 7)". Only chunks that
// matched the user's message count (score above 0: a chunk given only
// because the whole knowledge base fits the model's budget is not a
// source of the answer), at most MaxShownSources of them, each once; the
// parts of one file are named together, in the file's first place. It is
// "" when no chunk matched.
func SourcesLine(sources []harness.Source) string {
	type file struct {
		name  string
		parts []int
	}
	var files []*file
	seen := map[harness.Source]bool{}
	n := 0
	for _, s := range sources {
		if n == MaxShownSources {
			break
		}
		key := harness.Source{File: s.File, Chunk: s.Chunk}
		if s.Score <= 0 || seen[key] {
			continue
		}
		seen[key] = true
		n++
		var f *file
		for _, g := range files {
			if g.name == s.File {
				f = g
			}
		}
		if f == nil {
			f = &file{name: s.File}
			files = append(files, f)
		}
		f.parts = append(f.parts, s.Chunk+1)
	}
	if len(files) == 0 {
		return ""
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.name + " (" + partsText(f.parts) + ")"
	}
	return "Sources: " + strings.Join(names, ", ")
}

// partsText is "part 2", "parts 2 and 5" or "parts 2, 5 and 7".
func partsText(parts []int) string {
	if len(parts) == 1 {
		return fmt.Sprintf("part %d", parts[0])
	}
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = fmt.Sprint(p)
	}
	return "parts " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
