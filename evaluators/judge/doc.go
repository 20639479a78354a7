// Package judge is a first-party evaluator, type "judge": model-graded
// scoring. A judge model reads the rubric of the evaluator record, the
// test's prompt and expected answer, and the model's response, and gives a
// score from 0 to 1. It suits answers no pattern can check: explanations,
// summaries, style, safety.
//
// # Lifecycle
//
// A program builds one Evaluator with New and registers it under Type:
//
//	reg.RegisterEvaluator(judge.Type, judge.New(judge.Options{}))
//
// With the zero Options the judge is the run's model (EvalRequest.Client,
// asked for EvalRequest.Model). Options.Client sets a dedicated judge
// model instead, such as a stronger model on another endpoint than the
// one under test. The same constructor serves a plugin main. The Evaluator
// holds no global state and no per-request state, and is safe for
// concurrent use.
//
// # Settings
//
// An evaluator record of type judge holds its settings in config:
//
//	id: graded
//	name: Graded by rubric
//	type: judge
//	extraction_regex: 'Answer:\s*(?<answer>.+)'   # used when cascading
//	config:
//	  rubric: |
//	    The answer must be correct and must explain the reasoning in at
//	    most three sentences. Deduct for errors of fact.
//	  judge_model: gpt-4o        # optional
//	  cascade: true              # optional, default false
//	  pass_score: 0.7            # optional, default 0.5
//	  temperature: 0             # optional, default: the endpoint's
//	  faithfulness: false        # optional, default false
//
// The settings:
//
//   - rubric (required unless faithfulness is set): what a good response
//     does. It goes to the judge
//     with the test's prompt, the expected answer and its type (or a note
//     that there is none), the tool calls the model made, and the
//     response.
//   - judge_model: the model name sent to the judge model. Without it, the
//     judge is asked for Options.Model when Options.Client is set, else
//     for the run's model name.
//   - cascade: run the built-in regex evaluator first (harness/regexeval,
//     with the record's extraction_regex and uses_pass2) and ask the
//     judge only when it does not pass the test. Cheap checks pass the
//     easy cases; the judge sees the rest. A test the regex evaluator
//     cannot score (an expected type it does not know) goes to the judge.
//   - pass_score: the judge score from which a test passes (0 to 1).
//   - temperature: the judge requests' temperature (0 to 2). Unset, none is
//     sent. 0 gives the most repeatable verdicts on most endpoints.
//   - faithfulness: grade whether the response is supported by the
//     knowledge-base text an agent's retrieval gave the model, rather
//     than by the rubric (see Faithfulness below). It cannot be combined
//     with cascade.
//
// Config declares these settings; its fields say the same. ValidateConfig
// decodes a record's config into it with harness.DecodeConfig when the
// record is written: a missing rubric, a value of the wrong type or out of
// range, an unknown key (with the nearest known one as a suggestion), or
// an extraction_regex that does not compile is a *harness.ValidationError
// naming the field ("config.rubric"). Evaluate reads the stored record
// the same way but ignores unknown keys, so that a record written by
// another version still runs.
//
// # Rubric tests
//
// RegisterExpectedType adds the expected type "rubric" (ExpectedType) to a
// Registry: a test of that type needs no expected answer and is graded by
// the rubric alone; an answer it has is shown to the judge as a reference.
// With cascade, rubric tests skip the regex evaluator.
//
// # Faithfulness
//
// In a run that targets an agent, the engine gives each evaluator the
// knowledge-base text the agent's retrieval gave the model
// (EvalRequest.Retrieval). With faithfulness set, the judge is shown that
// text, the test's prompt, the rubric as further criteria when there is
// one, and the response, and is asked how fully the response is supported
// by the text (FaithfulnessSystemPrompt): a claim the text does not make
// lowers the score even when it is true, so the score measures grounding,
// not correctness (grade correctness with a second evaluator or the
// expected answer). The score and the pass are the judge's as usual, and
// details["faithfulness"] is true. A request without retrieved text (a run
// of the bare model, or an agent whose knowledge base is empty or gave
// nothing for the prompt) is an error wrapping ErrNoRetrieval: the engine
// records the test as an error, never as passed. A rescore gives the
// judge the knowledge-base text the source run's system message held. The
// retrieved text reaches an Evaluator in the same process only: the
// plugin form of the judge gets none, so faithfulness there is always an
// ErrNoRetrieval error.
//
// # Verdicts
//
// The judge is asked to reason briefly and end with "Score: <0 to 1>".
// ParseVerdict reads that and the other forms judges use: "8/10", "80%",
// "4 out of 5", a JSON object {"score": 0.8, "reasoning": "..."}, a grade
// letter (A = 1, B = 0.75, C = 0.5, D = 0.25, F = 0) or PASS / FAIL. When
// the reply holds no verdict, the judge is asked once more, with a
// stricter instruction; when that reply holds none either, Evaluate fails
// with an error wrapping ErrVerdict, and the engine records the test as an
// error. A judge request that fails is an error too.
//
// # Results
//
// The score is the judge's; the test passes when it reaches pass_score.
// Details hold judge_score, judge_reasoning (the reasoning field of a JSON
// verdict, else the judge's replies), judge_model, judge_verdict (the text
// the score was read from), judge_attempts (1, or 2 after a retry),
// pass_score, extracted_answer and pass2_used (the regex evaluator's when
// cascading, else the whole response and false), cascade ("regex_passed"
// or "judged", when cascading), regex_reason or regex_error (why the
// regex evaluator did not pass the test), and reason when the test failed.
// When the regex evaluator passes a cascading test, the result is the
// regex evaluator's, with cascade "regex_passed". Usage counts the judge's
// tokens, and those of the regex evaluator's second pass.
//
// # Conversations
//
// For a test with a simulated user, the judge is given the user's persona,
// the user's goal as the criteria to grade by (besides the rubric) and the
// whole conversation, and grades whether the conversation met the goal.
// For a later turn of a multi-turn test, it is given the conversation
// before the turn and the turn's message as the task. Both use
// ConversationSystemPrompt.
//
// The prompts are SystemPrompt, a user message built from the settings and
// the request, and RetryPrompt. Test material is wrapped in tags that the
// judge is told to treat as material to grade, not as instructions; this
// lowers, but cannot remove, the risk that a response talks the judge into
// a better score.
package judge
