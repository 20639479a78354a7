package harness

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// ToolMCP says which MCP (Model Context Protocol) server answers a tool's
// calls: a program started as a child process that speaks MCP on its
// standard input and output (Command, with Env), or a server reachable
// over MCP's streamable HTTP transport (URL). Exactly one of Command and
// URL is set.
//
// A call of the tool's function calls the server's tool named Tool, by
// default the function's own name, with the model's arguments.
type ToolMCP struct {
	// Command is the program and its arguments. A program name without a
	// slash is looked up in PATH; a relative path is relative to the
	// Gauntlet process's working directory.
	Command []string `json:"command,omitempty" yaml:"command,omitempty"`
	// Env are environment variables of the program, besides PATH, HOME,
	// TMPDIR, LANG and LC_ALL, which it gets from Gauntlet's environment
	// (nothing else of it: Gauntlet's own keys stay out of the child).
	// A value may name variables of Gauntlet's environment as ${VAR}: the
	// reference is resolved when the program starts, never stored
	// resolved, so secrets stay out of definition files and exports.
	Env map[string]string `json:"env,omitempty" yaml:"env,omitempty"`
	// URL is the server's streamable HTTP endpoint, http or https.
	URL string `json:"url,omitempty" yaml:"url,omitempty"`
	// Tool is the name of the server's tool to call; empty means the
	// function's name.
	Tool string `json:"tool,omitempty" yaml:"tool,omitempty"`
}

// ToolName is the server's tool a call of fn goes to: Tool, else fn's
// name.
func (m *ToolMCP) ToolName(fn FunctionDef) string {
	if m.Tool != "" {
		return m.Tool
	}
	return fn.Name
}

// envRef matches a ${VAR} reference in an environment value.
var envRef = regexp.MustCompile(`\$\{([^}]*)\}`)

// envName is a valid environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Environ returns Env as "KEY=value" strings, sorted by key, with each
// ${VAR} reference replaced by lookup(VAR). A variable lookup does not
// find is an error naming it (never its value).
func (m *ToolMCP) Environ(lookup func(string) (string, bool)) ([]string, error) {
	keys := make([]string, 0, len(m.Env))
	for k := range m.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		var missing []string
		v := envRef.ReplaceAllStringFunc(m.Env[k], func(ref string) string {
			name := ref[2 : len(ref)-1]
			val, ok := lookup(name)
			if !ok {
				missing = append(missing, name)
			}
			return val
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("env %s names ${%s}, which is not set in Gauntlet's environment", k, missing[0])
		}
		out = append(out, k+"="+v)
	}
	return out, nil
}

// checkMCP validates a tool's mcp block into ve, its fields named
// "mcp.<field>".
func checkMCP(ve *ValidationError, t *ToolDefinition) {
	m := t.MCP
	if m == nil {
		return
	}
	if t.MockResponse != nil {
		ve.Add("mcp", "and mock_response exclude each other: an MCP server answers the calls, give one of the two")
	}
	switch {
	case len(m.Command) > 0 && m.URL != "":
		ve.Add("mcp", "gives both command and url: give command (a program started for the tool) or url (a server over HTTP), not both")
	case len(m.Command) == 0 && m.URL == "":
		if m.Command != nil {
			ve.Add("mcp.command", "is empty: give the program to start and its arguments")
		} else {
			ve.Add("mcp", "needs command (a program to start) or url (a streamable HTTP endpoint)")
		}
	case len(m.Command) > 0:
		if strings.TrimSpace(m.Command[0]) == "" {
			ve.Add("mcp.command[0]", "is empty: it is the program to start")
		}
		for i, a := range m.Command {
			if strings.ContainsRune(a, 0) {
				ve.Add(fmt.Sprintf("mcp.command[%d]", i), "holds a NUL byte")
			}
		}
	default:
		checkMCPURL(ve, m.URL)
	}
	if len(m.Env) > 0 && m.URL != "" && len(m.Command) == 0 {
		ve.Add("mcp.env", "applies to a started program (command), not to a server at a url")
	}
	keys := make([]string, 0, len(m.Env))
	for k := range m.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		field := "mcp.env." + k
		if !envName.MatchString(k) {
			ve.Add(field, "is not an environment variable name: ^[A-Za-z_][A-Za-z0-9_]*$")
			continue
		}
		v := m.Env[k]
		if strings.ContainsRune(v, 0) {
			ve.Add(field, "holds a NUL byte")
		}
		for _, ref := range envRef.FindAllStringSubmatch(v, -1) {
			if !envName.MatchString(ref[1]) {
				ve.Add(field, "names ${%s}: a reference is ${NAME}, NAME a variable name (^[A-Za-z_][A-Za-z0-9_]*$)", ref[1])
			}
		}
		if rest := envRef.ReplaceAllString(v, ""); strings.Contains(rest, "${") {
			ve.Add(field, "has a ${ without its closing }")
		}
	}
	if len(m.Tool) > 128 || strings.ContainsAny(m.Tool, "\x00\n\r") {
		ve.Add("mcp.tool", "is not a tool name: at most 128 bytes, no NUL or line break")
	}
}

// checkMCPURL checks the endpoint of an MCP server over HTTP.
func checkMCPURL(ve *ValidationError, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		ve.Add("mcp.url", "is not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		ve.Add("mcp.url", "must be an http or https URL (MCP's streamable HTTP transport), not %q", u.Scheme+":")
	case u.Host == "":
		ve.Add("mcp.url", "has no host")
	}
}

// ToolConnector makes the Tool that answers the calls of a tool record
// whose calls go to a server the record names (its MCP block). The
// implementation of MCP is harness/mcptool; the binary registers it with
// Registry.RegisterToolConnector, so that the library's core does not
// depend on an MCP client.
type ToolConnector interface {
	// ToolFor returns the Tool for def (whose MCP is set). It is called
	// for every call and must be cheap: an implementation keeps one
	// connection per record and starts it on the first call.
	ToolFor(def *ToolDefinition) (Tool, error)
}

// RegisterToolConnector makes c answer the calls of tool records with an
// MCP block. There is one: a second is an error wrapping ErrConflict.
func (r *Registry) RegisterToolConnector(c ToolConnector) error {
	if c == nil {
		return fmt.Errorf("register tool connector: nil: %w", ErrInvalid)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.connector != nil {
		return fmt.Errorf("register tool connector: already registered: %w", ErrConflict)
	}
	r.connector = c
	return nil
}

// ToolConnector returns the connector of MCP tool records, nil when none
// is registered.
func (r *Registry) ToolConnector() ToolConnector {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.connector
}
