// Package server is Gauntlet's reference HTTP API, built with huma v2 over
// net/http: the endpoints of the service specification, an OpenAPI 3.1
// document at /openapi.json and /openapi.yaml (3.0 at /openapi-3.0.json),
// and interactive docs at /docs.
//
// Each resource has its own file with a handler struct, a register
// function and its input and output types. Errors are RFC 9457
// problem+json bodies with "success": false; harness errors are mapped to
// status codes in one place (errors.go).
package server
