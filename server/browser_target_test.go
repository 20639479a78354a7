package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestBrowserStartTargetRun starts a run against a black-box target from
// the start form: "Black-box target" lists the targets of the
// definitions, disables the model field, and the run goes to the target.
func TestBrowserStartTargetRun(t *testing.T) {
	t.Parallel()
	box := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"answer": "I do not know."})
	}))
	t.Cleanup(box.Close)
	e := newEngineEnv(t, engineConfig{})
	e.writeFile("targets/box.yaml", "id: box\ndescription: A box\nurl: "+box.URL+"/ask\nbody:\n  q: '{{prompt}}'\nresponse: /answer\n")
	must(t, e.post("/api/settings/sync", nil), http.StatusOK)

	b := newBrowser(t, e.url, 1280, 900)
	b.open("#/live")
	b.wait("the domain picker", `document.querySelectorAll('#domain-checks input:checked').length === 3`)
	b.wait("the targets listed", `document.querySelector('#target-box option[value="box"]') !== null`)
	b.choose("#target-kind", "box")
	evalJS[bool](b, `(document.getElementById('target-kind').dispatchEvent(new Event('change')), true)`)
	b.wait("the target picker shown, the model field disabled", `(() => {
		const s = document.getElementById('target-box');
		return !s.disabled && !s.closest('.field').hidden && s.labels.length > 0 &&
			document.querySelector('#start-form input[name="model"]').disabled &&
			document.getElementById('target-agent').disabled; })()`)
	evalJS[bool](b, `(() => { for (const i of document.querySelectorAll('#domain-checks input')) i.checked = i.value === 'arithmetic'; return true; })()`)
	b.click("#start-button")
	b.wait("the run to start", `document.querySelector('.cell[data-domain="arithmetic"]') !== null`)
	e.waitIdle()
	id := *e.status().LastRunID
	var out struct {
		RunInfo struct {
			ModelName string `json:"model_name"`
			Failed    int    `json:"failed"`
			Config    struct {
				TargetID string `json:"target_id"`
			} `json:"config"`
		} `json:"run_info"`
	}
	must(t, e.get("/api/run/"+id), http.StatusOK).decode(t, &out)
	if ri := out.RunInfo; ri.Config.TargetID != "box" || ri.ModelName != "box" || ri.Failed == 0 {
		t.Errorf("run %+v; want the arithmetic tests sent to the box (which knows no answer)", ri)
	}
	if n := e.mock.Stats().ChatCompletions; n != 0 {
		t.Errorf("the model endpoint got %d requests", n)
	}
}
