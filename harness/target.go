package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness/internal/suggest"
)

// TargetDefinition is a black-box target: a system under test that is
// reachable only over HTTP (an agent, a chatbot, a retrieval service, the
// project's own webhook channel), sent each user turn of a test as its own
// clients send theirs. It is the file targets/<id>.yaml of a definitions
// directory:
//
//	url: https://support.example.com/api/chat
//	method: POST
//	headers:
//	  Authorization: Bearer ${SUPPORT_API_TOKEN}
//	body:
//	  session: "{{conversation_id}}"
//	  messages: "{{messages}}"
//	response:
//	  answer: /reply/text
//	  tool_calls: /reply/tool_calls
//	  sources: /reply/citations
//
// Secrets are never stored: a header value, the URL and the signing
// secret name environment variables as ${VAR}, which are read when the
// target is used, and an API returns the definition with the names, not
// the values. harness/target sends turns to a target.
type TargetDefinition struct {
	ID string `json:"id" yaml:"id"`
	// Description says what the target is, for people choosing one.
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	// URL is the http or https address requests go to. It may name
	// environment variables (${VAR}), read when the target is used: a
	// channel id, a host that differs between machines.
	URL string `json:"url" yaml:"url"`
	// Method is POST (the default), PUT or PATCH: a turn is sent as a
	// JSON body.
	Method string `json:"method,omitempty" yaml:"method,omitempty"`
	// Headers are sent with every request. A value may name environment
	// variables (${VAR}); a header that carries credentials
	// (Authorization, or a name with token, secret, password or key in
	// it) must take its secret from one. Content-Type is
	// application/json unless a header sets it.
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty"`
	// Body is the JSON body of a request, any YAML value: a string that
	// is exactly {{prompt}}, {{messages}} or {{conversation_id}} is
	// replaced by that value as JSON (the user's last message, the
	// conversation so far as OpenAI-shaped messages [{role, content}],
	// the conversation's id), and the same names inside a longer string
	// by their text ({{messages}}: its JSON text). It must name
	// {{prompt}} or {{messages}} somewhere.
	Body any `json:"body" yaml:"body"`
	// Response says where the answer is in the target's JSON reply.
	Response TargetResponse `json:"response" yaml:"response"`
	// Signature, when set, signs each request body as webhooks commonly
	// are (the project's own webhook channel, GitHub's
	// X-Hub-Signature-256): the header carries "sha256=" and the hex
	// HMAC-SHA256 of the body keyed with the secret.
	Signature *TargetSignature `json:"signature,omitempty" yaml:"signature,omitempty"`
}

// TargetResponse locates the parts of a target's reply with JSON pointers
// (RFC 6901: "" is the whole document, "/a/0/b" a path). In a file it may
// be a single pointer, the answer's: response: /reply.
type TargetResponse struct {
	// Answer points at the answer's text, a JSON string. Required.
	Answer string `json:"answer" yaml:"answer"`
	// ToolCalls, when set, points at an array of the tool calls the
	// target made: each an object with name (or OpenAI's
	// function.name) and arguments (a JSON object, or a string holding
	// one), and optionally id.
	ToolCalls string `json:"tool_calls,omitempty" yaml:"tool_calls,omitempty"`
	// Sources, when set, points at an array of the sources the answer
	// used: file names, or objects with file (and optionally chunk and
	// score), as the webhook channel's reply lists them.
	Sources string `json:"sources,omitempty" yaml:"sources,omitempty"`
}

// targetResponseKeys are the keys of a response given as an object.
var targetResponseKeys = []string{"answer", "sources", "tool_calls"}

// UnmarshalJSON takes a response as one pointer (a string: the answer's)
// or as an object {answer, tool_calls?, sources?}; another key is an
// error naming the nearest known one.
func (r *TargetResponse) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	out, err := ParseTargetResponse(v)
	if err != nil {
		return err
	}
	*r = out
	return nil
}

