package server

import (
	"github.com/gauntlet-eval/gauntlet/web"
	"github.com/gauntlet-eval/gauntlet/web/docsui"
)

// mountDashboard serves the web dashboard (package web): index.html at /
// and its files under /assets/; and the API reference (package docsui)
// at /docs, made from the API's OpenAPI document, its stylesheet under
// /docs/, all from the binary. They
// lie outside /api/, so they load without the API token; every API call
// the dashboard makes needs the token like any other client's.
func (s *Server) mountDashboard() {
	h := web.Handler()
	s.mux.Handle("GET /{$}", h)
	s.mux.Handle("GET /assets/", h)
	docs := docsui.Handler(s.api.OpenAPI())
	s.mux.Handle("GET "+docsui.Prefix, docs)
	s.mux.Handle("GET "+docsui.Prefix+"/", docs)
}
