// Command gauntlet-evaluator-json_schema serves the JSON Schema evaluator
// as a plugin, for a host that does not link it in:
//
//	go build -o plugins/gauntlet-evaluator-json_schema ./evaluators/jsonschema/cmd/gauntlet-evaluator-json_schema
package main

import (
	"github.com/gauntlet-eval/gauntlet/evaluators/jsonschema"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

func main() { plugin.ServeEvaluator(jsonschema.New(jsonschema.Options{})) }
