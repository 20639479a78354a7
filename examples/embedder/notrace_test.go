//go:build grpcnotrace

package embedder_test

// grpcTrace: built with -tags grpcnotrace, gRPC leaves out
// golang.org/x/net/trace and registers nothing.
const grpcTrace = false
