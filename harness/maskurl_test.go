package harness_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/harness"
)

func TestMaskURL(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"https://user:pass@host/x?y=1#z", "https://user:********@host/x?y=1#z", true},
		{"https://token@host:8443/hook", "https://********@host:8443/hook", true},
		{"https://user:p%40ss@host/x", "https://user:********@host/x", true},
		{"http://u:p@127.0.0.1:9/a@b", "http://u:********@127.0.0.1:9/a@b", true},
		{"https://host/x?email=a@b.c", "https://host/x?email=a@b.c", false},
		{"https://host/x", "https://host/x", false},
		{"user@example.com", "user@example.com", false},
		{"not a url: x://u:p@h", "not a url: x://u:p@h", false},
		{"", "", false},
	} {
		got, ok := harness.MaskURL(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("MaskURL(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMaskedURLsComeBack(t *testing.T) {
	stored := map[string]any{
		"callback_url": "https://u:secret@host/x",
		"nested":       map[string]any{"api_url": "https://tok@host/y"},
		"list":         []any{"https://a:b@h/1", "plain"},
		"plain":        "https://host/z",
		"n":            1.5,
	}
	shown := harness.MaskURLs(stored).(map[string]any)
	for _, s := range []string{"secret", "tok", "a:b"} {
		if containsText(shown, s) {
			t.Fatalf("%q shown: %v", s, shown)
		}
	}
	if stored["callback_url"] != "https://u:secret@host/x" {
		t.Fatalf("MaskURLs changed its argument: %v", stored)
	}
	if !harness.HasMaskedURLs(shown) || harness.HasMaskedURLs(stored) {
		t.Errorf("HasMaskedURLs")
	}
	back := harness.MaskURLs(stored).(map[string]any) // a copy, as a client sends it back
	ve := &harness.ValidationError{}
	harness.RestoreMaskedURLs(ve, "config", back, stored)
	if ve.Err() != nil {
		t.Fatal(ve)
	}
	if back["callback_url"] != stored["callback_url"] || back["nested"].(map[string]any)["api_url"] != "https://tok@host/y" ||
		back["list"].([]any)[0] != "https://a:b@h/1" || back["plain"] != "https://host/z" || back["n"] != 1.5 {
		t.Errorf("restored %v", back)
	}
	// Masked credentials with another address, or nothing stored, are
	// refused.
	ve = &harness.ValidationError{}
	harness.RestoreMaskedURLs(ve, "config", map[string]any{"callback_url": "https://u:********@evil/x", "new_url": "https://********@h/",
		"list": []any{"https://a:********@h/2"}}, stored)
	var fields []string
	for _, f := range ve.Fields {
		fields = append(fields, f.Field)
	}
	slices.Sort(fields)
	if !slices.Equal(fields, []string{"config.callback_url", "config.list[0]", "config.new_url"}) {
		t.Errorf("errors %v", ve)
	}
	got := harness.URLCredentials(stored)
	for _, want := range []string{"secret", "tok", "b"} {
		if !slices.Contains(got, want) {
			t.Errorf("URLCredentials %q lacks %q", got, want)
		}
	}
	if r := harness.RedactSecrets("GET https://u:s%2Fx@h: s/x", []string{"s/x"}); strings.Contains(r, "s/x") || strings.Contains(r, "s%2Fx") {
		t.Errorf("RedactSecrets: %q", r)
	}
}

func containsText(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, s)
	case map[string]any:
		for _, e := range v {
			if containsText(e, s) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if containsText(e, s) {
				return true
			}
		}
	}
	return false
}
