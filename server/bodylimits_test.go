package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gauntlet-eval/gauntlet/channels/webhook"
	"github.com/gauntlet-eval/gauntlet/server"
)

// TestBodyLimitsConfigured sets each body limit of server.Limits and
// checks that the routes it governs follow it both ways: a body over a
// lowered limit is a 413 naming it, and a body over the built-in default
// passes a raised one (the operation's own check follows the limit too).
func TestBodyLimitsConfigured(t *testing.T) {
	t.Parallel()
	const small = 4 << 10
	e := newAgentEnv(t, agentConfig{}, withLimits(server.Limits{BodyBytes: small, ImportBytes: 2 * small, UploadBytes: 3 * small}))
	e.createAgent("bot", "")
	pad := func(n int) string { return strings.Repeat("x", n) }
	tooLarge := func(r *response, limit string) {
		t.Helper()
		p := mustProblem(t, r, http.StatusRequestEntityTooLarge)
		if !strings.Contains(p.Detail, limit) {
			t.Errorf("413 detail %q does not name %s", p.Detail, limit)
		}
	}
	// The default limit: an ordinary operation.
	must(t, e.post("/api/settings/domains", map[string]any{"id": "d", "name": "D", "description": pad(small / 2)}), http.StatusCreated)
	tooLarge(e.post("/api/settings/domains", map[string]any{"id": "d2", "name": "D", "description": pad(small)}), "4 KiB")
	// The import limit: a body over the default limit but under the
	// import's passes; over the import's, it is a 413.
	must(t, e.post("/api/settings/import", map[string]any{"domains": []any{
		map[string]any{"id": "d3", "name": "D", "description": pad(small + small/2)}}}), http.StatusOK)
	tooLarge(e.post("/api/settings/import", map[string]any{"domains": []any{
		map[string]any{"id": "d4", "name": "D", "description": pad(2 * small)}}}), "8 KiB")
	// The upload limit, on both knowledge-base writes.
	must(t, e.upload("bot", "notes.md", []byte(pad(2*small))), http.StatusCreated)
	tooLarge(e.upload("bot", "big.md", []byte(pad(3*small))), "12 KiB")
	tooLarge(e.request(http.MethodPut, "/api/agents/bot/kb/notes.md", map[string]any{"content": pad(3 * small)}), "12 KiB")
	// The webhook takes no more than the default limit.
	body := []byte(`{"user_id": "u", "message": "` + pad(small) + `"}`)
	tooLarge(e.webhookPost("nope", body, webhook.Sign("s", body)), "4 KiB")

	// Raised above the built-in 1 MiB: a 1.5 MiB body is taken.
	big := newEnv(t, withLimits(server.Limits{BodyBytes: 2 << 20}))
	must(t, big.post("/api/settings/domains", map[string]any{"id": "d", "name": "D", "system_prompt": pad(3 << 19)}), http.StatusUnprocessableEntity)
}
