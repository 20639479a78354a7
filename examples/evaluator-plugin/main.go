// Command evaluator-plugin is a third-party evaluator plugin for Gauntlet:
// the "keyword" evaluator type, which scores a response by the share of
// expected keywords it contains. Build it into the server's plugins
// directory under the name that says what it is:
//
//	go build -o plugins/gauntlet-evaluator-keyword ./examples/evaluator-plugin
//
// and an evaluator record of type "keyword" uses it. See README.md.
package main

import "github.com/gauntlet-eval/gauntlet/harness/plugin"

func main() { plugin.ServeEvaluator(Keyword{}) }
