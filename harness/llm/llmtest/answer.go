package llmtest

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// RestatePhrase is what marks a second-pass prompt: a last user message
// containing it (in any case), after an assistant answer, is answered with
// the bare value of that answer.
const RestatePhrase = "final answer"

// RestatePrompt is a second-pass prompt the fake recognises; an evaluator
// may send it as is.
const RestatePrompt = "Restate only your final answer: the value alone, with no other words."

// IsRestate reports whether a prompt asks the model to restate its final
// answer: whether it contains RestatePhrase, in any case.
func IsRestate(prompt string) bool {
	return strings.Contains(strings.ToLower(prompt), RestatePhrase)
}

// answer applies the rules of the package documentation, in order.
func (h *Handler) answer(req *Request) *Reply {
	if h.opts.Respond != nil {
		if rep := h.opts.Respond(req); rep != nil {
			return rep
		}
	}
	ui := req.lastUserIndex()
	prompt := req.LastUser()
	if ui < 0 && len(req.Messages) > 0 {
		prompt = req.Messages[len(req.Messages)-1].Content
	}
	if text, ok := toolSummary(req.Messages, ui); ok {
		return &Reply{Content: text}
	}
	for _, k := range h.answerKey {
		if strings.Contains(prompt, k) {
			return &Reply{Content: h.opts.Answers[k]}
		}
	}
	if ui > 0 && IsRestate(prompt) {
		for i := ui - 1; i >= 0; i-- {
			if m := req.Messages[i]; m.Role == harness.RoleAssistant && m.Content != "" {
				return &Reply{Content: bareValue(m.Content)}
			}
		}
	}
	if f, ok := chooseTool(prompt, req.Tools); ok {
		args, ok := h.opts.ToolArguments[f.Name]
		if !ok {
			args = guessArguments(prompt, f.Parameters)
		}
		return CallTool(f.Name, args)
	}
	if v, ok := Arithmetic(prompt); ok {
		return &Reply{Content: "The answer is " + v + "."}
	}
	if kb, ok := KnowledgeText(req.Messages); ok {
		if s, ok := BestSentence(kb, prompt); ok {
			return &Reply{Content: s}
		}
	}
	return &Reply{Content: prompt}
}

// CallTool is a Reply that calls one function with the given arguments,
// for Options.Respond.
func CallTool(name string, args map[string]any) *Reply {
	b, _ := json.Marshal(args)
	if args == nil {
		b = []byte("{}")
	}
	return &Reply{ToolCalls: []harness.ToolCall{{Name: name, Arguments: string(b)}}}
}

// toolSummary answers the tool messages that follow the last user message
// (index ui), naming each call's function: "The result of get_weather is
// {...}."
func toolSummary(msgs []harness.Message, ui int) (string, bool) {
	names := map[string]string{}
	var parts []string
	for _, m := range msgs[ui+1:] {
		for _, tc := range m.ToolCalls {
			names[tc.ID] = tc.Name
		}
		if m.Role != harness.RoleTool {
			continue
		}
		name := names[m.ToolCallID]
		if name == "" {
			name = "the tool"
		}
		out := strings.TrimSuffix(strings.TrimSpace(m.Content), ".")
		parts = append(parts, fmt.Sprintf("The result of %s is %s.", name, out))
	}
	return strings.Join(parts, " "), len(parts) > 0
}

var (
	numberRE = regexp.MustCompile(`-?\d+(?:,\d{3})*(?:\.\d+)?`)
	answerRE = regexp.MustCompile(`(?i)answer(?: is|:)\s*(.+)`)
)

// bareValue is an answer's value: its last number; else what follows its
// last "answer is" or "answer:"; else the whole answer, trimmed of spaces
// and of a final full stop.
func bareValue(s string) string {
	if ns := numberRE.FindAllString(s, -1); len(ns) > 0 {
		return ns[len(ns)-1]
	}
	if m := answerRE.FindAllStringSubmatch(s, -1); len(m) > 0 {
		s = m[len(m)-1][1]
	}
	return strings.TrimSuffix(strings.TrimSpace(s), ".")
}

