package harness

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestEnvRefs(t *testing.T) {
	cases := []struct {
		in   string
		refs []string
		err  string
	}{
		{"plain", nil, ""},
		{"Bearer ${TOKEN}", []string{"TOKEN"}, ""},
		{"${A}:${B_2}", []string{"A", "B_2"}, ""},
		{"$$ and $HOME and $", nil, ""}, // only ${…} names a variable
		{"$${NOT}", nil, ""},
		{"Bearer ${TOKEN", nil, "without its closing }"},
		{"${2X}", nil, "is not a variable name"},
		{"${}", nil, "is not a variable name"},
		{"${A-B}", nil, "is not a variable name"},
	}
	for _, tc := range cases {
		refs, err := EnvRefs(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("EnvRefs(%q) = %v, %v; want an error with %q", tc.in, refs, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(refs, tc.refs) {
			t.Errorf("EnvRefs(%q) = %v, %v; want %v", tc.in, refs, err, tc.refs)
		}
	}
}

func TestResolveEnv(t *testing.T) {
	env := map[string]string{"TOKEN": "t0k", "HOST": "h"}
	getenv := func(k string) string { return env[k] }
	got, err := ResolveEnv("Bearer ${TOKEN} at ${HOST}, $$5, $x", getenv)
	if err != nil || got != "Bearer t0k at h, $5, $x" {
		t.Errorf("ResolveEnv = %q, %v", got, err)
	}
	_, err = ResolveEnv("${TOKEN}${MISSING}", getenv)
	if !errors.Is(err, ErrEnvNotSet) || !strings.Contains(err.Error(), "MISSING") || strings.Contains(err.Error(), "t0k") {
		t.Errorf("ResolveEnv with a missing variable = %v", err)
	}
}

func TestCheckJSONPointer(t *testing.T) {
	for _, p := range []string{"", "/", "/a", "/a/0/b", "/a~1b", "/m~0n", "/ spaced key"} {
		if err := CheckJSONPointer(p); err != nil {
			t.Errorf("CheckJSONPointer(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"a", "a/b", "/a~", "/a~2", "#/a"} {
		if err := CheckJSONPointer(p); err == nil {
			t.Errorf("CheckJSONPointer(%q) = nil; want an error", p)
		}
	}
}

func TestPlaceholdersIn(t *testing.T) {
	if got := PlaceholdersIn("{{prompt}} and {{ messages }} and {{x"); !slices.Equal(got, []string{"prompt", "messages"}) {
		t.Errorf("PlaceholdersIn = %v", got)
	}
}

// TestValidateTarget: the checks a definition goes through, whatever
// reads it (a file, an import, a program).
func TestValidateTarget(t *testing.T) {
	ok := func() TargetDefinition {
		return TargetDefinition{ID: "t", URL: "https://x.example/chat", Body: map[string]any{"q": "{{prompt}}"},
			Response: TargetResponse{Answer: "/a"}}
	}
	d := ok()
	if err := (Validator{}).Target(&d); err != nil || d.Method != "POST" {
		t.Fatalf("valid target: %v, method %q", err, d.Method)
	}
	cases := []struct {
		name  string
		edit  func(*TargetDefinition)
		field string
	}{
		{"bad id", func(d *TargetDefinition) { d.ID = "a b" }, "id"},
		{"ftp", func(d *TargetDefinition) { d.URL = "ftp://x/y" }, "url"},
		{"no host", func(d *TargetDefinition) { d.URL = "http:///path" }, "url"},
		{"credentials in the URL", func(d *TargetDefinition) { d.URL = "https://u:p@x/y" }, "url"},
		{"a variable in the host is checked later", nil, ""},
		{"DELETE", func(d *TargetDefinition) { d.Method = "delete" }, "method"},
		{"Host header", func(d *TargetDefinition) { d.Headers = map[string]string{"host": "x"} }, "headers.host"},
		{"line break", func(d *TargetDefinition) { d.Headers = map[string]string{"X-A": "a\r\nb"} }, "headers.X-A"},
		{"literal token", func(d *TargetDefinition) { d.Headers = map[string]string{"X-Auth-Token": "abc"} }, "headers.X-Auth-Token"},
		{"no body", func(d *TargetDefinition) { d.Body = nil }, "body"},
		{"unknown placeholder deep", func(d *TargetDefinition) { d.Body = map[string]any{"a": []any{"{{prompt}}", "{{user}}"}} }, "body.a[1]"},
		{"no answer", func(d *TargetDefinition) { d.Response = TargetResponse{Sources: "/s"} }, "response"},
		{"bad tool_calls pointer", func(d *TargetDefinition) { d.Response.ToolCalls = "calls" }, "response.tool_calls"},
		{"signature without header", func(d *TargetDefinition) { d.Signature = &TargetSignature{Secret: "${S}"} }, "signature.header"},
		{"signature header also in headers", func(d *TargetDefinition) {
			d.Headers = map[string]string{"X-Sig": "${S}"}
			d.Signature = &TargetSignature{Header: "X-Sig", Secret: "${S}"}
		}, "signature.header"},
		{"signature secret in clear", func(d *TargetDefinition) { d.Signature = &TargetSignature{Header: "X-Sig", Secret: "pre-${S}"} }, "signature.secret"},
	}
	for _, tc := range cases {
		d := ok()
		if tc.edit == nil {
			d.URL = "${BASE}/chat"
			if err := (Validator{}).Target(&d); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		tc.edit(&d)
		err := (Validator{}).Target(&d)
		var ve *ValidationError
		if !errors.As(err, &ve) || !slices.ContainsFunc(ve.Fields, func(f FieldError) bool { return f.Field == tc.field }) {
			t.Errorf("%s: %v; want an error at %s", tc.name, err, tc.field)
		}
	}
}
