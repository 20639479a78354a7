package server

import (
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/gauntlet-eval/gauntlet/internal/benchmem"
)

// BenchmarkRunDetails reads get-run of a stored run of 100,000 results
// (100,000 tests, one repeat, in three cells; each with a transcript and
// a model call) over loopback, through the gzip middleware, compressed and
// not, and reports the body's size and the peak Go heap while answering
// (HeapInuse sampled every 5 ms; the client only counts the bytes, so the
// heap is the server's). The run is stored once, before the timer.
func BenchmarkRunDetails(b *testing.B) {
	const n = 100_000
	e := newStreamEnv(b, nil)
	seedStreamRun(b, e.runs, "big", n, 1)
	for _, gz := range []bool{false, true} {
		name := "identity"
		if gz {
			name = "gzip"
		}
		b.Run(name, func(b *testing.B) {
			runtime.GC()
			debug.FreeOSMemory()
			stop := benchmem.SampleHeapInuse()
			var size int64
			b.ResetTimer()
			for range b.N {
				req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/run/big", nil)
				req.Header.Set("Accept-Encoding", map[bool]string{true: "gzip", false: "identity"}[gz])
				resp, err := http.DefaultTransport.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				size, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d, %v", resp.StatusCode, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(stop(), "peak-heap-MiB")
			b.ReportMetric(float64(size)/(1<<20), "body-MiB")
		})
	}
}