// ParseTargetResponse reads a target's response from its decoded form: a
// string (the answer's pointer) or an object {answer, tool_calls?,
// sources?} of strings. The pointers are not checked here
// (Validator.Target does).
func ParseTargetResponse(v any) (TargetResponse, error) {
	switch x := v.(type) {
	case string:
		return TargetResponse{Answer: x}, nil
	case map[string]any:
		ve := &ValidationError{}
		var out TargetResponse
		for _, k := range sortedAnyKeys(x) {
			var dst *string
			switch k {
			case "answer":
				dst = &out.Answer
			case "tool_calls":
				dst = &out.ToolCalls
			case "sources":
				dst = &out.Sources
			default:
				if best, ok := suggest.Nearest(k, targetResponseKeys); ok {
					ve.Add(k, "unknown key (did you mean %q?)", best)
				} else {
					ve.Add(k, "unknown key (known keys: %s)", strings.Join(targetResponseKeys, ", "))
				}
				continue
			}
			s, ok := x[k].(string)
			if !ok {
				ve.Add(k, "must be a JSON pointer (a string such as /answer)")
				continue
			}
			*dst = s
		}
		return out, ve.Err()
	case nil:
		return TargetResponse{}, nil
	}
	return TargetResponse{}, errors.New("must be a JSON pointer to the answer (such as /answer) or {answer, tool_calls, sources} pointers")
}

func sortedAnyKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TargetSignature signs a target's request bodies with HMAC-SHA256.
type TargetSignature struct {
	// Header is the header that carries the signature, such as
	// X-Gauntlet-Signature.
	Header string `json:"header" yaml:"header"`
	// Secret is the signing key, always from the environment: a
	// reference such as ${GAUNTLET_WEBHOOK_SECRET}.
	Secret string `json:"secret" yaml:"secret"`
}

// The placeholders of a target's body.
const (
	// PlaceholderPrompt is the user's last message, a JSON string.
	PlaceholderPrompt = "{{prompt}}"
	// PlaceholderMessages is the conversation so far, OpenAI-shaped:
	// [{"role": "user", "content": "…"}, …], the user's last.
	PlaceholderMessages = "{{messages}}"
	// PlaceholderConversationID is the conversation's id, a JSON string,
	// the same for every turn of one test (and repeat) of a run.
	PlaceholderConversationID = "{{conversation_id}}"
)

var placeholderNames = []string{"conversation_id", "messages", "prompt"}

// TargetMethods are the methods a target may be sent: a turn is a JSON
// body.
var TargetMethods = []string{"POST", "PUT", "PATCH"}

// Target checks a target definition and fills its defaults (method POST).
func (v Validator) Target(t *TargetDefinition) error {
	ve := &ValidationError{}
	checkRecord(ve, "target", t)
	checkID(ve, "id", t.ID)
	checkTargetURL(ve, t.URL)
	t.Method = strings.ToUpper(strings.TrimSpace(t.Method))
	if t.Method == "" {
		t.Method = "POST"
	}
	if !slices.Contains(TargetMethods, t.Method) {
		ve.Add("method", "must be one of %s: a turn is sent as a JSON body", strings.Join(TargetMethods, ", "))
	}
	for _, name := range sortedStringKeys(t.Headers) {
		checkTargetHeader(ve, "headers."+name, name, t.Headers[name])
	}
	checkTargetBody(ve, t.Body)
	checkTargetResponse(ve, t.Response)
	if s := t.Signature; s != nil {
		switch {
		case s.Header == "":
			ve.Add("signature.header", "is required")
		case !validHeaderName(s.Header):
			ve.Add("signature.header", "%q is not a valid header name", s.Header)
		}
		if _, ok := t.Headers[s.Header]; ok && s.Header != "" {
			ve.Add("signature.header", "%s is also set in headers", s.Header)
		}
		refs, err := EnvRefs(s.Secret)
		switch {
		case err != nil:
			ve.Add("signature.secret", "%v", err)
		case s.Secret == "":
			ve.Add("signature.secret", "is required")
		case len(refs) != 1 || s.Secret != "${"+refs[0]+"}":
			ve.Add("signature.secret", "must name an environment variable, as ${VAR}: a secret is never stored in a definition")
		}
	}
	return ve.Err()
}

func sortedStringKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkTargetURL checks a target's URL: http or https with a host, no
// credentials. The parts that name environment variables are checked as
// far as they can be before they are read.
func checkTargetURL(ve *ValidationError, raw string) {
	if strings.TrimSpace(raw) == "" {
		ve.Add("url", "is required")
		return
	}
	if _, err := EnvRefs(raw); err != nil {
		ve.Add("url", "%v", err)
		return
	}
	// A variable stands for any text: check the URL with each replaced
	// by a plain word, unless the scheme or host itself is a variable.
	probe := ExpandEnv(raw, func(string) string { return "x" })
	u, err := url.Parse(probe)
	if err != nil {
		ve.Add("url", "is not a URL: %v", err)
		return
	}
	schemeFromVar := strings.HasPrefix(raw, "${") // the variable holds the scheme and host
	if !schemeFromVar && u.Scheme != "http" && u.Scheme != "https" {
		ve.Add("url", "must be an http or https URL")
		return
	}
	if u.Host == "" && !schemeFromVar {
		ve.Add("url", "has no host")
	}
	if u.User != nil {
		ve.Add("url", "holds credentials: send them in a header that names an environment variable, as Authorization: Bearer ${TOKEN}")
	}
}

// managedHeaders are set by the client, never by a definition.
var managedHeaders = []string{"Connection", "Content-Length", "Host", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func checkTargetHeader(ve *ValidationError, field, name, value string) {
	if !validHeaderName(name) {
		ve.Add(field, "%q is not a valid header name", name)
		return
	}
	canon := canonicalHeader(name)
	if slices.Contains(managedHeaders, canon) {
		ve.Add(field, "is set by the client itself")
		return
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		ve.Add(field, "holds a line break or NUL")
		return
	}
	refs, err := EnvRefs(value)
	if err != nil {
		ve.Add(field, "%v", err)
		return
	}
	if len(refs) == 0 && value != "" && secretHeader(canon) {
		ve.Add(field, "carries credentials: take them from an environment variable, as ${%s}, so that the secret is never stored", envNameFor(name))
	}
}

// secretHeader reports whether a header carries credentials.
func secretHeader(canon string) bool {
	if canon == "Authorization" || canon == "Proxy-Authorization" || canon == "Cookie" {
		return true
	}
	l := strings.ToLower(canon)
	for _, s := range []string{"token", "secret", "password", "key", "signature", "auth"} {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// envNameFor suggests a variable name for a header's secret.
func envNameFor(header string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(header))
}

// validHeaderName reports whether s is an HTTP header field name (a
// token, RFC 9110).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// canonicalHeader is the canonical form of a header name
// ("content-type" → "Content-Type"), as net/http writes it.
func canonicalHeader(s string) string {
	b := []byte(strings.ToLower(s))
	upper := true
	for i, c := range b {
		if upper && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		upper = c == '-'
	}
	return string(b)
}

// checkTargetBody checks that a body is JSON, names only known
// placeholders, and names the prompt or the messages.
func checkTargetBody(ve *ValidationError, body any) {
	if body == nil {
		ve.Add("body", "is required: the request body, naming {{prompt}} or {{messages}}")
		return
	}
	if _, err := json.Marshal(body); err != nil {
		ve.Add("body", "is not JSON: %v", err)
		return
	}
	seen := map[string]bool{}
	walkTargetBody("body", body, func(field, s string) {
		for _, name := range PlaceholdersIn(s) {
			if slices.Contains(placeholderNames, name) {
				seen[name] = true
				continue
			}
			if best, ok := suggest.Nearest(name, placeholderNames); ok {
				ve.Add(field, "unknown placeholder {{%s}} (did you mean {{%s}}?)", name, best)
			} else {
				ve.Add(field, "unknown placeholder {{%s}} (known: {{prompt}}, {{messages}}, {{conversation_id}})", name)
			}
		}
	})
	if !seen["prompt"] && !seen["messages"] {
		ve.Add("body", "names neither {{prompt}} nor {{messages}}: the target would never see the test")
	}
}

// walkTargetBody calls fn for every string of a body, with its field.
func walkTargetBody(field string, v any, fn func(field, s string)) {
	switch x := v.(type) {
	case string:
		fn(field, x)
	case map[string]any:
		for _, k := range sortedAnyKeys(x) {
			walkTargetBody(field+"."+k, x[k], fn)
		}
	case []any:
		for i, e := range x {
			walkTargetBody(field+"["+strconv.Itoa(i)+"]", e, fn)
		}
	}
}

// PlaceholdersIn returns the names of the {{name}} placeholders in s, in
// order (spaces inside the braces are trimmed).
func PlaceholdersIn(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			return out
		}
		j := strings.Index(s[i+2:], "}}")
		if j < 0 {
			return out
		}
		out = append(out, strings.TrimSpace(s[i+2:i+2+j]))
		s = s[i+2+j+2:]
	}
}

