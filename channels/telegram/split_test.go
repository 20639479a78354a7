package telegram

import (
	"strings"
	"testing"
)

func TestSplitText(t *testing.T) {
	for _, tc := range []struct {
		name  string
		text  string
		limit int
		want  []string
	}{
		{"short", "hello", 10, []string{"hello"}},
		{"exact", "0123456789", 10, []string{"0123456789"}},
		{"blank", "  \n ", 10, nil},
		{"at line break", "aaaa bb\ncccc dddd", 10, []string{"aaaa bb", "cccc dddd"}},
		{"at space", "aaaa bbbb cccc", 10, []string{"aaaa bbbb", "cccc"}},
		{"hard cut", "abcdefghijklmnopqrstuvwxyz", 10, []string{"abcdefghij", "klmnopqrst", "uvwxyz"}},
		{"early break ignored", "a bcdefghijklmno", 10, []string{"a bcdefghi", "jklmno"}},
		{"paragraphs", "aaaaaa\n\nbbbbbb\n\ncccccc", 10, []string{"aaaaaa", "bbbbbb", "cccccc"}},
		{"emoji count twice", "🙂🙂🙂🙂🙂🙂", 4, []string{"🙂🙂", "🙂🙂", "🙂🙂"}},
		{"no split surrogate", "a🙂🙂", 4, []string{"a🙂", "🙂"}},
		{"multibyte", "ééééé ééééé", 6, []string{"ééééé", "ééééé"}},
		{"limit below a character", "🙂", 1, []string{"🙂"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := splitText(tc.text, tc.limit)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("splitText(%q, %d) = %q, want %q", tc.text, tc.limit, got, tc.want)
			}
			for _, p := range got {
				if tc.name != "limit below a character" && utf16Len(p) > tc.limit {
					t.Errorf("part %q longer than %d", p, tc.limit)
				}
			}
		})
	}
}

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct {
		text, cmd string
		ok        bool
	}{
		{"/start", "start", true},
		{"  /Clear please", "clear", true},
		{"/start@my_bot", "start", true},
		{"/start@My_Bot", "start", true},
		{"/start@other_bot", cmdOtherBot, true},
		{"hello /start", "", false},
		{"/", "", false},
		{"/ start", "", false},
	} {
		cmd, ok := parseCommand(tc.text, "my_bot")
		if cmd != tc.cmd || ok != tc.ok {
			t.Errorf("parseCommand(%q) = %q, %v; want %q, %v", tc.text, cmd, ok, tc.cmd, tc.ok)
		}
	}
}

func TestRedactor(t *testing.T) {
	const token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	r := newRedactor(token)
	in := `Post "http://127.0.0.1:1/bot` + token + `/getMe": dial tcp; secret AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw`
	out := r.String(in)
	if strings.Contains(out, "AAHdqTcv") {
		t.Errorf("redacted text still holds the token: %s", out)
	}
	if !strings.Contains(out, "/bot[REDACTED]/getMe") {
		t.Errorf("redacted text %q lost its shape", out)
	}
	long := r.String(strings.Repeat("é", 400))
	if len(long) > 510 || !strings.HasSuffix(long, "…") {
		t.Errorf("long text not cut: %d bytes", len(long))
	}
}