var (
	operand = `[-−]?\d+(?:\.\d+)?`
	exprRE  = regexp.MustCompile(`(?i)what\s+is\s+(` + operand + `(?:\s*[-+*/×÷−]\s*` + operand + `)+)`)
	tokenRE = regexp.MustCompile(`([-+*/×÷−]?)\s*(` + operand + `)`)
)

// Arithmetic answers "What is A + B?": the last such question in prompt,
// with +, -, *, / (also ×, ÷, −), integers or decimals, negative ones too,
// any number of operands, * and / first. It returns the exact value
// (integers plainly, decimals with up to 10 places, trailing zeros off)
// and whether the prompt asked such a question; a division by zero is
// "undefined".
func Arithmetic(prompt string) (string, bool) {
	m := exprRE.FindAllStringSubmatch(prompt, -1)
	if len(m) == 0 {
		return "", false
	}
	expr := strings.ReplaceAll(m[len(m)-1][1], "−", "-")
	// Operands and the operators before them; the first has none.
	var ops []string
	var vals []*big.Rat
	for i, t := range tokenRE.FindAllStringSubmatch(expr, -1) {
		op, num := t[1], t[2]
		if i == 0 && op != "" {
			num, op = op+num, ""
			if num[0] == '+' {
				num = num[1:]
			}
		}
		v, ok := new(big.Rat).SetString(num)
		if !ok {
			return "", false
		}
		ops, vals = append(ops, op), append(vals, v)
	}
	// Multiplications and divisions fold into terms; terms add up.
	sum := new(big.Rat)
	term := vals[0]
	termSign := 1
	for i := 1; i <= len(vals); i++ {
		op := ""
		if i < len(vals) {
			op = ops[i]
		}
		switch op {
		case "*", "×":
			term = new(big.Rat).Mul(term, vals[i])
			continue
		case "/", "÷":
			if vals[i].Sign() == 0 {
				return "undefined", true
			}
			term = new(big.Rat).Quo(term, vals[i])
			continue
		}
		if termSign < 0 {
			sum.Sub(sum, term)
		} else {
			sum.Add(sum, term)
		}
		if i < len(vals) {
			term, termSign = vals[i], 1
			if op == "-" {
				termSign = -1
			}
		}
	}
	return formatRat(sum), true
}

func formatRat(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	s := strings.TrimRight(r.FloatString(10), "0")
	return strings.TrimSuffix(s, ".")
}

// chooseTool picks the first offered function the prompt mentions: by its
// name (as is, or with _ read as spaces), or by a significant word of its
// name or description.
func chooseTool(prompt string, tools []harness.FunctionDef) (harness.FunctionDef, bool) {
	if len(tools) == 0 || prompt == "" {
		return harness.FunctionDef{}, false
	}
	lower := strings.ToLower(prompt)
	words := map[string]bool{}
	for _, w := range wordsOf(lower) {
		words[w] = true
	}
	for _, f := range tools {
		name := strings.ToLower(f.Name)
		if strings.Contains(lower, name) || strings.Contains(lower, strings.ReplaceAll(name, "_", " ")) {
			return f, true
		}
	}
	for _, f := range tools {
		for _, w := range wordsOf(strings.ToLower(splitCamel(f.Name) + " " + f.Description)) {
			if len(w) >= 4 && !stopWords[w] && words[w] {
				return f, true
			}
		}
	}
	return harness.FunctionDef{}, false
}

var wordRE = regexp.MustCompile(`[\pL\pN]+`)

func wordsOf(s string) []string { return wordRE.FindAllString(s, -1) }

// splitCamel turns getWeather or get_weather into "get Weather", "get weather".
func splitCamel(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r == '_' || r == '-' || r == '.' {
			b.WriteByte(' ')
			continue
		}
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// stopWords are words of four letters or more too common in prompts and
// descriptions to say that a tool is meant.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`what when where which while with within without from that this these those
		there their them they then than have has will would should could into onto about your yours some
		also only each more most other such very just over like make made given using used uses
		return returns value values function tool tools call calls name names does please answer answers
		number numbers result results question text string data info information
		following based following current specified provided`) {
		stopWords[w] = true
	}
}

var (
	quotedRE  = regexp.MustCompile(`"([^"]+)"|“([^”]+)”|'([^']+)'`)
	properRE  = regexp.MustCompile(`\b[A-Z][\pL'-]*(?:\s+[A-Z][\pL'-]*)*`)
	sentStart = regexp.MustCompile(`(?:^|[.!?]\s+)([A-Z][\pL'-]*)`)
	exprArgRE = regexp.MustCompile(operand + `(?:\s*[-+*/×÷−]\s*` + operand + `)+`)
)