func checkTargetResponse(ve *ValidationError, r TargetResponse) {
	if r.Answer == "" {
		ve.Add("response", "is required: a JSON pointer to the answer, such as /answer (\"\" cannot be told from absent: the whole reply is not an answer)")
	} else if err := CheckJSONPointer(r.Answer); err != nil {
		ve.Add("response.answer", "%v", err)
	}
	if r.ToolCalls != "" {
		if err := CheckJSONPointer(r.ToolCalls); err != nil {
			ve.Add("response.tool_calls", "%v", err)
		}
	}
	if r.Sources != "" {
		if err := CheckJSONPointer(r.Sources); err != nil {
			ve.Add("response.sources", "%v", err)
		}
	}
}

// CheckJSONPointer returns why p is not a JSON pointer (RFC 6901): ""
// (the whole document) or "/" followed by reference tokens separated by
// "/", in which "~" is followed only by "0" or "1".
func CheckJSONPointer(p string) error {
	if p == "" {
		return nil
	}
	if p[0] != '/' {
		return fmt.Errorf("%q is not a JSON pointer: it must start with \"/\" (as /answer)", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return fmt.Errorf("%q is not a JSON pointer: \"~\" must be followed by 0 or 1 (~0 is \"~\", ~1 is \"/\")", p)
		}
	}
	return nil
}

// ErrEnvNotSet is matched by the error of ResolveEnv for a variable that
// is not set.
var ErrEnvNotSet = errors.New("environment variable not set")

// EnvRefs returns the names of the environment variables s names as
// ${NAME}, in order; an unterminated ${ or a name that is not
// [A-Za-z_][A-Za-z0-9_]* is an error. "$$" is a literal "$".
func EnvRefs(s string) ([]string, error) {
	var out []string
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			continue
		}
		switch s[i+1] {
		case '$':
			i++
			continue
		case '{':
		default:
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return nil, fmt.Errorf("has a ${ without its closing }")
		}
		name := s[i+2 : i+2+end]
		if !validEnvName(name) {
			return nil, fmt.Errorf("${%s} is not a variable name: letters, digits and _, not starting with a digit", name)
		}
		out = append(out, name)
		i += 2 + end
	}
	return out, nil
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ExpandEnv replaces each ${NAME} of s with lookup(NAME) and "$$" with
// "$"; other text, a lone "$" included, is kept.
func ExpandEnv(s string, lookup func(string) string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b bytes.Buffer
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
			if end := strings.IndexByte(s[i+2:], '}'); end >= 0 {
				b.WriteString(lookup(s[i+2 : i+2+end]))
				i += 2 + end
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ResolveEnv returns s with its ${NAME} references replaced by the
// variables' values, read with getenv; a variable that is unset or empty
// is an error wrapping ErrEnvNotSet that names it (never a value).
func ResolveEnv(s string, getenv func(string) string) (string, error) {
	refs, err := EnvRefs(s)
	if err != nil {
		return "", err
	}
	for _, name := range refs {
		if getenv(name) == "" {
			return "", fmt.Errorf("%w: %s", ErrEnvNotSet, name)
		}
	}
	return ExpandEnv(s, getenv), nil
}
