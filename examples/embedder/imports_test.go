package embedder_test

import (
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	// Every public package of the library: importing them must change
	// nothing else in the program.
	_ "github.com/gauntlet-eval/gauntlet/harness"
	_ "github.com/gauntlet-eval/gauntlet/harness/agent"
	_ "github.com/gauntlet-eval/gauntlet/harness/catalog"
	_ "github.com/gauntlet-eval/gauntlet/harness/engine"
	_ "github.com/gauntlet-eval/gauntlet/harness/harnesstest"
	_ "github.com/gauntlet-eval/gauntlet/harness/llm"
	_ "github.com/gauntlet-eval/gauntlet/harness/llm/llmtest"
	_ "github.com/gauntlet-eval/gauntlet/harness/plugin"
	_ "github.com/gauntlet-eval/gauntlet/harness/plugin/host"
	_ "github.com/gauntlet-eval/gauntlet/harness/regexeval"
	_ "github.com/gauntlet-eval/gauntlet/harness/runs"
	_ "github.com/gauntlet-eval/gauntlet/harness/store"
)

// TestImportsChangeNothing: with every library package linked in, the
// process-wide defaults an embedding program relies on are as the
// standard library sets them: the default loggers, the default HTTP
// transport, and the default ServeMux, on which nothing is registered
// (no /debug/vars, no /debug/pprof). The one exception is gRPC's, which
// the plugin packages link: its golang.org/x/net/trace registers
// /debug/requests and /debug/events (they answer local requests only),
// unless the program is built with -tags grpcnotrace.
func TestImportsChangeNothing(t *testing.T) {
	if h := fmt.Sprintf("%T", slog.Default().Handler()); h != "*slog.defaultHandler" {
		t.Errorf("slog's default handler is %s", h)
	}
	if log.Writer() != os.Stderr || log.Flags() != log.LstdFlags || log.Prefix() != "" {
		t.Errorf("the log package's defaults changed: flags %d, prefix %q", log.Flags(), log.Prefix())
	}
	tr, ok := http.DefaultTransport.(*http.Transport)
	if !ok || tr.MaxIdleConns != 100 || tr.MaxIdleConnsPerHost != 0 || tr.Proxy == nil {
		t.Errorf("http.DefaultTransport changed: %#v", http.DefaultTransport)
	}
	if http.DefaultClient.Transport != nil || http.DefaultClient.Timeout != 0 {
		t.Errorf("http.DefaultClient changed: %#v", http.DefaultClient)
	}
	for _, path := range []string{"/", "/debug/vars", "/debug/pprof/", "/metrics", "/debug/requests", "/debug/events"} {
		rec := httptest.NewRecorder()
		http.DefaultServeMux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		trace := path == "/debug/requests" || path == "/debug/events"
		if registered := rec.Code != http.StatusNotFound; registered != (trace && grpcTrace) {
			t.Errorf("GET %s on http.DefaultServeMux: %d (gRPC trace linked: %v)", path, rec.Code, grpcTrace)
		}
	}
}