// guessArguments fills a function's JSON Schema properties from a prompt:
// numbers in the order they appear for number and integer properties; for
// strings, an enum value the prompt names (else the first), an arithmetic
// expression for a property named like "expr", else quoted text, else
// capitalised names not starting a sentence ("Paris", "New York"), else
// the whole prompt; true for booleans. Required properties come first and
// are always filled; the others only when the prompt gives a value.
func guessArguments(prompt string, schema map[string]any) map[string]any {
	args := map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	if len(props) == 0 {
		return args
	}
	var required []string
	switch rq := schema["required"].(type) {
	case []any:
		for _, r := range rq {
			if s, ok := r.(string); ok {
				required = append(required, s)
			}
		}
	case []string:
		required = rq
	}
	var names []string
	for _, r := range required {
		if _, ok := props[r]; ok && !slices.Contains(names, r) {
			names = append(names, r)
		}
	}
	var rest []string
	for k := range props {
		if !slices.Contains(names, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	names = append(names, rest...)

	numbers := numberRE.FindAllString(prompt, -1)
	texts := stringCandidates(prompt)
	for _, name := range names {
		p, _ := props[name].(map[string]any)
		typ, _ := p["type"].(string)
		must := slices.Contains(required, name)
		switch typ {
		case "number", "integer":
			if len(numbers) == 0 {
				if must {
					args[name] = 0
				}
				continue
			}
			r, ok := new(big.Rat).SetString(strings.ReplaceAll(numbers[0], ",", ""))
			numbers = numbers[1:]
			switch {
			case !ok:
				args[name] = 0
			case typ == "integer" || r.IsInt():
				f, _ := r.Float64()
				args[name] = int64(f)
			default:
				f, _ := r.Float64()
				args[name] = f
			}
		case "boolean":
			args[name] = true
		case "array":
			if must {
				args[name] = []any{}
			}
		case "object":
			if must {
				args[name] = map[string]any{}
			}
		default: // "string" and schemas without a type
			if enum, ok := p["enum"].([]any); ok && len(enum) > 0 {
				args[name] = enum[0]
				for _, e := range enum {
					if s, ok := e.(string); ok && strings.Contains(strings.ToLower(prompt), strings.ToLower(s)) {
						args[name] = s
						break
					}
				}
				continue
			}
			if strings.Contains(strings.ToLower(name), "expr") {
				if e := exprArgRE.FindString(prompt); e != "" {
					args[name] = e
					continue
				}
			}
			if len(texts) > 0 {
				args[name], texts = texts[0], texts[1:]
			} else if must {
				args[name] = prompt
			}
		}
	}
	return args
}

// stringCandidates lists the values a prompt offers for string arguments:
// quoted text first, then capitalised names that do not start a sentence.
func stringCandidates(prompt string) []string {
	var out []string
	for _, m := range quotedRE.FindAllStringSubmatch(prompt, -1) {
		for _, g := range m[1:] {
			if g != "" {
				out = append(out, g)
			}
		}
	}
	starts := map[int]bool{}
	for _, loc := range sentStart.FindAllStringSubmatchIndex(prompt, -1) {
		starts[loc[2]] = true
	}
	for _, loc := range properRE.FindAllStringIndex(prompt, -1) {
		words := strings.Fields(prompt[loc[0]:loc[1]])
		if starts[loc[0]] {
			words = words[1:] // the sentence's first word is no name
		}
		words = slices.DeleteFunc(words, func(w string) bool { return w == "I" || strings.HasPrefix(w, "I'") })
		if len(words) > 0 {
			out = append(out, strings.Join(words, " "))
		}
	}
	return out
}

// sortLongestFirst orders keys longest first, then in byte order.
func sortLongestFirst(keys []string) {
	sort.Slice(keys, func(i, j int) bool {
		if len(keys[i]) != len(keys[j]) {
			return len(keys[i]) > len(keys[j])
		}
		return keys[i] < keys[j]
	})
}
