package judge

import (
	"strings"

	"github.com/gauntlet-eval/gauntlet/harness"
)

// DefaultPassScore is the judge score a test needs to pass when the
// evaluator record sets no pass_score.
const DefaultPassScore = 0.5

// MaxTemperature is the largest temperature setting accepted, as in the
// OpenAI API.
const MaxTemperature = 2.0

// Config is the config of an evaluator record of type judge: its
// settings, as the record's config object holds them. ValidateConfig
// decodes a record's config into it with harness.DecodeConfig, so a key
// it has no field for is an error when the record is written.
type Config struct {
	// Rubric says what a good response does; required, and not blank,
	// unless Faithfulness is set. It goes to the judge with the test's
	// prompt, the expected answer and its type (or a note that there is
	// none), the tool calls the model made, and the response. With
	// Faithfulness, it is optional and given to the judge as further
	// criteria.
	Rubric string `json:"rubric"`
	// JudgeModel is the model name sent to the judge model. Empty: the
	// judge is asked for Options.Model when Options.Client is set, else
	// for the run's model name.
	JudgeModel string `json:"judge_model,omitempty"`
	// Cascade runs the built-in regex evaluator first (harness/regexeval,
	// with the record's extraction_regex and uses_pass2) and asks the
	// judge only when it does not pass the test. Default false.
	Cascade bool `json:"cascade,omitempty"`
	// PassScore is the judge score from which a test passes, from 0 to 1;
	// DefaultPassScore when absent.
	PassScore float64 `json:"pass_score"`
	// Temperature is the judge requests' temperature, from 0 to
	// MaxTemperature. Nil: none is sent, and the endpoint's default
	// applies.
	Temperature *float64 `json:"temperature,omitempty"`
	// Faithfulness makes the judge grade whether the response is
	// supported by the knowledge-base text an agent's retrieval gave the
	// model (EvalRequest.Retrieval.Text), rather than how well it meets
	// the rubric: a response that claims what the retrieved text does not
	// say scores low, correct or not. It needs a run that targets an
	// agent: a request without retrieved text is an error (ErrNoRetrieval).
	// It cannot be combined with Cascade. Default false.
	Faithfulness bool `json:"faithfulness,omitempty"`
}

// Validate checks the settings' values: Rubric is not blank (unless
// Faithfulness is set), Cascade and Faithfulness are not both set,
// PassScore is from 0 to 1 and Temperature, when set, from 0 to
// MaxTemperature. Field names are relative to the config ("rubric").
// harness.DecodeConfig calls it.
func (c *Config) Validate() error {
	ve := &harness.ValidationError{}
	if strings.TrimSpace(c.Rubric) == "" && !c.Faithfulness {
		ve.Add("rubric", "is required: say what a good response must do (or set faithfulness)")
	}
	if c.Faithfulness && c.Cascade {
		ve.Add("cascade", "cannot be combined with faithfulness: a faithfulness judge grades whether the answer is supported by the retrieved text, not whether it is right")
	}
	if !(c.PassScore >= 0 && c.PassScore <= 1) {
		ve.Add("pass_score", "must be between 0 and 1, not %v", c.PassScore)
	}
	if t := c.Temperature; t != nil && !(*t >= 0 && *t <= MaxTemperature) {
		ve.Add("temperature", "must be between 0 and %v, not %v", MaxTemperature, *t)
	}
	return ve.Err()
}

// parseConfig reads an evaluator record's config: strict (an unknown key
// is an error) when the record is checked before it is stored, lenient
// when a stored record is used, so that a record written by another
// version, with a key this one does not know, still runs. Errors are a
// *harness.ValidationError naming fields such as "config.rubric".
func parseConfig(cfg map[string]any, strict bool) (Config, error) {
	c := Config{PassScore: DefaultPassScore}
	if err := (harness.ConfigDecoder{IgnoreUnknown: !strict}).Decode(cfg, &c); err != nil {
		return Config{}, err
	}
	c.Rubric = strings.TrimSpace(c.Rubric)
	c.JudgeModel = strings.TrimSpace(c.JudgeModel)
	return c, nil
}
