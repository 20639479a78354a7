package agent

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
		got, ok := MaskURL(tc.in)
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
	}
	shown := maskConfig(stored, secretRule{}, "")
	for _, s := range []string{"secret", "tok", "a:b"} {
		if v := []any{shown["callback_url"], shown["nested"], shown["list"]}; slices.ContainsFunc(v, func(x any) bool {
			return containsText(x, s)
		}) {
			t.Fatalf("%q shown: %v", s, shown)
		}
	}
	back := cloneConfig(shown)
	ve := &harness.ValidationError{}
	restoreURLs(ve, "config", back, stored)
	if ve.Err() != nil {
		t.Fatal(ve)
	}
	if back["callback_url"] != stored["callback_url"] || back["nested"].(map[string]any)["api_url"] != "https://tok@host/y" ||
		back["list"].([]any)[0] != "https://a:b@h/1" || back["plain"] != "https://host/z" {
		t.Errorf("restored %v", back)
	}
	// Masked credentials with another address, or nothing stored, are
	// refused.
	ve = &harness.ValidationError{}
	restoreURLs(ve, "config", map[string]any{"callback_url": "https://u:********@evil/x", "new_url": "https://********@h/"}, stored)
	var fields []string
	for _, f := range ve.Fields {
		fields = append(fields, f.Field)
	}
	slices.Sort(fields)
	if !slices.Equal(fields, []string{"config.callback_url", "config.new_url"}) {
		t.Errorf("errors %v", ve)
	}
	if got := secretValues(stored, secretRule{}); !slices.Contains(got, "secret") || !slices.Contains(got, "tok") || !slices.Contains(got, "b") {
		t.Errorf("secretValues %q", got)
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
