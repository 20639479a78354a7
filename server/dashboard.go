package server

import (
	"github.com/gauntlet-eval/gauntlet/web"
)

// mountDashboard serves the web dashboard (package web): index.html at /
// and its files under /assets/. The dashboard lies outside /api/, so it
// loads without the API token; every API call it makes needs the token
// like any other client's.
func (s *Server) mountDashboard() {
	h := web.Handler()
	s.mux.Handle("GET /{$}", h)
	s.mux.Handle("GET /assets/", h)
}
