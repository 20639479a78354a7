package server_test

import (
	"strings"
	"testing"
)

// TestBrowserEvaluateAgent starts a run that targets an agent from the
// agent's page: "Evaluate this agent" opens the start form with the agent
// as the target (the model field disabled), the matrix fills, and the
// run's page shows the agent and its knowledge base in the config.
func TestBrowserEvaluateAgent(t *testing.T) {
	t.Parallel()
	e, ep := newSupportEnv(t)
	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/agents/helpdesk")
	b.click("#evaluate-agent")
	b.wait("the agent preselected as the target", `(() => {
		const k = document.getElementById('target-kind'), a = document.getElementById('target-agent');
		return k && a && k.value === 'agent' && a.value === 'helpdesk' && !a.disabled &&
			document.querySelector('#start-form input[name="model"]').disabled; })()`)
	b.wait("the domain picker", `document.querySelector('#domain-checks input[value="support"]') !== null`)
	evalJS[bool](b, `(() => { for (const i of document.querySelectorAll('#domain-checks input')) i.checked = i.value === 'support'; return true; })()`)
	b.click("#start-button")
	b.wait("the run to start", `document.querySelector('.cell[data-domain="support"]') !== null`)
	b.wait("the cell to finish", allCellsDone(1))
	if cells := strings.Join(b.cells(), "\n"); cells != "support/1 passed" {
		t.Errorf("cells: %s", cells)
	}
	id := *e.status().LastRunID
	label, passed, _, cfg := e.runInfoOf(id)
	if cfg.AgentID != "helpdesk" || label != "Agent helpdesk" || passed != 2 {
		t.Errorf("run %s: label %q, %d passed, agent %q", id, label, passed, cfg.AgentID)
	}
	if reqs := ep.asked("refund window"); len(reqs) != 1 || !strings.Contains(reqs[0].Messages[0].Content, "refunds within 30 days") {
		t.Errorf("the knowledge base did not reach the model: %+v", reqs)
	}

	// Back to the model: the model field is enabled again, the agent not sent.
	b.choose("#target-kind", "model")
	evalJS[bool](b, `(document.getElementById('target-kind').dispatchEvent(new Event('change')), true)`)
	b.wait("the model field enabled", `!document.querySelector('#start-form input[name="model"]').disabled && document.getElementById('target-agent').disabled`)

	b.open("#/run/" + id)
	b.wait("the run's agent", `document.getElementById('run-agent') !== null`)
	if got := b.text("#run-agent"); !strings.Contains(got, "Agent helpdesk") || !strings.Contains(got, "policy.md") {
		t.Errorf("run page agent: %q", got)
	}
}
