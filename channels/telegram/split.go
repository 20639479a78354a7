package telegram

import (
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// splitText cuts text into parts of at most limit UTF-16 code units, in
// order. A cut falls on the last line break of a part when there is one in
// its second half, else on the last space there, else between two
// characters. The line break or space at a cut is dropped, and so is
// whitespace at the end of a part and line breaks at the start of the
// next; blank parts are left out (Telegram refuses empty messages).
func splitText(text string, limit int) []string {
	var parts []string
	add := func(s string) {
		if s = strings.TrimRightFunc(s, unicode.IsSpace); strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	for {
		text = strings.TrimLeft(text, "\r\n")
		cut := prefixLen(text, limit)
		if cut == len(text) {
			add(text)
			return parts
		}
		if cut == 0 { // limit below one character: send it whole
			_, cut = utf8.DecodeRuneInString(text)
		}
		end, next := cut, cut
		window := text[:cut]
		if i := strings.LastIndexByte(window, '\n'); i > 0 && i >= cut/2 {
			end, next = i, i+1
		} else if i := strings.LastIndexFunc(window, unicode.IsSpace); i > 0 && i >= cut/2 {
			_, size := utf8.DecodeRuneInString(window[i:])
			end, next = i, i+size
		}
		add(text[:end])
		text = text[next:]
	}
}

// prefixLen returns the length in bytes of the longest prefix of s that
// holds at most limit UTF-16 code units and ends between two characters.
func prefixLen(s string, limit int) int {
	units := 0
	for i, r := range s {
		n := utf16.RuneLen(r)
		if n < 0 {
			n = 1 // invalid UTF-8 reaches Telegram as U+FFFD
		}
		if units+n > limit {
			return i
		}
		units += n
	}
	return len(s)
}

// utf16Len returns the length of s in UTF-16 code units.
func utf16Len(s string) int {
	units := 0
	for _, r := range s {
		units += max(utf16.RuneLen(r), 1)
	}
	return units
}
