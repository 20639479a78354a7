// Command gauntlet-evaluator-trajectory serves the trajectory evaluator
// as a plugin, for a host that does not link it in:
//
//	go build -o plugins/gauntlet-evaluator-trajectory ./evaluators/trajectory/cmd/gauntlet-evaluator-trajectory
package main

import (
	"github.com/gauntlet-eval/gauntlet/evaluators/trajectory"
	"github.com/gauntlet-eval/gauntlet/harness/plugin"
)

func main() { plugin.ServeEvaluator(trajectory.New()) }
