package judge

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// DefaultPassScore is the judge score a test needs to pass when the
// evaluator record sets no pass_score.
const DefaultPassScore = 0.5

// MaxTemperature is the largest temperature setting accepted, as in the
// OpenAI API.
const MaxTemperature = 2.0

// The settings of an evaluator record's config.
const (
	keyRubric      = "rubric"
	keyJudgeModel  = "judge_model"
	keyCascade     = "cascade"
	keyPassScore   = "pass_score"
	keyTemperature = "temperature"
)

var knownKeys = []string{keyCascade, keyJudgeModel, keyPassScore, keyRubric, keyTemperature}

// settings is an evaluator record's config, parsed.
type settings struct {
	rubric      string
	judgeModel  string
	cascade     bool
	passScore   float64
	temperature *float64
}

// parseSettings reads an evaluator record's config. Errors are a
// *harness.ValidationError with fields such as "config.rubric".
func parseSettings(cfg map[string]any) (settings, error) {
	s := settings{passScore: DefaultPassScore}
	ve := &harness.ValidationError{}

	switch v, ok := cfg[keyRubric]; {
	case !ok || v == nil:
		ve.Add("config."+keyRubric, "is required: say what a good response must do")
	default:
		str, isStr := v.(string)
		switch {
		case !isStr:
			ve.Add("config."+keyRubric, "must be a string, not %s", typeName(v))
		case strings.TrimSpace(str) == "":
			ve.Add("config."+keyRubric, "is required: say what a good response must do")
		default:
			s.rubric = strings.TrimSpace(str)
		}
	}

	if v, ok := cfg[keyJudgeModel]; ok && v != nil {
		str, isStr := v.(string)
		if !isStr {
			ve.Add("config."+keyJudgeModel, "must be a string, not %s", typeName(v))
		}
		s.judgeModel = strings.TrimSpace(str)
	}

	if v, ok := cfg[keyCascade]; ok && v != nil {
		b, isBool := v.(bool)
		if !isBool {
			ve.Add("config."+keyCascade, "must be true or false, not %s", typeName(v))
		}
		s.cascade = b
	}

	if v, ok := cfg[keyPassScore]; ok && v != nil {
		f, isNum := number(v)
		switch {
		case !isNum:
			ve.Add("config."+keyPassScore, "must be a number, not %s", typeName(v))
		case !(f >= 0 && f <= 1):
			ve.Add("config."+keyPassScore, "must be between 0 and 1, not %v", f)
		default:
			s.passScore = f
		}
	}

	if v, ok := cfg[keyTemperature]; ok && v != nil {
		f, isNum := number(v)
		switch {
		case !isNum:
			ve.Add("config."+keyTemperature, "must be a number, not %s", typeName(v))
		case !(f >= 0 && f <= MaxTemperature):
			ve.Add("config."+keyTemperature, "must be between 0 and %v, not %v", MaxTemperature, f)
		default:
			s.temperature = &f
		}
	}

	unknown := make([]string, 0)
	for k := range cfg {
		if !slices.Contains(knownKeys, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		ve.Add("config."+k, "unknown setting (known: %s)", strings.Join(knownKeys, ", "))
	}
	return s, ve.Err()
}

// number reads a number as JSON, YAML or Go code may give it. NaN and
// infinities are numbers here: range checks reject them.
func number(v any) (float64, bool) {
	var f float64
	switch n := v.(type) {
	case json.Number:
		x, err := n.Float64()
		if err != nil {
			return 0, false
		}
		f = x
	case float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		f = reflect.ValueOf(n).Convert(reflect.TypeFor[float64]()).Float()
	default:
		return 0, false
	}
	return f, true
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	if _, ok := number(v); ok {
		return "a number"
	}
	return reflect.TypeOf(v).String()
}
