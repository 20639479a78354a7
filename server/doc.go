// Package server is Gauntlet's reference HTTP API, built with huma v2 over
// net/http: the endpoints of the service specification, an OpenAPI 3.1
// document at /openapi.json and /openapi.yaml (3.0 at /openapi-3.0.json),
// and an API reference page made from it at /docs.
//
// Each resource has its own file: a handler struct holding only the
// service it uses, as a small interface (the catalog, the engine, the run
// store or the agent service satisfy them; tests use fakes), a
// registerX(api, service, logger) function, and the request and response
// types of its operations. Those types are the API's own (apiDomain is
// documented as Domain): handlers map them to and from the library's
// types, so that the library's types carry no HTTP concerns and a change
// to them cannot change the API unnoticed. openapi.go says what makes the
// document good for generated clients.
//
// Errors are RFC 9457 problem+json bodies with "success": false, made by a
// transformer of this API (errors.go): importing the package changes no
// global state. Library errors are mapped to status codes in one place,
// problems.problem.
package server
