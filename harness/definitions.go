package harness

// Domain is an evaluation area: a named group of tests, organised by level,
// scored by one evaluator unless a test overrides it.
type Domain struct {
	ID          string `json:"id" yaml:"id"` // Identifier chosen by the client at creation.
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description" yaml:"description,omitempty"`
	// EvaluatorID names the evaluator that scores this domain's tests. Empty
	// means the built-in regex evaluator with its defaults.
	EvaluatorID  string `json:"evaluator_id" yaml:"evaluator_id,omitempty"`
	Enabled      bool   `json:"enabled" yaml:"enabled"`
	SystemPrompt string `json:"system_prompt" yaml:"system_prompt,omitempty"`
	Icon         string `json:"icon" yaml:"icon,omitempty"`
	// Color is a hex colour, #RRGGBB.
	Color string `json:"color" yaml:"color,omitempty"`
}

// PromptMode says how a level's system prompt combines with its domain's.
type PromptMode string

// The system prompt modes.
const (
	// PromptAppend puts the level's prompt after the domain's, separated by a
	// blank line. It is the default.
	PromptAppend PromptMode = "append"
	// PromptPrepend puts the level's prompt before the domain's.
	PromptPrepend PromptMode = "prepend"
	// PromptReplace uses the level's prompt alone.
	PromptReplace PromptMode = "replace"
)

// Valid reports whether m is one of the known modes.
func (m PromptMode) Valid() bool {
	return m == PromptAppend || m == PromptPrepend || m == PromptReplace
}

// DefaultPassThreshold is the cell score at which a level counts as passed
// when its configuration does not say otherwise.
const DefaultPassThreshold = 0.5

// LevelConfig is the configuration of one level of one domain.
type LevelConfig struct {
	DomainID         string     `json:"domain_id"`
	Level            int        `json:"level"`
	SystemPrompt     string     `json:"system_prompt"`
	SystemPromptMode PromptMode `json:"system_prompt_mode"` // append, prepend, replace
	// PassThreshold is the mean score at which the level's cell is passed.
	PassThreshold float64 `json:"pass_threshold"` // 0 to 1
	// Tools lists tool ids offered to the model for every test of the level.
	Tools []string `json:"tools"`
	// Params are the level's default sampling parameters; a run's own
	// override them field by field. Nil: none.
	Params *Params `json:"params,omitempty"`
}

// EffectiveSystemPrompt combines a domain's system prompt with a level's,
// per the level's mode.
func EffectiveSystemPrompt(domainPrompt string, level LevelConfig) string {
	lp := level.SystemPrompt
	switch {
	case level.SystemPromptMode == PromptReplace:
		return lp
	case lp == "":
		return domainPrompt
	case domainPrompt == "":
		return lp
	case level.SystemPromptMode == PromptPrepend:
		return lp + "\n\n" + domainPrompt
	default:
		return domainPrompt + "\n\n" + lp
	}
}

// Expected is a test's expected answer and how to compare a response to it.
type Expected struct {
	Answer string `json:"answer" yaml:"answer"`
	// Type is the kind of comparison: exact, numeric, integer, choice,
	// contains, regex, boolean, json, tool_call, or a type registered by an
	// evaluator.
	Type string `json:"type" yaml:"type"`
	// Tolerance is the relative tolerance of numeric comparisons.
	Tolerance *float64 `json:"tolerance,omitempty" yaml:"tolerance,omitempty"`
	// Arguments, for tool_call, must be a subset of the call's arguments.
	Arguments map[string]any `json:"arguments,omitempty" yaml:"arguments,omitempty"`
	// Sources, in a run that targets an agent, name the knowledge-base
	// files (by file name) the agent's retrieval should find for the
	// prompt: the result then records the retrieval's recall and hit.
	// They do not change how the answer is scored.
	Sources []string `json:"sources,omitempty" yaml:"sources,omitempty"`
	// Trajectory, when set, is the tool calls the model should make, for
	// the trajectory evaluator (or a plugin that reads it). Any expected
	// type may carry one; it is validated whenever it is present.
	Trajectory *Trajectory `json:"trajectory,omitempty" yaml:"trajectory,omitempty"`
}

