package server_test

import (
	"net/http"
	"testing"
)

// TestBadParams sends NUL, control characters and invalid UTF-8 in path
// parameters and query strings to routes of every kind: each is a 422
// problem naming where the bad text is, before any handler or the database
// sees it, never a 500.
func TestBadParams(t *testing.T) {
	t.Parallel()
	e := newEngineEnv(t, engineConfig{})
	seedResults(t, e, "r1", 4)
	for _, tc := range []struct {
		method, path, location string
	}{
		{http.MethodGet, "/api/run/r1/results?domain=%00", "query.domain"},
		{http.MethodGet, "/api/run/r1/results?domain=a%00b&status=passed", "query.domain"},
		{http.MethodGet, "/api/run/r1/results?q=x%00", "query.q"},
		{http.MethodGet, "/api/run/r1/export?domain=%1b%5b31m", "query.domain"},
		{http.MethodGet, "/api/run/r1/results?domain=%ff", "query.domain"},
		{http.MethodGet, "/api/run/r%00/results", "path.run_id"},
		{http.MethodGet, "/api/run/r1%00", "path.run_id"},
		{http.MethodGet, "/api/settings/tests?domain=%00", "query.domain"},
		{http.MethodGet, "/api/settings/tests/t%00", "path.test_id"},
		{http.MethodDelete, "/api/settings/tests/t%00", "path.test_id"},
		{http.MethodGet, "/api/settings/domains/d%00", "path.domain_id"},
		{http.MethodPut, "/api/settings/domains/d%07", "path.domain_id"},
		{http.MethodGet, "/api/settings/domains?x%00=1", "query"},
		{http.MethodGet, "/api/run/r1%00/matrix", "path.run_id"},
		{http.MethodDelete, "/api/history/r1%00", "path.run_id"},
		{http.MethodGet, "/api/v1/history/r1/d%00/1", "path.domain"},
		{http.MethodGet, "/api/v1/history/last/%c3%28/1", "path.domain"},
		{http.MethodGet, "/api/agents/a%00/kb/f.md", "path.agent_id"},
		{http.MethodGet, "/api/agents/a/kb/f%1b.md", "path.filename"},
		{http.MethodGet, "/api/agents/a/conversations/u%0a", "path.user_id"},
		{http.MethodPost, "/api/channels/c%00/webhook", "path.channel_id"},
		{http.MethodGet, "/api/compare?base=r1%00&head=r1", "query.base"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			mustProblem(t, e.request(tc.method, tc.path, nil), http.StatusUnprocessableEntity, tc.location)
		})
	}
	// Tabs and new lines are text a search may hold; they are not refused
	// in query values.
	must(t, e.get("/api/run/r1/results?q=a%09b%0Ac"), http.StatusOK)
	must(t, e.get("/api/run/r1/results?q=%C3%A9t%C3%A9"), http.StatusOK)
}
