// Command mcp-server is an example MCP (Model Context Protocol) server for
// Gauntlet's real tools: a calculator whose tools add and multiply two
// numbers, built on the official Go SDK.
//
// By default it speaks MCP on its standard input and output, as a tool
// record's mcp.command starts it:
//
//	go build -o bin/mcp-calculator ./examples/mcp-server
//
//	# tools/multiply.yaml
//	id: multiply
//	name: Multiply
//	function:
//	  name: multiply
//	  description: Multiply two numbers.
//	  parameters: {type: object, properties: {a: {type: number}, b: {type: number}}, required: [a, b]}
//	mcp:
//	  command: [./bin/mcp-calculator]
//
// With --http ADDR it serves MCP's streamable HTTP transport at
// http://ADDR/mcp instead, for a record's mcp.url. It logs to stderr, which
// Gauntlet copies into its own log prefixed with the tool id.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// operands are the arguments of both tools.
type operands struct {
	A float64 `json:"a" jsonschema:"the first number"`
	B float64 `json:"b" jsonschema:"the second number"`
}

// result is both tools' structured output.
type result struct {
	Result float64 `json:"result"`
}

// newServer returns the calculator's MCP server.
func newServer(logger *log.Logger) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "gauntlet-example-calculator", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Add two numbers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in operands) (*mcp.CallToolResult, result, error) {
			logger.Printf("add %g + %g", in.A, in.B)
			return nil, result{Result: in.A + in.B}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "multiply", Description: "Multiply two numbers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in operands) (*mcp.CallToolResult, result, error) {
			logger.Printf("multiply %g × %g", in.A, in.B)
			return nil, result{Result: in.A * in.B}, nil
		})
	return s
}

func main() {
	addr := flag.String("http", "", "serve MCP's streamable HTTP transport at http://ADDR/mcp instead of stdio")
	flag.Parse()
	logger := log.New(os.Stderr, "calculator: ", 0)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, logger); err != nil {
		logger.Print(err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string, logger *log.Logger) error {
	s := newServer(logger)
	if addr == "" {
		// Ends when Gauntlet closes its standard input.
		return s.Run(ctx, &mcp.StdioTransport{})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	srv := &http.Server{Addr: addr, Handler: mux}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	logger.Printf("serving MCP at http://%s/mcp", addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