// Test is one prompt with its expected answer, at one level of one domain.
// Instead of a prompt, a test may give scripted user turns (Turns) or a
// simulated user (SimulatedUser): see conversation.go.
type Test struct {
	ID       string   `json:"id" yaml:"id"`
	DomainID string   `json:"domain_id" yaml:"-"`
	Level    int      `json:"level" yaml:"-"`
	Name     string   `json:"name" yaml:"name,omitempty"`
	Prompt   string   `json:"prompt" yaml:"prompt,omitempty"`
	Expected Expected `json:"expected" yaml:"expected"`
	// Turns, instead of Prompt, make a multi-turn test.
	Turns []Turn `json:"turns,omitempty" yaml:"turns,omitempty"`
	// SimulatedUser, instead of Prompt, makes a model play the user.
	SimulatedUser *SimulatedUser `json:"simulated_user,omitempty" yaml:"simulated_user,omitempty"`
	// EvaluatorID overrides the domain's evaluator for this test.
	EvaluatorID string `json:"evaluator_id" yaml:"evaluator_id,omitempty"`
	// Tools lists tool ids offered to the model for this test, in addition
	// to the level's.
	Tools []string `json:"tools" yaml:"tools,omitempty"`
}

// EvaluatorTypeRegex is the built-in evaluator type: extraction with a
// regular expression, then comparison per the test's expected type.
const EvaluatorTypeRegex = "regex"

// EvaluatorConfig is an evaluator record: which implementation scores a
// response (Type) and its settings.
type EvaluatorConfig struct {
	ID          string `json:"id" yaml:"id"`
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description" yaml:"description,omitempty"`
	// Type selects the implementation: "regex", a type registered in the
	// Registry, or a plugin's type.
	Type string `json:"type" yaml:"type"`
	// ExtractionRegex extracts the answer from a response (type regex): the
	// named group "answer", else group 1, else the whole match.
	ExtractionRegex string `json:"extraction_regex" yaml:"extraction_regex,omitempty"`
	// UsesPass2 asks the model to restate its final answer when extraction
	// finds nothing usable.
	UsesPass2 bool `json:"uses_pass2" yaml:"uses_pass2"`
	// Config holds settings of other evaluator types (a rubric, a judge
	// model...).
	Config map[string]any `json:"config,omitempty" yaml:"config,omitempty"`
}

// FunctionDef describes a function a model may call, as in the OpenAI tools
// API.
type FunctionDef struct {
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description" yaml:"description,omitempty"`
	// Parameters is a JSON Schema object: type "object", properties,
	// required.
	Parameters map[string]any `json:"parameters,omitempty" yaml:"parameters,omitempty"`
}

// ToolDefinition is a tool record: a function definition and what answers
// a model's calls of it: the MCP server of MCP, else a registered Tool of
// the function's name, else MockResponse.
type ToolDefinition struct {
	ID           string      `json:"id" yaml:"id"`
	Name         string      `json:"name" yaml:"name"`
	Description  string      `json:"description" yaml:"description,omitempty"`
	Function     FunctionDef `json:"function" yaml:"function"`
	MockResponse any         `json:"mock_response,omitempty" yaml:"mock_response,omitempty"`
	// MCP, when set, sends the tool's calls to a real MCP server instead
	// of answering them with MockResponse (the two exclude each other).
	MCP *ToolMCP `json:"mcp,omitempty" yaml:"mcp,omitempty"`
}

// Snapshot is a whole set of definitions: what export returns, what import
// takes, and what a definitions directory holds.
type Snapshot struct {
	Domains    []Domain          `json:"domains"`
	Levels     []LevelConfig     `json:"levels"`
	Tests      []Test            `json:"tests"`
	Evaluators []EvaluatorConfig `json:"evaluators"`
	Tools      []ToolDefinition  `json:"tools"`
	// Targets are the black-box targets (targets/<id>.yaml). In an
	// import, nil keeps the targets there are, as for evaluators and
	// tools.
	Targets []TargetDefinition `json:"targets,omitempty"`
	// Pricing is the price list of pricing.yaml; nil without one. An
	// import without it keeps the prices there are.
	Pricing *Pricing `json:"pricing,omitempty"`
}
