package main

import "github.com/gauntlet-eval/gauntlet/harness/mcptool"

// openMCPTools makes the app's registry answer the calls of tools that
// name an MCP server: each call bounded by --tool-timeout, each answer by
// --llm-max-response-bytes (the bound of a model's answer). The servers
// start on first use and are stopped when the app closes, after the
// engine and the agents that call them.
func (a *app) openMCPTools() error {
	a.mcpTools = mcptool.New(mcptool.Options{CallTimeout: a.settings.toolTimeout,
		MaxAnswerBytes: a.settings.llmMaxBytes, Logger: a.log})
	a.onClose(func() { a.mcpTools.Close() })
	return a.registry.RegisterToolConnector(a.mcpTools)
}
