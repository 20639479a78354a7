package sqldb

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapeTextRoundTrip(t *testing.T) {
	for _, s := range []string{
		"", "plain", "é✓ 🦀", `back\slash \0 \x41`, "nul \x00", "\x00", "bad \xff\xfe", "\xc3(",
		textMarker, textMarker + "x", "x" + textMarker, `\`, "\\x0", "trailing \\",
	} {
		e := escapeText(s)
		if strings.IndexByte(e, 0) >= 0 || !utf8.ValidString(e) {
			t.Errorf("escapeText(%q) = %q, which text cannot hold", s, e)
		}
		if got := unescapeText(e); got != s {
			t.Errorf("unescapeText(escapeText(%q)) = %q (escaped %q)", s, got, e)
		}
		if !needsEscape(s) && e != s {
			t.Errorf("escapeText(%q) = %q, want it unchanged", s, e)
		}
	}
}
