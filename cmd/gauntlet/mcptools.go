package main

import (
	"log/slog"

	"github.com/gauntlet-eval/gauntlet/harness"
	"github.com/gauntlet-eval/gauntlet/harness/mcptool"
)

// openMCPTools makes the app's registry answer the calls of tools that
// name an MCP server. The servers are stopped when the app closes, after
// the engine and the agents that call them.
func (a *app) openMCPTools() (err error) {
	a.mcpTools, err = newMCPTools(&a.settings, a.registry, a.log)
	if a.mcpTools != nil {
		a.onClose(func() { a.mcpTools.Close() })
	}
	return err
}

// newMCPTools registers in reg the client of tools that name an MCP
// server: each call bounded by --tool-timeout, each answer by
// --llm-max-response-bytes (the bound of a model's answer). Servers start
// on first use; the caller closes the Manager.
func newMCPTools(s *settings, reg *harness.Registry, log *slog.Logger) (*mcptool.Manager, error) {
	m := mcptool.New(mcptool.Options{CallTimeout: s.toolTimeout, MaxAnswerBytes: s.llmMaxBytes, Logger: log})
	if err := reg.RegisterToolConnector(m); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}
