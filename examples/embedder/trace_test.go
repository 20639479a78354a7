//go:build !grpcnotrace

package embedder_test

// grpcTrace says whether gRPC links golang.org/x/net/trace, whose init
// registers handlers on http.DefaultServeMux; -tags grpcnotrace leaves it
// out.
const grpcTrace = true
