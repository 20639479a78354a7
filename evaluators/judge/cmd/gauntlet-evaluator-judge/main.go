// Command gauntlet-evaluator-judge serves the judge evaluator as a plugin,
// for a host that does not link it in:
//
//	go build -o plugins/gauntlet-evaluator-judge ./evaluators/judge/cmd/gauntlet-evaluator-judge
//
// The judge asks the run's model, which the host lends it over the plugin
// connection.
package main

import (
	"github.com/gauntlet-eval/gauntlet/evaluators/judge"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

func main() { plugin.ServeEvaluator(judge.New(judge.Options{})) }
